#include "webhook/admission.h"

#include <chrono>
#include <exception>

#include <simdjson.h>

#include "policy/evaluator.h"
#include "policy/pod_decoder.h"
#include "webhook/admission_review.h"

namespace gpu_admission::webhook {
namespace {

using policy::Action;
using policy::Decision;
using policy::PodView;

// Per-thread scratch reused across requests: the parser's buffers and the views' vectors.
struct Scratch {
  simdjson::dom::parser parser;
  PodView pod;
  PodView old_pod;
  Decision decision;
  Decision old_decision;
};

Scratch& scratch() {
  thread_local Scratch s;
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

std::string join_messages(const Decision& d, Action action) {
  std::string out;
  for (const auto& f : d.findings) {
    if (f.action != action) continue;
    if (!out.empty()) out += "; ";
    out += '[';
    out += policy::name_of(f.rule);
    out += "] ";
    out += f.message;
  }
  return out;
}

// What a request asks of the policy engine.
enum class Plan { Allow, EvaluateCreate, EvaluateUpdate };

Plan plan_for(Endpoint endpoint, const AdmissionRequest& req, std::optional<policy::WorkloadKind> kind) {
  if (!kind) return Plan::Allow;  // not a pod or workload: nothing to say
  const bool is_pod = *kind == policy::WorkloadKind::Pod;
  if (endpoint == Endpoint::Mutate) {
    // Mutations run on CREATE of Pods only.
    return is_pod && req.operation == "CREATE" && req.sub_resource.empty() ? Plan::EvaluateCreate : Plan::Allow;
  }
  if (is_pod && !req.sub_resource.empty() && req.sub_resource != "ephemeralcontainers") return Plan::Allow;
  if (req.operation == "CREATE") return Plan::EvaluateCreate;
  if (req.operation == "UPDATE") return Plan::EvaluateUpdate;
  return Plan::Allow;  // DELETE, CONNECT
}

}  // namespace

HttpReply AdmissionService::handle(Endpoint endpoint, std::string_view body) const noexcept {
  const auto started = std::chrono::steady_clock::now();
  std::string_view uid;
  std::string_view operation = "UNKNOWN", kind_name = "Unknown";
  auto finish = [&](std::string_view decision) {
    if (metrics_) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      metrics_->observe_request(endpoint_name(endpoint), operation, kind_name, decision, seconds);
    }
  };
  try {
    Scratch& s = scratch();
    simdjson::dom::element root;
    if (auto err = s.parser.parse(body.data(), body.size()).get(root)) {
      if (metrics_) metrics_->count_http_error(400);
      finish("error");
      return http_error(400, std::string("invalid JSON: ") + simdjson::error_message(err));
    }
    if (auto dup = policy::find_duplicate_keys(root)) {
      if (metrics_) metrics_->count_http_error(400);
      finish("error");
      return http_error(400, "ambiguous JSON: " + (dup->field.empty() ? std::string() : dup->field + ": ") + dup->message);
    }
    AdmissionRequest req;
    if (auto err = decode_admission_request(root, req)) {
      if (metrics_) metrics_->count_http_error(err->http_status);
      finish("error");
      return http_error(err->http_status, err->message);
    }
    uid = req.uid;
    operation = req.operation;
    if (!req.kind.empty()) kind_name = req.kind;

    AdmissionResponse response;
    response.uid = req.uid;
    HttpReply reply;

    auto kind = policy::workload_kind_from(req.kind);
    Plan plan = plan_for(endpoint, req, kind);
    policy::PolicyPtr policy = policies_.get();
    if (plan == Plan::Allow || !policy) {
      if (!policy && plan != Plan::Allow) {
        // No policy loaded (cannot happen after start-up): fail closed.
        response.allowed = false;
        response.code = 500;
        response.reason = "InternalError";
        response.message = "gpu-admission has no policy loaded";
      }
      reply.body = encode_admission_response(response);
      finish(response.allowed ? "allowed" : "error");
      return reply;
    }

    auto bad_object = [&](std::string_view which, const policy::DecodeError& err) {
      response.allowed = false;
      response.code = 400;
      response.reason = "BadRequest";
      response.message = "cannot read " + std::string(which);
      if (!err.field.empty()) response.message += " field " + err.field;
      response.message += ": " + err.message;
      reply.body = encode_admission_response(response);
      finish("error");
      return reply;
    };
    if (!req.has_object) {
      policy::DecodeError err{"", "missing"};
      return bad_object("request.object", err);
    }
    if (auto err = policy::decode_pod_as(req.object, *kind, s.pod, false)) return bad_object("request.object", *err);

    policy::EvalOptions options;
    options.namespace_name = req.namespace_name;
    options.username = req.username;
    // Pods are mutated on CREATE; workload templates are validated as the pods they will create.
    options.mutate = plan == Plan::EvaluateCreate || *kind != policy::WorkloadKind::Pod;
    Decision& decision = s.decision;
    if (evaluation_probe_) evaluation_probe_();
    policy::evaluate(*policy, s.pod, options, decision);

    if (plan == Plan::EvaluateUpdate && req.has_old_object && !decision.exempt) {
      // An UPDATE is refused only for what it adds: findings the old object already had stay.
      if (!policy::decode_pod_as(req.old_object, *kind, s.old_pod, false)) {
        policy::evaluate(*policy, s.old_pod, options, s.old_decision);
        policy::keep_new_findings(decision, s.old_decision);
      }
    }

    std::string_view name = s.pod.name.empty() ? s.pod.generate_name : s.pod.name;
    if (name.empty()) name = req.name;

    if (decision.exempt) {
      if (metrics_) metrics_->count_exemption(decision.exempt_by);
      reply.body = encode_admission_response(response);
      finish("exempt");
      return reply;
    }

    if (endpoint == Endpoint::Mutate) {
      response.patch = &decision.patch;
      if (metrics_) {
        for (size_t i = 0; i < policy::kMutationCount; ++i)
          if (decision.mutated[i]) metrics_->count_mutation(static_cast<policy::MutationId>(i));
      }
      if (logger_ && !decision.patch.empty() && logger_->enabled(LogLevel::Debug)) {
        logger_->debug("patched", {{"uid", std::string(req.uid)}, {"namespace", std::string(req.namespace_name)},
                                   {"name", std::string(name)}, {"kind", std::string(req.kind)},
                                   {"operation", std::string(req.operation)},
                                   {"patch", policy::patch_to_json(decision.patch)}});
      }
      reply.body = encode_admission_response(response);
      finish(decision.patch.empty() ? "allowed" : "patched");
      return reply;
    }

    // Validate.
    response.allowed = decision.allowed;
    if (!decision.allowed) {
      response.code = 403;
      response.reason = "Forbidden";
      response.message = join_messages(decision, Action::Deny);
    }
    for (const auto& f : decision.findings) {
      if (metrics_) metrics_->count_rule_result(f.rule, f.action);
      if (f.action == Action::Warn) {
        std::string text = "[";
        text += policy::name_of(f.rule);
        text += "] ";
        text += f.message;
        response.warnings.push_back(warning_text(text));
      } else if (f.action == Action::Audit) {
        std::string key(policy::name_of(f.rule));
        bool merged = false;
        for (auto& [k, v] : response.audit_annotations) {
          if (k == key) {
            v += "; " + f.message;
            merged = true;
          }
        }
        if (!merged) response.audit_annotations.emplace_back(std::move(key), f.message);
      }
    }
    if (logger_ && !decision.findings.empty()) {
      Json rules = Json::array();
      for (const auto& f : decision.findings) {
        rules.push_back({{"rule", std::string(policy::name_of(f.rule))}, {"action", std::string(policy::name_of(f.action))},
                         {"field", f.field}});
      }
      logger_->log(decision.allowed ? LogLevel::Info : LogLevel::Warn, decision.allowed ? "admitted with findings" : "denied",
                   {{"uid", std::string(req.uid)},
                    {"namespace", std::string(req.namespace_name)},
                    {"name", std::string(name)},
                    {"kind", std::string(req.kind)},
                    {"operation", std::string(req.operation)},
                    {"dryRun", req.dry_run},
                    {"rules", rules}});
    }
    reply.body = encode_admission_response(response);
    finish(!decision.allowed ? "denied" : decision.has(Action::Warn) ? "warned" : "allowed");
    return reply;
  } catch (const std::exception& e) {
    return internal_error(uid, e.what(), finish);
  } catch (...) {
    return internal_error(uid, "unknown exception", finish);
  }
}

template <typename Finish>
HttpReply AdmissionService::internal_error(std::string_view uid, const char* what, Finish& finish) const noexcept {
  // Fail closed: the request is refused with code 500, and the server keeps serving.
  try {
    if (metrics_) metrics_->count_internal_error();
    if (logger_) logger_->error("internal error while evaluating", {{"uid", std::string(uid)}, {"error", what}});
    AdmissionResponse response;
    response.uid = uid;
    response.allowed = false;
    response.code = 500;
    response.reason = "InternalError";
    response.message = std::string("gpu-admission internal error: ") + what;
    HttpReply reply;
    reply.body = encode_admission_response(response);
    finish("error");
    return reply;
  } catch (...) {
    HttpReply reply;
    reply.status = 500;
    return reply;
  }
}

}  // namespace gpu_admission::webhook
