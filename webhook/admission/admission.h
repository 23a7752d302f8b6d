// webhook/admission: the admission service behind /validate and /mutate, the AdmissionReview
// codec (admission_review.h) and the decision phase it shares with `check` (review_decision.h).
// It may include policy/ and ops/ (metrics, logging, the policy holder); never server/, io/ or
// cli/. HTTP-level concerns stay in the server (controller-runtime style): this turns an
// AdmissionReview body into the response body in three phases, each on one screen: read
// (parse, refuse ambiguous JSON, decode the envelope), decide (review_decision.cpp) and answer
// (the response, metrics and logs). Decoding uses simdjson; the response is written directly as
// JSON text. Never throws: an internal error answers allowed=false with code 500 (fail closed)
// and is logged and counted. Decisions with findings are logged by decision_log.h; every
// request answered with an error is counted and logged, rate limited (ops/error_report.h).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"
#include "webhook/admission/policy_review.h"
#include "webhook/admission/review_decision.h"
#include "webhook/ops/policy_holder.h"

namespace gpu_admission::webhook {

struct HttpReply {
  int status = 200;
  std::string body;
  const char* content_type = "application/json";  // a literal: no allocation per reply
};

class AdmissionService {
 public:
  struct Scratch;  // per-thread buffers and views, reused across requests
  AdmissionService(const PolicyHolder& policies, Metrics* metrics, Logger* logger)
      : policies_(policies), metrics_(metrics), logger_(logger) {}

  // `body` is the raw request body (already size-checked and of JSON content type). `padded`:
  // kBodyPadding readable bytes follow it, so it is decoded where it lies instead of copied.
  // `spare`: a string whose capacity the reply's body reuses (a caller answering many requests
  // hands back the previous reply's body, so that the common reply allocates nothing).
  // `received`: when the request was taken up, the start of its request_duration_seconds.
  HttpReply handle(Endpoint endpoint, std::string_view body, bool padded = false, std::string spare = {},
                   std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now()) const noexcept;
  static constexpr size_t kBodyPadding = 64;  // simdjson::SIMDJSON_PADDING (checked where decoded)

  // For tests: called after decoding and before evaluation, so a test can make evaluation throw
  // and check that the service fails closed. Set before serving; not synchronized.
  void set_evaluation_probe(std::function<void()> probe) { evaluation_probe_ = std::move(probe); }

  // Where pods' DRA claims are looked up (cluster state); nullptr: unresolved. Set before serving.
  void set_claim_resolver(const policy::ClaimResolver* claims) { facts_.claims = claims; }
  // Where pods' PodGroups are looked up (cluster state); nullptr: unresolved. Set before serving.
  void set_group_resolver(const policy::PodGroupResolver* groups) { facts_.groups = groups; }
  // Where namespaces' labels come from (cluster state); nullptr: unknown. Set before serving.
  void set_namespace_labels(const policy::NamespaceLabels* labels) { facts_.namespace_labels = labels; }
  // Where pods reserved by a claim being allocated come from; nullptr: nowhere (such an
  // allocation is refused). Set before serving.
  void set_pod_source(const policy::PodSource* pods) { facts_.pods = pods; }
  // Facts per review, with one deadline for all of a review's lookups (cluster state); when set,
  // it replaces the four above. Set before serving.
  void set_facts_provider(const policy::FactsProvider* provider) { facts_provider_ = provider; }
  // How /validate checks a ConfigMap labelled gpu-admission.io/policy: "true" (policy_review.h);
  // without one such ConfigMaps are allowed unchecked. Set before serving.
  void set_policy_checker(PolicyChecker checker) { policy_checker_ = std::move(checker); }

 private:
  struct Exchange;  // one request on its way through the phases
  HttpReply serve(Exchange& x) const;
  std::optional<ObjectError> decide(const policy::CompiledPolicy& policy, Exchange& x, Plan plan,
                                    const ReviewTarget& target, Scratch& s) const;
  std::optional<HttpReply> read(Exchange& x, const policy::CompiledPolicy* policy) const;
  HttpReply answer_mutate(Exchange& x) const;
  HttpReply answer_validate(Exchange& x) const;
  HttpReply answer_policy_configmap(Exchange& x) const;
  void report_error(const Exchange& x, RequestErrorKind kind, std::string_view reason) const;
  HttpReply reply_with(Exchange& x, std::string_view decision) const;
  // A 400 for an object of the request that cannot be read, counted and logged.
  HttpReply reply_unreadable(Exchange& x, const ObjectError& err) const;
  void count_request(const Exchange& x, std::string_view decision) const;
  std::string_view object_name(const Exchange& x) const;
  HttpReply internal_error(Exchange& x, const char* what) const noexcept;

  const PolicyHolder& policies_;
  Metrics* metrics_;
  Logger* logger_;
  std::function<void()> evaluation_probe_;
  policy::ExternalFacts facts_;
  const policy::FactsProvider* facts_provider_ = nullptr;
  PolicyChecker policy_checker_;
};

}  // namespace gpu_admission::webhook
