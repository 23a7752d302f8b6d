// The kinds of error a request can be answered with, as one table: the name that logs and
// gpu_admission_request_errors_total{class,reason} give each kind, its class (client: the caller
// sent something unusable, HTTP 4xx or an unreadable object answered allowed=false code 400;
// server: the webhook could not answer, HTTP 5xx or an evaluation error answered code 500) and
// the message of its log line. The alerts of the chart and the runbooks in docs/operations.md
// are written against these names.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace gpu_admission::webhook {

enum class RequestErrorKind : uint8_t {
  BadRequest,            // 400: not HTTP, not JSON, not an AdmissionReview
  NotFound,              // 404: a path the server does not serve
  MethodNotAllowed,      // 405
  PayloadTooLarge,       // 413: a body over --max-body-bytes
  UnsupportedMediaType,  // 415: not application/json
  HeadersTooLarge,       // 431
  OtherClientError,      // any other 4xx
  UnreadableObject,      // 200, allowed=false, code 400: request.object or oldObject cannot be read
  ServerBusy,            // 503: too many request bytes in flight
  EvaluationError,       // 200, allowed=false, code 500: evaluation failed (fail closed), or no policy
};

struct RequestErrorInfo {
  std::string_view reason;       // label and log "error" field: "payload_too_large"
  std::string_view error_class;  // "client" or "server"
  std::string_view message;      // the log line's msg
};

inline constexpr std::array<RequestErrorInfo, 10> kRequestErrors = {{
    {"bad_request", "client", "request refused: not an AdmissionReview"},
    {"not_found", "client", "request refused: unknown path"},
    {"method_not_allowed", "client", "request refused: wrong method"},
    {"payload_too_large", "client", "request refused: body too large"},
    {"unsupported_media_type", "client", "request refused: wrong content type"},
    {"headers_too_large", "client", "request refused: headers too large"},
    {"client_error", "client", "request refused"},
    {"unreadable_object", "client", "request refused: object cannot be read"},
    {"server_busy", "server", "request refused: server busy"},
    {"evaluation_error", "server", "request failed: evaluation error"},
}};
inline constexpr size_t kRequestErrorCount = kRequestErrors.size();

inline const RequestErrorInfo& info_of(RequestErrorKind error) { return kRequestErrors[static_cast<size_t>(error)]; }

// The kind of an HTTP error answer (4xx or 5xx) by its status code.
RequestErrorKind request_error_for_status(int status);

}  // namespace gpu_admission::webhook
