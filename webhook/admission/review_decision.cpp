#include "webhook/admission/review_decision.h"

#include "policy/decoding/pod_commit_point.h"
#include "policy/dra/claim_decoder.h"
#include "policy/evaluation/evaluator.h"

namespace gpu_admission::webhook {

ReviewTarget target_of(const AdmissionRequest& request, const policy::CompiledPolicy* policy) {
  ReviewTarget target;
  const policy::WorkloadKindDef* def = policy ? policy->workload_kind(request.kind_group, request.kind)
                                              : policy::find_builtin_ml_kind(request.kind_group, request.kind);
  if (def) {
    target.what = ReviewTarget::What::Templates;
    target.templates = def;
  } else if (auto kind = policy::workload_kind_from(request.kind)) {
    target.what = ReviewTarget::What::Workload;
    target.workload = *kind;
  } else if (request.kind_group == "resource.k8s.io" && policy::is_claim_kind(request.kind, &target.claim)) {
    target.what = ReviewTarget::What::Claim;
  } else if (request.kind_group.empty() && request.kind == "ConfigMap") {
    target.what = ReviewTarget::What::ConfigMap;
  } else if (policy::is_pod_group_kind(request.kind_group, request.kind)) {
    target.what = ReviewTarget::What::PodGroup;
  }
  return target;
}

Plan plan_for(Endpoint endpoint, const AdmissionRequest& req, const ReviewTarget& target) {
  if (target.what == ReviewTarget::What::Other) return Plan::Allow;  // nothing to say
  if (target.what == ReviewTarget::What::ConfigMap) {
    // A policy is checked as it is written; DELETE and /mutate have nothing to check.
    const bool written = req.operation == "CREATE" || req.operation == "UPDATE";
    return endpoint == Endpoint::Validate && written && req.sub_resource.empty() ? Plan::CheckPolicy : Plan::Allow;
  }
  if (target.what == ReviewTarget::What::Claim) {
    if (endpoint == Endpoint::Mutate) return Plan::Allow;
    // Devices are handed out by an UPDATE of a claim's status: the commit point, so it is judged too.
    if (req.sub_resource == "status")
      return target.claim == policy::ClaimKind::Claim && req.operation == "UPDATE" ? Plan::EvaluateAllocation
                                                                                   : Plan::Allow;
    if (!req.sub_resource.empty()) return Plan::Allow;
    return req.operation == "CREATE" ? Plan::EvaluateCreate : req.operation == "UPDATE" ? Plan::EvaluateUpdate : Plan::Allow;
  }
  if (target.what == ReviewTarget::What::Templates || target.what == ReviewTarget::What::PodGroup) {
    // /mutate never patches these kinds; their status and scale subresources hold no templates,
    // a PodGroup's status no claims of its own (only the names of those made from templates).
    if (endpoint == Endpoint::Mutate || !req.sub_resource.empty()) return Plan::Allow;
    return req.operation == "CREATE" ? Plan::EvaluateCreate : req.operation == "UPDATE" ? Plan::EvaluateUpdate : Plan::Allow;
  }
  const bool is_pod = target.workload == policy::WorkloadKind::Pod;
  if (endpoint == Endpoint::Mutate) {
    // Mutations run on CREATE of Pods only.
    return is_pod && req.operation == "CREATE" && req.sub_resource.empty() ? Plan::EvaluateCreate : Plan::Allow;
  }
  if (is_pod && !req.sub_resource.empty() && req.sub_resource != "ephemeralcontainers") return Plan::Allow;
  if (req.operation == "CREATE") return Plan::EvaluateCreate;
  if (req.operation == "UPDATE") return Plan::EvaluateUpdate;
  return Plan::Allow;  // DELETE, CONNECT
}

void ReviewScratch::begin() {
  object_name = {};
  identity = old_identity = {};
  pod.clear();
  old_pod.clear();
  claim.clear();
  old_claim.clear();
  group.clear();
  old_group.clear();
  templates.clear();
  old_templates.clear();
  claim_status.clear();
  old_claim_status.clear();
  reserved_pod.clear();
  old_decision.clear();
  one.clear();
}

std::string ObjectError::message() const {
  std::string out = "cannot read " + which;
  if (!error.field.empty()) out += " field " + error.field;
  out += ": " + error.message;
  return out;
}

std::optional<policy::DecodeError> parse_object(simdjson::dom::parser& parser, std::string_view text,
                                                simdjson::dom::element& root) {
  if (auto code = parser.parse(text.data(), text.size(), false).get(root))
    return policy::invalid_json(code);
  return policy::find_duplicate_keys(root);
}

namespace {

// What every evaluation of a request starts from: its namespace, user, the facts, and whether
// findings describe the GPUs they count.
policy::EvalOptions options_for(const AdmissionRequest& request, const policy::ExternalFacts& facts,
                                const ReviewScratch& scratch) {
  policy::EvalOptions options;
  options.namespace_name = request.namespace_name;
  options.username = request.username;
  options.set_facts(facts);
  options.describe_gpus = scratch.describe_gpus;
  return options;
}

std::optional<ObjectError> decide_claim(const policy::CompiledPolicy& policy, Plan plan, const AdmissionRequest& request,
                                        policy::ClaimKind kind, ReviewScratch& scratch, policy::Decision& out,
                                        const policy::ExternalFacts& facts, const std::function<void()>& probe) {
  simdjson::dom::element object, old_object;
  if (auto err = parse_object(scratch.object_dom, request.object, object)) return ObjectError{"request.object", *err};
  if (auto err = policy::decode_claim_as(object, kind, scratch.claim, false)) return ObjectError{"request.object", *err};
  scratch.object_name = scratch.claim.name;
  policy::EvalOptions options = options_for(request, facts, scratch);
  if (probe) probe();
  policy::evaluate_claim(policy, scratch.claim, options, out);
  if (plan == Plan::EvaluateUpdate && request.has_old_object && !out.exempt &&
      !parse_object(scratch.old_object_dom, request.old_object, old_object) &&
      !policy::decode_claim_as(old_object, kind, scratch.old_claim, false)) {
    policy::evaluate_claim(policy, scratch.old_claim, options, scratch.old_decision);
    policy::keep_new_findings(out, scratch.old_decision);
  }
  return std::nullopt;
}

// A PodGroup: its spec.resourceClaims as each of its pods will have them. Its claims are
// immutable, but an UPDATE is judged too (refused only for what it adds), as a claim's is.
std::optional<ObjectError> decide_pod_group(const policy::CompiledPolicy& policy, Plan plan,
                                            const AdmissionRequest& request, ReviewScratch& scratch,
                                            policy::Decision& out, const policy::ExternalFacts& facts,
                                            const std::function<void()>& probe) {
  simdjson::dom::element object, old_object;
  if (auto err = parse_object(scratch.object_dom, request.object, object)) return ObjectError{"request.object", *err};
  if (auto err = policy::decode_pod_group(object, scratch.group, false)) return ObjectError{"request.object", *err};
  scratch.object_name = scratch.group.name;
  policy::EvalOptions options = options_for(request, facts, scratch);
  if (probe) probe();
  policy::evaluate_pod_group(policy, scratch.group, options, out);
  if (plan == Plan::EvaluateUpdate && request.has_old_object && !out.exempt &&
      !parse_object(scratch.old_object_dom, request.old_object, old_object) &&
      !policy::decode_pod_group(old_object, scratch.old_group, false)) {
    policy::evaluate_pod_group(policy, scratch.old_group, options, scratch.old_decision);
    policy::keep_new_findings(out, scratch.old_decision);
  }
  return std::nullopt;
}

// Whether a Pod UPDATE starts or moves the pod. The pods/ephemeralcontainers subresource changes
// nothing but ephemeral containers (the API server drops the rest), so it never is one.
policy::CommitPoint commit_point_of(const AdmissionRequest& request, policy::WorkloadKind kind, ReviewScratch& s) {
  if (kind != policy::WorkloadKind::Pod || !request.sub_resource.empty()) return policy::CommitPoint::None;
  simdjson::dom::element object, old_object;
  if (parse_object(s.object_dom, request.object, object) || parse_object(s.old_object_dom, request.old_object, old_object))
    return policy::CommitPoint::Unknown;
  return policy::pod_commit_point(object, old_object);
}

const policy::TemplateMatch* same_template(const std::vector<policy::TemplateMatch>& list, const std::string& field) {
  for (const auto& t : list)
    if (t.field == field) return &t;
  return nullptr;
}

std::optional<ObjectError> decide_templates(const policy::CompiledPolicy& policy, Plan plan,
                                            const AdmissionRequest& request, const policy::WorkloadKindDef& def,
                                            ReviewScratch& s, policy::Decision& out,
                                            const policy::ExternalFacts& facts, const std::function<void()>& probe) {
  out.clear();
  simdjson::dom::element object, old_object;
  if (auto err = parse_object(s.object_dom, request.object, object)) return ObjectError{"request.object", *err};
  if (auto err = policy::find_templates(object, def, s.templates)) return ObjectError{"request.object", *err};
  if (auto err = policy::decode_identity(request.object, true, s.identity, s.identity_doc))
    return ObjectError{"request.object", *err};
  s.object_name = s.identity.name.empty() ? s.identity.generate_name : s.identity.name;
  s.old_templates.clear();
  const bool update = plan == Plan::EvaluateUpdate && request.has_old_object;
  if (update && (parse_object(s.old_object_dom, request.old_object, old_object) ||
                 policy::find_templates(old_object, def, s.old_templates) ||
                 policy::decode_identity(request.old_object, true, s.old_identity, s.old_identity_doc)))
    s.old_templates.clear();
  policy::EvalOptions options = options_for(request, facts, s);
  options.mutate = true;  // templates are judged as the pods they create, which pass /mutate
  if (probe) probe();
  for (size_t i = 0; i < s.templates.size(); ++i) {
    const policy::TemplateMatch& t = s.templates[i];
    if (auto err = policy::decode_pod_template(s.identity, simdjson::minify(t.element), false, t.prefix, t.pointer,
                                               t.pod_spec, s.pod, s.object_doc, policy.gpu_env_vars()))
      return ObjectError{"request.object", *err};
    policy::evaluate(policy, s.pod, options, s.one);
    const policy::TemplateMatch* old = same_template(s.old_templates, t.field);
    if (old && !s.one.exempt &&
        !policy::decode_pod_template(s.old_identity, simdjson::minify(old->element), false, old->prefix,
                                     old->pointer, old->pod_spec, s.old_pod, s.old_object_doc, policy.gpu_env_vars())) {
      policy::evaluate(policy, s.old_pod, options, s.old_decision);
      policy::keep_new_findings(s.one, s.old_decision);
    }
    if (s.template_decisions) s.template_decisions->push_back({t.field, s.one});
    policy::merge_template_decision(out, s.one, i == 0);
  }
  if (!s.template_decisions) out.patch.clear();  // /validate answers these kinds without a patch
  return std::nullopt;
}

}  // namespace

std::optional<ObjectError> decide_review(const policy::CompiledPolicy& policy, Endpoint endpoint, Plan plan,
                                         const AdmissionRequest& request, const ReviewTarget& target,
                                         ReviewScratch& scratch, policy::Decision& out,
                                         const policy::ExternalFacts& facts, const std::function<void()>& probe) {
  if (!request.has_object) return ObjectError{"request.object", {"", "missing"}};
  if (plan == Plan::CheckPolicy || target.what == ReviewTarget::What::ConfigMap) {
    out.clear();  // no rule judges a ConfigMap: its policy is checked by AdmissionService
    return std::nullopt;
  }
  if (plan == Plan::EvaluateAllocation) {
    if (probe) probe();
    return decide_allocation(policy, request, scratch, out, facts);
  }
  if (target.what == ReviewTarget::What::Claim)
    return decide_claim(policy, plan, request, target.claim, scratch, out, facts, probe);
  if (target.what == ReviewTarget::What::PodGroup)
    return decide_pod_group(policy, plan, request, scratch, out, facts, probe);
  if (target.what == ReviewTarget::What::Templates && target.templates)
    return decide_templates(policy, plan, request, *target.templates, scratch, out, facts, probe);
  const policy::WorkloadKind kind = target.workload;
  // Decoded already in the envelope's pass (AdmissionRequest::Decoded), else from the text.
  if (request.object_decoded == AdmissionRequest::Decoded::Failed)
    return ObjectError{"request.object", request.object_error.value_or(policy::DecodeError{"", "cannot be read"})};
  if (request.object_decoded == AdmissionRequest::Decoded::No)
    if (auto err = policy::decode_pod_json(request.object, true, kind, scratch.pod, scratch.object_doc,
                                           policy.gpu_env_vars()))
      return ObjectError{"request.object", *err};
  scratch.object_name = scratch.pod.name.empty() ? scratch.pod.generate_name : scratch.pod.name;

  policy::EvalOptions options = options_for(request, facts, scratch);
  // A Pod is mutated only on its way through /mutate: /validate judges what the API server will
  // store. Templates are judged as the pods they create, which pass /mutate.
  options.mutate = endpoint == Endpoint::Mutate || kind != policy::WorkloadKind::Pod;
  const bool update = plan == Plan::EvaluateUpdate && request.has_old_object;
  const bool old_read =
      update && (request.old_object_decoded == AdmissionRequest::Decoded::Yes ||
                 (request.old_object_decoded == AdmissionRequest::Decoded::No &&
                  !policy::decode_pod_json(request.old_object, true, kind, scratch.old_pod, scratch.old_object_doc,
                                           policy.gpu_env_vars())));
  if (old_read) {
    options.old_pod = &scratch.old_pod;
  }
  if (probe) probe();
  policy::evaluate(policy, scratch.pod, options, out);

  if (options.old_pod && !out.exempt) {
    // A commit point (an UPDATE that starts or moves the pod) is judged in full, as if the pod were
    // created now; any other UPDATE is refused only for what it adds.
    const policy::CommitPoint point = commit_point_of(request, kind, scratch);
    if (point != policy::CommitPoint::None) {
      out.commit_point = policy::describe(point);
      return std::nullopt;
    }
    policy::EvalOptions old_options = options;
    old_options.old_pod = nullptr;
    policy::evaluate(policy, scratch.old_pod, old_options, scratch.old_decision);
    policy::keep_new_findings(out, scratch.old_decision);
  }
  return std::nullopt;
}

}  // namespace gpu_admission::webhook
