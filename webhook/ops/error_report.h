// One request answered with an error, counted (gpu_admission_request_errors_total{class,reason})
// and logged (rate limited per kind, Logger::request_error) in one call, so that the admission
// service and the server report every kind of error alike. Either sink may be null.
#pragma once

#include <string_view>
#include <utility>

#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"
#include "webhook/ops/request_errors.h"

namespace gpu_admission::webhook {

// `fields` returns the Json object of the line's own fields; it runs only for a line written.
template <typename Fields>
void report_request_error(Metrics* metrics, Logger* logger, RequestErrorKind kind, std::string_view reason,
                          Fields&& fields) noexcept {
  if (metrics != nullptr) metrics->count_request_error(kind);
  if (logger != nullptr) logger->request_error(kind, reason, std::forward<Fields>(fields));
}

}  // namespace gpu_admission::webhook
