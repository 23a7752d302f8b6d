// The decision phase for a claim's allocation, a commit point: an UPDATE of resourceclaims/status
// that newly sets status.allocation, or adds a pod to status.reservedFor of an allocated claim,
// is judged by judging each such pod in full, as it is stored now, with all its claims as they now
// are (this one as the update has it, the others from cluster state). Nothing is excused because
// the pod had it when it was admitted or because another of its claims brings it too: a tenant
// who swapped several claims under a gated pod cannot have each allocation vouched for by the
// others. The requester is the scheduler, so username exemptions and exceptions do not apply.
// A pod that cannot be fetched, is not the pod that was reserved (another uid), or does not refer
// to the claim cannot be judged: the update is refused and the scheduler tries again. A claim
// reserved for a PodGroup (scheduling.k8s.io) is judged with the group: its claims as they now
// are, as each of its pods has them (evaluate_pod_group); a group cluster state cannot find, or
// one that does not hold the claim, cannot be judged.
#include "webhook/admission/review_decision.h"

#include <utility>
#include <vector>

#include <simdjson.h>

#include "policy/base/quoted_value.h"
#include "policy/dra/claim_decoder.h"
#include "policy/dra/claim_status.h"
#include "policy/evaluation/evaluator.h"

namespace gpu_admission::webhook {
namespace {

// What is read of a reserved pod besides its view: its uid, and its status's map of claim entries
// to the claims made for them ({entry name, claim name}); views into the pod's DOM.
struct ReservedPod {
  std::string_view uid;
  std::vector<std::pair<std::string_view, std::string_view>> claim_statuses;
  // status.extendedResourceClaimStatus.resourceClaimName: the claim the scheduler made for the
  // pod's DRA-backed extended resources (Kubernetes 1.34+), which its spec does not name.
  std::string_view extended_resource_claim;
};

// The claim being allocated, in place of whatever a pod's entry would find for it.
class AllocatedClaim final : public policy::ClaimResolver {
 public:
  AllocatedClaim(const policy::ClaimResolver* cluster, const policy::ClaimView& claim, std::string_view template_name,
                 const policy::ClaimView& as)
      : cluster_(cluster), claim_(claim), template_name_(template_name), as_(as) {}
  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override {
    if (namespace_name == claim_.namespace_name) {
      if (kind == policy::ClaimKind::Claim && name == claim_.name) return &as_;
      if (kind == policy::ClaimKind::Template && !template_name_.empty() && name == template_name_) return &as_;
    }
    return cluster_ ? cluster_->find(kind, namespace_name, name) : nullptr;
  }

