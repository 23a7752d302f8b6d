// The admission endpoints (controller-runtime style): HTTP-level concerns stay in the server;
// this turns an AdmissionReview body into the response body. Decoding uses simdjson; the
// response is written directly as JSON text. Never throws: an internal error answers
// allowed=false with code 500 (fail closed) and is logged and counted.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "webhook/logger.h"
#include "webhook/metrics.h"
#include "webhook/policy_holder.h"

namespace gpu_admission::webhook {

enum class Endpoint { Validate, Mutate };

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class AdmissionService {
 public:
  AdmissionService(const PolicyHolder& policies, Metrics* metrics, Logger* logger)
      : policies_(policies), metrics_(metrics), logger_(logger) {}

  // `body` is the raw request body (already size-checked and of JSON content type).
  HttpReply handle(Endpoint endpoint, std::string_view body) const noexcept;

  // For tests: called after decoding and before evaluation, so a test can make evaluation throw
  // and check that the service fails closed. Set before serving; not synchronized.
  void set_evaluation_probe(std::function<void()> probe) { evaluation_probe_ = std::move(probe); }

 private:
  template <typename Finish>
  HttpReply internal_error(std::string_view uid, const char* what, Finish& finish) const noexcept;

  const PolicyHolder& policies_;
  Metrics* metrics_;
  Logger* logger_;
  std::function<void()> evaluation_probe_;
};

}  // namespace gpu_admission::webhook
