#include "webhook/admission/admission.h"

#include <exception>

#include "policy/decoding/pod_decoder.h"
#include "webhook/admission/admission_review.h"
#include "webhook/admission/decision_log.h"
#include "webhook/io/clock.h"
#include "webhook/ops/error_report.h"

namespace gpu_admission::webhook {
namespace {

using policy::Action;
using policy::Decision;

}  // namespace

// Per-thread scratch reused across requests: the parser's buffers and the views' vectors.
struct AdmissionService::Scratch {
  ReviewReader reader;
  ReviewScratch review;
  Decision decision;
};

namespace {

AdmissionService::Scratch& scratch() {
  thread_local AdmissionService::Scratch s;
  return s;
}

std::string_view endpoint_name(Endpoint e) { return e == Endpoint::Validate ? "validate" : "mutate"; }

HttpReply http_error(int status, std::string message) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = "text/plain; charset=utf-8";
  reply.body = std::move(message);
  reply.body += '\n';
  return reply;
}

std::string rule_message(const policy::Finding& f) {
  std::string text = "[";
  text += policy::name_of(f.rule);
  text += "] ";
  text += f.message;
  return text;
}

std::string join_messages(const Decision& d, Action action) {
  std::string out;
  for (const auto& f : d.findings) {
    if (f.action != action || f.excepted()) continue;
    if (!out.empty()) out += "; ";
    out += rule_message(f);
  }
  return out;
}

void add_audit_annotation(AdmissionResponse& response, std::string key, const std::string& message) {
  for (auto& [k, v] : response.audit_annotations) {
    if (k != key) continue;
    v += "; " + message;
    return;
  }
  response.audit_annotations.emplace_back(std::move(key), message);
}

// An audit finding under its rule ID; an excepted one under excepted-<rule ID>, naming the
// exception and the action it would have had.
void add_audit_annotation(AdmissionResponse& response, const policy::Finding& f) {
  if (!f.excepted()) return add_audit_annotation(response, std::string(policy::name_of(f.rule)), f.message);
  add_audit_annotation(response, "excepted-" + std::string(policy::name_of(f.rule)),
                       "exception " + std::string(f.exception) + " (would " + std::string(policy::name_of(f.action)) +
                           "): " + f.message);
}

// Under warn and audit: what /mutate would have done, as one audit annotation.
void add_withheld_annotation(AdmissionResponse& response, const Decision& decision) {
  std::string text = "not applied (enforcement " + std::string(policy::name_of(decision.mode)) + "):";
  for (size_t i = 0; i < policy::kMutationCount; ++i)
    if (decision.mutated[i]) text += " " + std::string(policy::name_of(static_cast<policy::MutationId>(i)));
  for (const auto& notice : decision.notices) text += "; would have " + notice;
  add_audit_annotation(response, "withheld-mutations", text);
}

// What the user is told of a finding under warn: what enforcement would do with it.
std::string warning_of(const policy::Finding& f) {
  if (!f.would_deny()) return rule_message(f);
  return "[" + std::string(policy::name_of(f.rule)) + "] would deny: " + f.message;
}

// The requests metric's decision: what was done, observing included.
std::string_view validate_outcome(const Decision& d) {
  if (!d.allowed) return "denied";
  if (d.has(Action::Warn)) return "warned";
  return d.has(Action::Audit) ? "audited" : "allowed";
}

}  // namespace

static_assert(AdmissionService::kBodyPadding >= simdjson::SIMDJSON_PADDING);

// One request on its way through the phases: what was read, and what is said back.
struct AdmissionService::Exchange {
  Endpoint endpoint = Endpoint::Validate;
  std::string_view body;
  bool body_padded = false;
  std::string spare;  // capacity for the reply's body
  std::chrono::steady_clock::time_point started;
  std::string_view operation = "UNKNOWN", kind_name = "Unknown";
  AdmissionRequest request;
  AdmissionResponse response;
  Decision* decision = nullptr;
  TenantLabel tenant;  // of the decision, once there is one ("none" until then)
};

HttpReply AdmissionService::handle(Endpoint endpoint, std::string_view body, bool padded, std::string spare,
                                  std::chrono::steady_clock::time_point received) const noexcept {
  Exchange x;
  x.started = received;
  x.spare = std::move(spare);
  x.endpoint = endpoint;
  x.body = body;
  x.body_padded = padded;
  try {
    return serve(x);
  } catch (const std::exception& e) {
    return internal_error(x, e.what());
  } catch (...) {
    return internal_error(x, "unknown exception");
  }
}