 private:
  const policy::ClaimResolver* cluster_;
  const policy::ClaimView& claim_;
  std::string_view template_name_;
  const policy::ClaimView& as_;
};

// How the pod refers to the claim being allocated.
enum class Reference {
  None,
  Entry,             // an entry of spec.resourceClaims stands for it
  ExtendedResource,  // the scheduler made it for the pod's extended resources (status names it)
};

// The pod's entry that stands for the claim: by name, or for a claim made from a template, the
// entry the pod's status.resourceClaimStatuses maps to the claim's name (what the scheduler and
// the kubelet read), else the one the claim's annotation names when the claim's controller owner
// is this pod. `template_name` is that entry's template ("" for an entry naming the claim).
bool entry_for(const policy::PodView& pod, const ReservedPod& reserved, const policy::ClaimView& claim,
               const policy::ClaimStatusView& status, std::string_view& template_name) {
  template_name = {};
  for (const auto& ref : pod.resource_claims)
    if (!ref.claim_name.empty() && ref.claim_name == claim.name) return true;
  auto entry_named = [&](std::string_view entry) {
    for (const auto& ref : pod.resource_claims) {
      if (ref.name != entry || ref.template_name.empty()) continue;
      template_name = ref.template_name;
      return true;
    }
    return false;
  };
  for (const auto& [entry, claim_name] : reserved.claim_statuses)
    if (claim_name == claim.name && entry_named(entry)) return true;
  const bool owned = !status.owner_pod_uid.empty() && status.owner_pod_uid == reserved.uid;
  return owned && !status.pod_claim_name.empty() && entry_named(status.pod_claim_name);
}

Reference refers_to(const policy::PodView& pod, const ReservedPod& reserved, const policy::ClaimView& claim,
                    const policy::ClaimStatusView& status, std::string_view& template_name) {
  if (entry_for(pod, reserved, claim, status, template_name)) return Reference::Entry;
  // Pod status is written by the scheduler and the kubelet, not by the pod's owner.
  if (!reserved.extended_resource_claim.empty() && reserved.extended_resource_claim == claim.name)
    return Reference::ExtendedResource;
  return Reference::None;
}

// "ns/name", each part bounded (policy/base/quoted_value.h): it prefixes the pod's findings.
std::string pod_key(const policy::ClaimView& claim, const policy::ClaimConsumer& pod) {
  return policy::bounded(claim.namespace_name) + "/" + policy::bounded(pod.name);
}

ObjectError cannot_judge(const policy::ClaimConsumer& pod, std::string message) {
  return ObjectError{"request.object",
                     policy::DecodeError{"status.reservedFor[" + std::to_string(pod.index) + "]", std::move(message)}};
}

// Reads metadata.uid and status.resourceClaimStatuses of the pod's text (absent: empty).
void read_reserved_pod(simdjson::dom::element root, ReservedPod& out) {
  out = {};
  if (root.at_pointer("/metadata/uid").get_string().get(out.uid) != simdjson::SUCCESS) out.uid = {};
  if (root.at_pointer("/status/extendedResourceClaimStatus/resourceClaimName")
          .get_string()
          .get(out.extended_resource_claim) != simdjson::SUCCESS)
    out.extended_resource_claim = {};
  simdjson::dom::array statuses;
  if (root.at_pointer("/status/resourceClaimStatuses").get_array().get(statuses) != simdjson::SUCCESS) return;
  for (const auto entry : statuses) {
    std::string_view name, claim_name;
    if (entry["name"].get_string().get(name) == simdjson::SUCCESS &&
        entry["resourceClaimName"].get_string().get(claim_name) == simdjson::SUCCESS)
      out.claim_statuses.emplace_back(name, claim_name);
  }
}

// Fetches and decodes the pod `consumer` into s.reserved_pod, what else is read of it into `pod`.
std::optional<ObjectError> fetch_pod(const policy::CompiledPolicy& policy, const policy::ClaimView& claim,
                                     const policy::ClaimConsumer& consumer, const policy::PodSource* pods,
                                     ReviewScratch& s, ReservedPod& pod) {
  const std::string who = "pod " + pod_key(claim, consumer);
  if (!pods)
    return cannot_judge(consumer, "cannot judge " + who + ": there is no cluster state to read it from (serve "
                                  "--cluster off; check and test read no pods); turn cluster state on, or take "
                                  "resourceclaims/status out of the webhook's rules");
  switch (pods->pod_json(claim.namespace_name, consumer.name, s.reserved_pod_text)) {
    case policy::PodSource::Outcome::Found: break;
    case policy::PodSource::Outcome::NotFound: return cannot_judge(consumer, "cannot judge " + who + ": not found");
    case policy::PodSource::Outcome::Error:
      return cannot_judge(consumer, "cannot judge " + who + ": " + s.reserved_pod_text);
  }
  simdjson::dom::element root;
  if (s.reserved_pod_dom.parse(s.reserved_pod_text).get(root) != simdjson::SUCCESS)
    return cannot_judge(consumer, "cannot read " + who + ": not JSON");
  read_reserved_pod(root, pod);
  if (!consumer.uid.empty() && pod.uid != consumer.uid)
    return cannot_judge(consumer, who + " is not the pod the claim was reserved for (its uid is " +
                                      policy::bounded(pod.uid) + ", not " + policy::bounded(consumer.uid) + ")");
  if (auto err = policy::decode_pod_json(s.reserved_pod_text, false, policy::WorkloadKind::Pod, s.reserved_pod,
                                         s.reserved_pod_doc, policy.gpu_env_vars()))
    return cannot_judge(consumer, "cannot read " + who + ": " + err->field + ": " + err->message);
  return std::nullopt;
}

// Judges one reserved pod in full with the claim as the update has it; the pod's findings go to
// `out`, each naming the pod.
std::optional<ObjectError> judge_pod(const policy::CompiledPolicy& policy, const policy::ClaimConsumer& consumer,
                                     ReviewScratch& s, policy::Decision& out, const policy::ExternalFacts& facts) {
  ReservedPod pod;
  if (auto err = fetch_pod(policy, s.claim, consumer, facts.pods, s, pod)) return err;
  std::string_view template_name;
  const Reference reference = refers_to(s.reserved_pod, pod, s.claim, s.claim_status, template_name);
  if (reference == Reference::None)
    return cannot_judge(consumer, "pod " + pod_key(s.claim, consumer) + " does not refer to ResourceClaim " +
                                      policy::bounded(s.claim.name));
  policy::EvalOptions options;
  options.namespace_name = s.claim.namespace_name;
  options.namespace_labels = facts.namespace_labels;
  options.groups = facts.groups;  // a pod of a PodGroup: with the group's claims
  options.mutate = false;  // the pod as it is stored
  options.now = facts.now;
  // A claim made for the pod's extended resources is not one of its entries: those resources
  // already count its devices, so the pod is judged as it is (never counted twice).
  AllocatedClaim with(facts.claims, s.claim, template_name, s.claim);
  options.claims = reference == Reference::Entry ? &with : facts.claims;
  policy::evaluate(policy, s.reserved_pod, options, s.one);
  if (s.one.exempt) return std::nullopt;
  if (!out.tenant) out.tenant = s.one.tenant;
  out.mode = s.one.mode;  // the claim's namespace: every reserved pod's tenant and mode
  if (!out.pool) out.pool = s.one.pool;
  for (auto& f : s.one.findings) {
    f.message = "pod " + pod_key(s.claim, consumer) + ": " + f.message;
    out.findings.push_back(std::move(f));
  }
  return std::nullopt;
}

bool is_pod_group(const policy::ClaimConsumer& consumer) {
  return consumer.api_group == policy::kSchedulingGroup && consumer.resource == policy::kPodGroupResource;
}

// Judges the PodGroup `consumer` with the claim as the update has it; findings name the group.
std::optional<ObjectError> judge_group(const policy::CompiledPolicy& policy, const policy::ClaimConsumer& consumer,
                                       ReviewScratch& s, policy::Decision& out, const policy::ExternalFacts& facts) {
  const std::string who = "PodGroup " + pod_key(s.claim, consumer);
  const policy::PodGroupView* group =
      facts.groups ? facts.groups->find_group(s.claim.namespace_name, consumer.name) : nullptr;
  if (!group) return cannot_judge(consumer, "cannot judge " + who + ": not found");
  const policy::PodResourceClaim* entry = group->entry_for_claim(s.claim.name);
  if (!entry) return cannot_judge(consumer, who + " does not refer to ResourceClaim " + policy::bounded(s.claim.name));
  policy::EvalOptions options;
  options.namespace_name = s.claim.namespace_name;
  options.namespace_labels = facts.namespace_labels;
  options.now = facts.now;
  AllocatedClaim with(facts.claims, s.claim, entry->template_name, s.claim);
  options.claims = &with;
  policy::evaluate_pod_group(policy, *group, options, s.one);
  if (s.one.exempt) return std::nullopt;
  if (!out.tenant) out.tenant = s.one.tenant;
  out.mode = s.one.mode;
  if (!out.pool) out.pool = s.one.pool;
  for (auto& f : s.one.findings) {
    f.message = who + ": " + f.message;
    out.findings.push_back(std::move(f));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ObjectError> decide_allocation(const policy::CompiledPolicy& policy, const AdmissionRequest& request,
                                             ReviewScratch& s, policy::Decision& out,
                                             const policy::ExternalFacts& facts) {
  out.clear();
  simdjson::dom::element object, old_object;
  if (auto err = parse_object(s.object_dom, request.object, object)) return ObjectError{"request.object", *err};
  if (auto err = policy::decode_claim_as(object, policy::ClaimKind::Claim, s.claim, false))
    return ObjectError{"request.object", *err};
  if (s.claim.namespace_name.empty()) s.claim.namespace_name = request.namespace_name;
  s.object_name = s.claim.name;
  if (auto err = policy::decode_claim_status(object, s.claim_status)) return ObjectError{"request.object", *err};
  s.old_claim_status.clear();
  if (request.has_old_object) {
    if (auto err = parse_object(s.old_object_dom, request.old_object, old_object))
      return ObjectError{"request.oldObject", *err};
    if (auto err = policy::decode_claim_status(old_object, s.old_claim_status))
      return ObjectError{"request.oldObject", *err};
  }
  if (!s.claim_status.allocated) return std::nullopt;  // nothing handed out
  if (policy::exempt(policy, s.claim.namespace_name, policy::EvalOptions{}, out)) return std::nullopt;
  // Newly allocated: every pod it is reserved for; allocated before: the pods added now.
  const bool newly_allocated = !s.old_claim_status.allocated;
  for (const auto& consumer : s.claim_status.reserved_for) {
    if (!consumer.is_pod() && !is_pod_group(consumer)) continue;
    if (!newly_allocated && s.old_claim_status.reserves(consumer)) continue;
    if (auto err = consumer.is_pod() ? judge_pod(policy, consumer, s, out, facts)
                                     : judge_group(policy, consumer, s, out, facts))
      return err;
  }
  out.allowed = !out.has(policy::Action::Deny);
  if (!out.findings.empty()) out.commit_point = "allocates the claim's devices";
  return std::nullopt;
}

}  // namespace gpu_admission::webhook
