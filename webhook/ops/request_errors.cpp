// HTTP status codes to request error kinds (see request_errors.h).
#include "webhook/ops/request_errors.h"

#include <utility>

namespace gpu_admission::webhook {

RequestErrorKind request_error_for_status(int status) {
  static constexpr std::pair<int, RequestErrorKind> kByStatus[] = {
      {400, RequestErrorKind::BadRequest},           {404, RequestErrorKind::NotFound},
      {405, RequestErrorKind::MethodNotAllowed},     {413, RequestErrorKind::PayloadTooLarge},
      {415, RequestErrorKind::UnsupportedMediaType}, {431, RequestErrorKind::HeadersTooLarge},
      {503, RequestErrorKind::ServerBusy},
  };
  for (const auto& [code, error] : kByStatus)
    if (code == status) return error;
  return status >= 500 ? RequestErrorKind::EvaluationError : RequestErrorKind::OtherClientError;
}

}  // namespace gpu_admission::webhook
