#include "webhook/cli/offline.h"

#include <simdjson.h>

#include "policy/base/quoted_value.h"
#include "policy/dra/claim_decoder.h"
#include "policy/dra/pod_group.h"
#include "policy/evaluation/evaluator.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/config/template_finder.h"
#include "webhook/admission/review_decision.h"
#include "webhook/cluster/watch_decoder.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

std::string string_at(const Json& obj, const char* a, const char* b = nullptr) {
  if (!obj.is_object() || !obj.contains(a)) return "";
  const Json& v = obj[a];
  if (!b) return v.is_string() ? v.get<std::string>() : "";
  if (!v.is_object() || !v.contains(b) || !v[b].is_string()) return "";
  return v[b].get<std::string>();
}

constexpr const char* kConfigMapNote =
    "a ConfigMap is judged by no rule (/validate checks the policy one carrying the gpu-admission.io/policy label "
    "holds: lint it with `gpu-admission policy lint FILE`)";

bool fail(OfflineResult& r, std::string note) {
  r.status = OfflineResult::Status::Error;
  r.note = std::move(note);
  return false;
}

// Judges an AdmissionReview with the webhook's own decision phase (/validate).
void judge_review(const policy::CompiledPolicy& policy, const ManifestObject& manifest,
                  const policy::ExternalFacts& facts, OfflineResult& r) {
  ReviewReader reader;
  AdmissionRequest request;
  if (auto bad = reader.read(to_json_text(manifest.review), request, EagerViews{nullptr, nullptr, policy.gpu_env_vars()})) {
    fail(r, bad->message);
    return;
  }
  const ReviewTarget target = target_of(request, &policy);
  Plan plan = plan_for(Endpoint::Validate, request, target);
  if (plan == Plan::Allow) {
    r.status = OfflineResult::Status::Skipped;
    r.note = "/validate allows " + std::string(request.operation) + " of " + std::string(request.kind) +
             (request.sub_resource.empty() ? "" : "/" + std::string(request.sub_resource)) + " without judging it";
    return;
  }
  if (plan == Plan::CheckPolicy) {
    r.status = OfflineResult::Status::Skipped;
    r.note = kConfigMapNote;
    return;
  }
  ReviewScratch scratch;
  scratch.describe_gpus = true;
  if (auto err = decide_review(policy, Endpoint::Validate, plan, request, target, scratch, r.decision, facts))
    fail(r, err->message());
}

// Applies the whole object's patch; a patch that does not apply is our bug: say so.
void apply_patch(const Json& object, OfflineResult& r) {
  r.patch = Json::parse(policy::patch_to_json(r.decision.patch));
  try {
    r.mutated = r.decision.patch.empty() ? object : object.patch(r.patch);
  } catch (const std::exception& e) {
    fail(r, std::string("internal error: the mutation patch does not apply: ") + e.what());
  }
}

// The note for an object whose apiVersion (or its absence) is not one that is judged.
std::string unjudged_version(std::string_view api_version, std::string_view why) {
  return (api_version.empty() ? std::string("no apiVersion") : policy::bounded(api_version)) + std::string(why);
}

// Why an object of a file is not judged, when it is not: empty when it is.
std::string skipped_because(const OfflineResult& r, const ReviewTarget& target) {
  policy::ClaimKind claim_kind;
  if (policy::is_claim_kind(r.kind, &claim_kind) && !policy::claim_api_version_supported(r.api_version))
    return unjudged_version(r.api_version,
                            " is not served by Kubernetes 1.34+ (resource.k8s.io/v1, v1beta2 and v1beta1 are judged)");
  if (target.what == ReviewTarget::What::PodGroup && !policy::pod_group_api_version_supported(r.api_version))
    return unjudged_version(r.api_version,
                            " serves no PodGroups (scheduling.k8s.io/v1beta1, v1alpha3 and v1alpha2 are judged)");
  if (target.what == ReviewTarget::What::ConfigMap) return kConfigMapNote;
  if (target.what != ReviewTarget::What::Other) return "";
  return r.kind.empty() ? "no kind: not a Kubernetes object"
                        : policy::bounded(r.kind) + " is not a Pod or a workload with a pod template";
}