HttpReply AdmissionService::serve(Exchange& x) const {
  // The policy first: the envelope's pass decodes the object for it (its spec.gpuEnvVars).
  const policy::PolicyPtr& policy = policies_.snapshot();
  if (auto refused = read(x, policy.get())) return std::move(*refused);
  x.response.uid = x.request.uid;

  // Decide.
  const ReviewTarget target = target_of(x.request, policy.get());
  Plan plan = plan_for(x.endpoint, x.request, target);
  if (plan == Plan::Allow) return reply_with(x, "allowed");
  if (plan == Plan::CheckPolicy) return answer_policy_configmap(x);
  if (!policy) {
    // No policy loaded (cannot happen after start-up): fail closed.
    x.response.allowed = false;
    x.response.code = 500;
    x.response.reason = "InternalError";
    x.response.message = "gpu-admission has no policy loaded";
    report_error(x, RequestErrorKind::EvaluationError, x.response.message);
    return reply_with(x, "error");
  }
  Scratch& s = scratch();
  if (auto err = decide(*policy, x, plan, target, s)) return reply_unreadable(x, *err);
  x.decision = &s.decision;
  if (const policy::Tenant* tenant = s.decision.tenant) x.tenant = {tenant->index, tenant->name};

  // Answer.
  if (s.decision.exempt) {
    if (metrics_) metrics_->count_exemption(s.decision.exempt_by);
    return reply_with(x, "exempt");
  }
  return x.endpoint == Endpoint::Mutate ? answer_mutate(x) : answer_validate(x);
}

// Decide: decode and evaluate, with the facts of this review (one lookup deadline for all of it).
std::optional<ObjectError> AdmissionService::decide(const policy::CompiledPolicy& policy, Exchange& x, Plan plan,
                                                    const ReviewTarget& target, Scratch& s) const {
  struct Decide final : policy::FactsProvider::Use {
    const AdmissionService& service;
    const policy::CompiledPolicy& policy;
    Exchange& x;
    Plan plan;
    const ReviewTarget& target;
    Scratch& s;
    std::optional<ObjectError> error;
    Decide(const AdmissionService& service, const policy::CompiledPolicy& policy, Exchange& x, Plan plan,
           const ReviewTarget& target, Scratch& s)
        : service(service), policy(policy), x(x), plan(plan), target(target), s(s) {}
    void operator()(const policy::ExternalFacts& facts) override {
      policy::ExternalFacts now_facts = facts;
      now_facts.now = unix_now();  // for exceptions that expire
      error = decide_review(policy, x.endpoint, plan, x.request, target, s.review, s.decision, now_facts,
                            service.evaluation_probe_);
    }
  } decide_with(*this, policy, x, plan, target, s);
  if (facts_provider_) facts_provider_->review(decide_with);
  else decide_with(facts_);
  return std::move(decide_with.error);
}

// Read: parse the body, refuse ambiguous JSON, decode the envelope. A reply when refused.
std::optional<HttpReply> AdmissionService::read(Exchange& x, const policy::CompiledPolicy* policy) const {
  Scratch& s = scratch();
  s.review.begin();  // nothing of the previous request (its body is gone) survives into this one
  std::optional<HttpReply> refused;
  EagerViews eager{&s.review.pod, &s.review.old_pod, {}};
  if (policy) eager.policy_env_vars = policy->gpu_env_vars();
  const std::optional<RequestError> bad = s.reader.read(x.body, x.request, eager, x.body_padded);
  if (bad) refused = http_error(bad->http_status, bad->message);
  if (refused) {
    if (metrics_) metrics_->count_http_error(refused->status);
    report_error(x, request_error_for_status(refused->status), bad->message);
    count_request(x, "error");
    return refused;
  }
  x.operation = x.request.operation;
  if (!x.request.kind.empty()) x.kind_name = x.request.kind;
  return std::nullopt;
}

HttpReply AdmissionService::answer_mutate(Exchange& x) const {
  const Decision& decision = *x.decision;
  x.response.patch = &decision.patch;
  const bool withheld = !decision.withheld_patch.empty();
  if (withheld) {
    // Nothing changes while the tenant observes; under warn the user hears what would have.
    add_withheld_annotation(x.response, decision);
    if (decision.mode == policy::Enforcement::Warn)
      for (const auto& change : policy::withheld_changes(decision)) x.response.warnings.push_back(warning_text(change));
  } else {
    for (const auto& notice : decision.notices) x.response.warnings.push_back(warning_text(notice));
  }
  if (metrics_) {
    for (size_t i = 0; i < policy::kMutationCount; ++i) {
      if (!decision.mutated[i]) continue;
      const auto mutation = static_cast<policy::MutationId>(i);
      if (withheld) metrics_->count_mutation_withheld(mutation, x.tenant);
      else metrics_->count_mutation(mutation);
    }
  }
  if (logger_ && withheld) {
    // What would have been patched, for the operator deciding to enforce.
    Json fields = request_log_fields(x.request, object_name(x));
    fields["tenant"] = decision.tenant ? decision.tenant->name : "none";
    fields["mode"] = policy::name_of(decision.mode);
    fields["patch"] = policy::patch_to_json(decision.withheld_patch);
    if (!decision.notices.empty()) fields["notices"] = decision.notices;
    logger_->info("mutations withheld", fields);
  } else if (logger_ && !decision.patch.empty() && logger_->enabled(LogLevel::Debug)) {
    Json fields = request_log_fields(x.request, object_name(x));
    fields["patch"] = policy::patch_to_json(decision.patch);
    logger_->debug("patched", fields);
  }
  return reply_with(x, decision.patch.empty() ? "allowed" : "patched");
}

