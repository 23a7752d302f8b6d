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

// Parses an object's JSON text with the depth the API server stores: objects read from files nest
// that deep (kMaxObjectDepth).
simdjson::error_code reread(simdjson::dom::parser& parser, const std::string& text, simdjson::dom::element& root) {
  if (auto err = cluster::allow_stored_depth(parser)) return err;
  return parser.parse(text).get(root);
}

// Judges an AdmissionReview with the webhook's own decision phase (/validate).
void judge_review(const policy::CompiledPolicy& policy, const ManifestObject& manifest,
                  const policy::ExternalFacts& facts, OfflineResult& r) {
  ReviewReader reader;
  AdmissionRequest request;
  if (auto bad = reader.read(to_json_text(manifest.review), request, EagerViews{nullptr, nullptr, policy.gpu_env_vars()})) {
    r.status = OfflineResult::Status::Error;
    r.note = bad->message;
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
  ReviewScratch scratch;
  scratch.describe_gpus = true;
  if (auto err = decide_review(policy, Endpoint::Validate, plan, request, target, scratch, r.decision, facts)) {
    r.status = OfflineResult::Status::Error;
    r.note = err->message();
  }
}

// A ResourceClaim or ResourceClaimTemplate, judged on its own.
void judge_claim(const policy::CompiledPolicy& policy, const Json& object, const policy::ExternalFacts& facts,
                 OfflineResult& r) {
  const std::string api_version = string_at(object, "apiVersion");
  if (!policy::claim_api_version_supported(api_version)) {
    r.status = OfflineResult::Status::Skipped;
    r.note = (api_version.empty() ? std::string("no apiVersion") : policy::bounded(api_version)) +
             " is not served by Kubernetes 1.34+ (resource.k8s.io/v1, v1beta2 and v1beta1 are judged)";
    return;
  }
  simdjson::dom::parser parser;
  std::string text = to_json_text(object);
  simdjson::dom::element root;
  policy::ClaimView claim;
  if (auto err = reread(parser, text, root)) {
    r.status = OfflineResult::Status::Error;
    r.note = std::string("cannot re-read the object: ") + simdjson::error_message(err);
    return;
  }
  if (auto err = policy::decode_claim(root, claim)) {
    r.status = OfflineResult::Status::Error;
    r.note = (err->field.empty() ? std::string() : err->field + ": ") + err->message;
    return;
  }
  policy::EvalOptions options;
  options.namespace_name = r.namespace_name;
  options.set_facts(facts);
  options.describe_gpus = true;
  policy::evaluate_claim(policy, claim, options, r.decision);
  r.mutated = object;
}

// A PodGroup (scheduling.k8s.io), judged on its own: its claims as each of its pods has them.
void judge_pod_group(const policy::CompiledPolicy& policy, const Json& object, const policy::ExternalFacts& facts,
                     OfflineResult& r) {
  const std::string api_version = string_at(object, "apiVersion");
  if (!policy::pod_group_api_version_supported(api_version)) {
    r.status = OfflineResult::Status::Skipped;
    r.note = (api_version.empty() ? std::string("no apiVersion") : policy::bounded(api_version)) +
             " serves no PodGroups (scheduling.k8s.io/v1beta1, v1alpha3 and v1alpha2 are judged)";
    return;
  }
  simdjson::dom::parser parser;
  std::string text = to_json_text(object);
  simdjson::dom::element root;
  policy::PodGroupView group;
  if (auto err = reread(parser, text, root)) {
    r.status = OfflineResult::Status::Error;
    r.note = std::string("cannot re-read the object: ") + simdjson::error_message(err);
    return;
  }
  if (auto err = policy::decode_pod_group(root, group)) {
    r.status = OfflineResult::Status::Error;
    r.note = (err->field.empty() ? std::string() : err->field + ": ") + err->message;
    return;
  }
  policy::EvalOptions options;
  options.namespace_name = r.namespace_name;
  options.set_facts(facts);
  options.describe_gpus = true;
  policy::evaluate_pod_group(policy, group, options, r.decision);
  r.mutated = object;
}

bool fail(OfflineResult& r, std::string note) {
  r.status = OfflineResult::Status::Error;
  r.note = std::move(note);
  return false;
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

// Evaluates every template of `def` in `root` into `r.templates` and merges them into `r`.
bool evaluate_templates(const policy::CompiledPolicy& policy, const policy::WorkloadKindDef& def,
                        const std::string& text, simdjson::dom::element root, const policy::EvalOptions& options,
                        OfflineResult& r) {
  std::vector<policy::TemplateMatch> matches;
  if (auto err = policy::find_templates(root, def, matches)) return fail(r, err->field + ": " + err->message);
  policy::PodDocument identity_doc, pod_doc;
  policy::ObjectIdentity identity;
  if (auto err = policy::decode_identity(text, false, identity, identity_doc))
    return fail(r, (err->field.empty() ? std::string() : err->field + ": ") + err->message);
  policy::PodView pod;
  for (size_t i = 0; i < matches.size(); ++i) {
    const policy::TemplateMatch& m = matches[i];
    if (auto err = policy::decode_pod_template(identity, simdjson::minify(m.element), false, m.prefix, m.pointer,
                                               m.pod_spec, pod, pod_doc, policy.gpu_env_vars()))
      return fail(r, (err->field.empty() ? std::string() : err->field + ": ") + err->message);
    OfflineResult t;
    t.api_version = r.api_version;
    t.kind = r.kind;
    t.uid = r.uid;
    t.namespace_defaulted = r.namespace_defaulted;
    t.namespace_name = r.namespace_name;
    t.name = r.name;
    t.source = r.source;
    t.template_path = m.field;
    t.repeat = i > 0;
    policy::evaluate(policy, pod, options, t.decision);
    t.patch = Json::parse(policy::patch_to_json(t.decision.patch));
    policy::merge_template_decision(r.decision, t.decision, i == 0);
    r.templates.push_back(std::move(t));
  }
  return true;
}

// A kind judged by template paths: each template as the pod it will create.
void judge_templates(const policy::CompiledPolicy& policy, const policy::WorkloadKindDef& def, const Json& object,
                     const policy::ExternalFacts& facts, OfflineResult& r) {
  simdjson::dom::parser parser;
  std::string text = to_json_text(object);
  simdjson::dom::element root;
  if (auto err = reread(parser, text, root)) {
    fail(r, std::string("cannot re-read the object: ") + simdjson::error_message(err));
    return;
  }
  policy::EvalOptions options;
  options.namespace_name = r.namespace_name;
  options.mutate = true;  // templates are judged as the pods they create, which pass /mutate
  options.set_facts(facts);
  options.describe_gpus = true;
  if (!evaluate_templates(policy, def, text, root, options, r)) return;
  if (r.templates.empty()) {
    r.status = OfflineResult::Status::Skipped;
    r.note = "no pod template found (" + def.kind + " templates are at";
    for (const auto& path : def.templates) r.note += " " + path.text;
    r.note += ")";
    return;
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
    r.status = OfflineResult::Status::Error;
    r.note = "not an object";
    return r;
  }
  policy::ClaimKind claim_kind;
  if (policy::is_claim_kind(r.kind, &claim_kind)) {
    judge_claim(policy, object, facts, r);
    return r;
  }
  const std::string group(policy::api_group_of(string_at(object, "apiVersion")));
  if (policy::is_pod_group_kind(group, r.kind)) {
    judge_pod_group(policy, object, facts, r);
    return r;
  }
  if (const policy::WorkloadKindDef* def = policy.workload_kind(group, r.kind)) {
    judge_templates(policy, *def, object, facts, r);
    return r;
  }
  auto kind = policy::workload_kind_from(r.kind);
  if (!kind) {
    r.status = OfflineResult::Status::Skipped;
    r.note = r.kind.empty() ? "no kind: not a Kubernetes object"
                            : policy::bounded(r.kind) + " is not a Pod or a workload with a pod template";
    return r;
  }

  policy::PodDocument document;
  policy::PodView pod;
  if (auto err = policy::decode_pod_json(to_json_text(object), false, *kind, pod, document, policy.gpu_env_vars())) {
    r.status = OfflineResult::Status::Error;
    r.note = (err->field.empty() ? std::string() : err->field + ": ") + err->message;
    return r;
  }
  policy::EvalOptions options;
  options.namespace_name = r.namespace_name;
  options.mutate = mutate_pods || *kind != policy::WorkloadKind::Pod;
  options.set_facts(facts);
  options.describe_gpus = true;
  policy::evaluate(policy, pod, options, r.decision);
  apply_patch(object, r);
  return r;
}

}  // namespace gpu_admission::webhook
