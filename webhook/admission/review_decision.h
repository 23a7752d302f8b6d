// The decision phase of an admission request, shared by the webhook (/validate, /mutate) and by
// `check` when it is given an AdmissionReview, so both answer the same request the same way:
// which requests are judged (the plan), decoding of request.object and request.oldObject, and
// evaluation (an UPDATE is refused only for findings the old object did not have).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "policy/dra/claim_status.h"
#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/config/compiled_policy.h"
#include "policy/evaluation/evaluator.h"
#include "policy/evaluation/decision.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/config/template_finder.h"
#include "webhook/admission/admission_review.h"

namespace gpu_admission::webhook {

enum class Endpoint { Validate, Mutate };

// What a request asks of the policy engine. EvaluateAllocation: an UPDATE of a ResourceClaim's
// status, judged by the pods it reserves devices for (allocation_decision.cpp). CheckPolicy: a
// ConfigMap on /validate, whose policy is checked when it carries the policy label
// (AdmissionService, policy_check.h); no rule of the policy in force judges it.
enum class Plan { Allow, EvaluateCreate, EvaluateUpdate, EvaluateAllocation, CheckPolicy };

// The object a request is about, from request.kind: a Pod or a workload with a pod template, a
// DRA claim or claim template (group resource.k8s.io), a PodGroup (scheduling.k8s.io), a kind
// judged by template paths (ML workloads and spec.workloads, by group and kind), a ConfigMap
// (core v1: it may carry the webhook's own policy), or something the webhook does not judge.
struct ReviewTarget {
  enum class What { Other, Workload, Claim, PodGroup, Templates, ConfigMap };
  What what = What::Other;
  policy::WorkloadKind workload = policy::WorkloadKind::Pod;
  policy::ClaimKind claim = policy::ClaimKind::Claim;
  const policy::WorkloadKindDef* templates = nullptr;  // What::Templates: owned by the policy or static
};

// `policy` adds its spec.workloads kinds to the built-in ML kinds (null: built-in only); the
// target then points into it, so keep the policy alive while using the target.
ReviewTarget target_of(const AdmissionRequest& request, const policy::CompiledPolicy* policy = nullptr);

Plan plan_for(Endpoint endpoint, const AdmissionRequest& request, const ReviewTarget& target);

// Decoded views, and the documents they point into, reused across requests (per thread in the
// server). Pods and workloads are decoded On-Demand from request.object's text; claims and kinds
// judged by template paths are parsed into a DOM first (and checked whole for duplicate keys).
// Views point into one request's body and documents: begin() empties every one of them before
// the next request is read, so nothing of an earlier request (another tenant's, whose body is
// gone) can be read by a later one; object_name is what this request's object was decoded as.
struct ReviewScratch {
  void begin();
  // For the offline front ends (`check`, `test`), which print each template of a kind judged by
  // template paths and the object as the pods' mutations leave it: when set, each template's own
  // decision is appended here beside the merged one, and the merged patch is kept (the webhook's
  // /validate answers those kinds without one).
  struct TemplateDecision {
    std::string field;  // "spec.pytorchReplicaSpecs.Worker.template"
    policy::Decision decision;
  };
  std::vector<TemplateDecision>* template_decisions = nullptr;

  // metadata.name (else generateName) of the object decide_review decoded for this request,
  // whatever its kind; empty when it decoded none (the caller falls back to request.name).
  std::string_view object_name;

  bool describe_gpus = false;  // EvalOptions::describe_gpus (`check` sets it)
  policy::PodDocument object_doc, old_object_doc, identity_doc, old_identity_doc;
  simdjson::dom::parser object_dom, old_object_dom;
  policy::ObjectIdentity identity, old_identity;
  policy::PodView pod;
  policy::PodView old_pod;
  policy::ClaimView claim;
  policy::ClaimView old_claim;
  policy::PodGroupView group, old_group;
  policy::Decision old_decision;
  policy::Decision one;  // one template of a kind judged by template paths
  // A claim's allocation: its status and old status, and the reserved pod being judged.
  policy::ClaimStatusView claim_status, old_claim_status;
  std::string reserved_pod_text;
  simdjson::dom::parser reserved_pod_dom;
  policy::PodDocument reserved_pod_doc;
  policy::PodView reserved_pod;
  std::vector<policy::TemplateMatch> templates;
  std::vector<policy::TemplateMatch> old_templates;
};

// An object of the request that cannot be read: `which` is "request.object" or "request.oldObject".
struct ObjectError {
  std::string which;
  policy::DecodeError error;
  std::string message() const;  // "cannot read request.object field spec.x: must be a list"
};

// Decodes and evaluates the request's object for `plan` (not Allow). Pods are judged as they arrive
// on /validate and mutated on /mutate; workload templates are judged as the pods they will create;
// claims, claim templates and PodGroups (their spec.resourceClaims) on their own. Kinds judged by
// template paths: every template as the pod it will create, `out` holding all templates' findings
// (an UPDATE refused only for findings the old object's same template did not have). A pod's DRA
// claims, its PodGroup and its namespace's labels come from `facts` (null members: unknown).
// `probe`, when set, runs between decoding and evaluation (tests inject faults).
// Parses an object of the request (padded text) into `parser`'s DOM, refusing duplicate keys.
std::optional<policy::DecodeError> parse_object(simdjson::dom::parser& parser, std::string_view text,
                                                simdjson::dom::element& root);

// Plan::EvaluateAllocation (allocation_decision.cpp): `out` holds the findings of the reserved
// pods, each naming its pod; an error when a pod cannot be judged (the update is refused).
std::optional<ObjectError> decide_allocation(const policy::CompiledPolicy& policy, const AdmissionRequest& request,
                                             ReviewScratch& scratch, policy::Decision& out,
                                             const policy::ExternalFacts& facts);

std::optional<ObjectError> decide_review(const policy::CompiledPolicy& policy, Endpoint endpoint, Plan plan,
                                         const AdmissionRequest& request, const ReviewTarget& target,
                                         ReviewScratch& scratch, policy::Decision& out,
                                         const policy::ExternalFacts& facts = {},
                                         const std::function<void()>& probe = {});

}  // namespace gpu_admission::webhook