HttpReply AdmissionService::answer_validate(Exchange& x) const {
  const Decision& decision = *x.decision;
  AdmissionResponse& response = x.response;
  response.allowed = decision.allowed;
  if (!decision.allowed) {
    response.code = 403;
    response.reason = "Forbidden";
    response.message = join_messages(decision, Action::Deny);
    if (!decision.commit_point.empty()) {
      // The old object's findings were not excused: say why, or the user wonders what changed.
      response.message += " (judged in full: this update ";
      response.message += decision.commit_point;
      response.message += ")";
    }
  }
  for (const auto& f : decision.findings) {
    if (metrics_) {
      if (f.excepted()) metrics_->exception_applied(f.exception, policy::name_of(f.rule));
      else metrics_->count_rule_result(f.rule, f.enforced, x.tenant, decision.mode);
    }
    if (f.excepted()) add_audit_annotation(response, f);
    else if (f.action == Action::Warn) response.warnings.push_back(warning_text(warning_of(f)));
    else if (f.action == Action::Audit) add_audit_annotation(response, f);
  }
  if (logger_ && !decision.findings.empty()) log_decision(*logger_, x.request, object_name(x), decision);
  return reply_with(x, validate_outcome(decision));
}

// A ConfigMap on /validate: the policy one carrying the policy label holds is checked as `policy
// lint` checks it; any other is allowed untouched.
HttpReply AdmissionService::reply_unreadable(Exchange& x, const ObjectError& err) const {
  x.response.allowed = false;
  x.response.code = 400;
  x.response.reason = "BadRequest";
  x.response.message = err.message();
  report_error(x, RequestErrorKind::UnreadableObject, x.response.message);
  return reply_with(x, "error");
}

HttpReply AdmissionService::answer_policy_configmap(Exchange& x) const {
  Scratch& s = scratch();
  bool labelled = false;
  std::string_view name;
  std::optional<ObjectError> err;
  if (!x.request.has_object) err = ObjectError{"request.object", {"", "missing"}};
  else err = read_policy_label(s.review.object_dom, x.request.object, labelled, name);
  if (err) return reply_unreadable(x, *err);
  s.review.object_name = name;
  if (!labelled || !policy_checker_) return reply_with(x, "allowed");
  const PolicyCheck check = policy_checker_(x.request.object);
  answer_policy_check(check, x.request.namespace_name, object_name(x), x.response);
  if (logger_) {
    Json fields = request_log_fields(x.request, object_name(x));
    fields["key"] = check.key;
    if (!check.errors.empty()) fields["errors"] = check.errors;
    if (!check.warnings.empty()) fields["warnings"] = check.warnings;
    if (!check.errors.empty()) logger_->warn("policy ConfigMap refused: its policy is invalid", fields);
    else logger_->info("policy ConfigMap checked: its policy is valid", fields);
  }
  if (!check.errors.empty()) return reply_with(x, "denied");
  return reply_with(x, check.warnings.empty() ? "allowed" : "warned");
}

// A request answered with an error: counted and logged (rate limited per kind) with what is known
// of the request by then.
void AdmissionService::report_error(const Exchange& x, RequestErrorKind kind, std::string_view reason) const {
  report_request_error(metrics_, logger_, kind, reason, [&] {
    Json fields = request_log_fields(x.request, object_name(x));
    fields["endpoint"] = endpoint_name(x.endpoint);
    return fields;
  });
}

void AdmissionService::count_request(const Exchange& x, std::string_view decision) const {
  if (!metrics_) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - x.started).count();
  metrics_->observe_request(endpoint_name(x.endpoint), x.operation, x.kind_name, decision, seconds, x.tenant,
                            x.request.dry_run);
}

// Encodes the AdmissionReview response and counts the request under `decision`.
HttpReply AdmissionService::reply_with(Exchange& x, std::string_view decision) const {
  HttpReply reply;
  reply.body = std::move(x.spare);
  encode_admission_response(x.response, reply.body);
  count_request(x, decision);
  return reply;
}

// The object's name for logs: what this request's object was decoded as (metadata.name, else
// generateName), else the request's name.
std::string_view AdmissionService::object_name(const Exchange& x) const {
  const std::string_view name = scratch().review.object_name;
  return name.empty() ? x.request.name : name;
}

HttpReply AdmissionService::internal_error(Exchange& x, const char* what) const noexcept {
  // Fail closed: the request is refused with code 500, and the server keeps serving.
  try {
    if (metrics_) metrics_->count_internal_error();
    report_error(x, RequestErrorKind::EvaluationError, std::string("internal error: ") + what);
    x.response = AdmissionResponse{};
    x.response.uid = x.request.uid;
    x.response.allowed = false;
    x.response.code = 500;
    x.response.reason = "InternalError";
    x.response.message = std::string("gpu-admission internal error: ") + what;
    return reply_with(x, "error");
  } catch (...) {
    HttpReply reply;
    reply.status = 500;
    return reply;
  }
}

}  // namespace gpu_admission::webhook