// One result per template of a kind judged by template paths, each about its template.
void keep_templates(std::vector<ReviewScratch::TemplateDecision>& decisions, OfflineResult& r) {
  for (size_t i = 0; i < decisions.size(); ++i) {
    OfflineResult t;
    t.api_version = r.api_version;
    t.kind = r.kind;
    t.uid = r.uid;
    t.namespace_defaulted = r.namespace_defaulted;
    t.namespace_name = r.namespace_name;
    t.name = r.name;
    t.source = r.source;
    t.template_path = decisions[i].field;
    t.repeat = i > 0;
    t.decision = std::move(decisions[i].decision);
    t.patch = Json::parse(policy::patch_to_json(t.decision.patch));
    r.templates.push_back(std::move(t));
  }
}

// An object of a file, judged as the webhook judges its CREATE: the request the API server would
// send, through the same decision phase (decide_review). A Pod passes /mutate (the API server's
// chain: mutated, then judged as mutated) unless `mutate_pods` is false; everything else /validate.
void judge_object(const policy::CompiledPolicy& policy, const Json& object, bool mutate_pods,
                  const policy::ExternalFacts& facts, OfflineResult& r) {
  const simdjson::padded_string text(to_json_text(object));
  const std::string group(policy::api_group_of(r.api_version));
  AdmissionRequest request;
  request.kind_group = group;
  request.kind = r.kind;
  request.namespace_name = r.namespace_name;
  request.name = r.name;
  request.operation = "CREATE";
  request.has_object = true;
  request.object = std::string_view(text.data(), text.size());
  const ReviewTarget target = target_of(request, &policy);
  if (std::string why = skipped_because(r, target); !why.empty()) {
    r.status = OfflineResult::Status::Skipped;
    r.note = std::move(why);
    return;
  }
  const bool pod = target.what == ReviewTarget::What::Workload && target.workload == policy::WorkloadKind::Pod;
  const Endpoint endpoint = pod && mutate_pods ? Endpoint::Mutate : Endpoint::Validate;
  ReviewScratch scratch;
  scratch.describe_gpus = true;
  std::vector<ReviewScratch::TemplateDecision> templates;
  scratch.template_decisions = &templates;
  // Objects read from files nest as deep as the API server stores them (kMaxObjectDepth).
  if (cluster::allow_stored_depth(scratch.object_dom) != simdjson::SUCCESS) {
    fail(r, "out of memory for the JSON parser");
    return;
  }
  if (auto err = decide_review(policy, endpoint, plan_for(endpoint, request, target), request, target, scratch,
                               r.decision, facts)) {
    fail(r, (err->error.field.empty() ? std::string() : err->error.field + ": ") + err->error.message);
    return;
  }
  if (target.what == ReviewTarget::What::Templates) {
    if (templates.empty()) {
      r.status = OfflineResult::Status::Skipped;
      r.note = "no pod template found (" + target.templates->kind + " templates are at";
      for (const auto& path : target.templates->templates) r.note += " " + path.text;
      r.note += ")";
      return;
    }
    keep_templates(templates, r);
  }
  apply_patch(object, r);
  for (auto& t : r.templates) t.mutated = r.mutated;
}

}  // namespace

std::vector<OfflineResult> split_templates(OfflineResult whole) {
  if (whole.templates.empty() || whole.status != OfflineResult::Status::Evaluated) {
    whole.templates.clear();
    return {std::move(whole)};
  }
  return std::move(whole.templates);
}

OfflineResult evaluate_offline(const policy::CompiledPolicy& policy, const ManifestObject& manifest,
                               const std::string& default_namespace, bool mutate_pods,
                               const policy::ExternalFacts& facts) {
  OfflineResult r;
  r.source = manifest.source;
  const Json& object = manifest.object;
  r.api_version = string_at(object, "apiVersion");
  r.kind = string_at(object, "kind");
  r.name = string_at(object, "metadata", "name");
  if (r.name.empty()) r.name = string_at(object, "metadata", "generateName");
  r.uid = string_at(object, "metadata", "uid");
  r.namespace_name = !manifest.review_namespace.empty() ? manifest.review_namespace
                                                         : string_at(object, "metadata", "namespace");
  if (r.namespace_name.empty()) {
    r.namespace_name = default_namespace;
    r.namespace_defaulted = true;
  }

  if (manifest.from_review) {
    judge_review(policy, manifest, facts, r);
    r.mutated = object;  // /validate changes nothing
    return r;
  }

  if (!object.is_object()) {
    fail(r, "not an object");
    return r;
  }
  judge_object(policy, object, mutate_pods, facts, r);
  if (r.status == OfflineResult::Status::Evaluated && r.mutated.is_null()) r.mutated = object;
  return r;
}

}  // namespace gpu_admission::webhook
