// Evaluates one decoded pod against a compiled policy: exemptions, tenant and pool resolution,
// mutations (when asked, or simulated while the tenant observes), then every rule that is not
// `off`, on the pod as it then is: after mutation when mutations ran, exactly as received when
// they did not (/validate of a Pod under enforcement).
// Pure: no I/O, no shared mutable state; safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <string_view>

#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/config/compiled_policy.h"
#include "policy/config/label_selector.h"
#include "policy/evaluation/decision.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

// A pod by namespace and name, as the API server stores it (JSON text): the pods a claim's
// status.reservedFor names, judged when the claim is allocated. Implementations must be safe to
// call from many threads at once.
class PodSource {
 public:
  enum class Outcome { Found, NotFound, Error };
  virtual ~PodSource() = default;
  // On Error, `json` says why ("timed out after 1000 ms").
  virtual Outcome pod_json(std::string_view namespace_name, std::string_view name, std::string& json) const = 0;
};

// Facts from outside the object, through small interfaces (never I/O): the claims a pod refers
// to, its namespace's labels, its PodGroup and, for a claim's allocation, the pods it is reserved
// for. Null members are unknown.
struct ExternalFacts {
  const ClaimResolver* claims = nullptr;
  const NamespaceLabels* namespace_labels = nullptr;
  const PodSource* pods = nullptr;
  // Unix seconds, for exceptions that expire; kUnknownTime: every exception with `expires` is inert.
  int64_t now = kUnknownTime;
  const PodGroupResolver* groups = nullptr;
};

// Where a review's facts come from when finding them may wait on something (cluster state's
// cache misses): review() hands `use` facts that serve one review, with one deadline for all
// of that review's waiting together, and are gone when `use` returns.
class FactsProvider {
 public:
  class Use {
   public:
    virtual void operator()(const ExternalFacts& facts) = 0;

   protected:
    ~Use() = default;
  };
  virtual ~FactsProvider() = default;
  virtual void review(Use& use) const = 0;
};

struct EvalOptions {
  // The request namespace; when empty, the object's metadata.namespace is used.
  std::string_view namespace_name;
  std::string_view username;  // for username exemptions; empty when unknown (CLI)
  // Apply the mutations (to the view and to decision.patch) before validating: for /mutate, for
  // `check` of a Pod (the API server's chain) and for workload templates (their pods pass
  // /mutate when created). False for /validate of a Pod, which judges the pod as it arrives under
  // enforcement; under warn and audit, where /mutate withheld its changes on purpose, the pod is
  // judged as /mutate would have left it (the mutations run on the view, into withheld_patch), so
  // that observing finds exactly what enforcing would.
  bool mutate = true;
  // On UPDATE, the object before the change (tenant-label refuses removing a tenant label).
  const PodView* old_pod = nullptr;
  // Where the pod's DRA claims are looked up (in the pod's namespace); nullptr: nowhere, so every
  // claim is unresolved (a GPU pod that gpu-cap refuses where a cap applies).
  const ClaimResolver* claims = nullptr;
  // Namespace labels for tenants chosen by namespaceSelector; nullptr: unknown (no selector matches).
  const NamespaceLabels* namespace_labels = nullptr;
  // Where the pod's PodGroup (spec.schedulingGroup.podGroupName) is looked up, in the pod's
  // namespace; nullptr: nowhere, so a pod that names a group has it unresolved.
  const PodGroupResolver* groups = nullptr;
  // Fill decision.gpu_sources ("2 from claim a + 1 nvidia.com/gpu") for `check`'s report; the
  // webhook never shows it and leaves it off (its text costs allocations on every request).
  bool describe_gpus = false;
  // Unix seconds, for exceptions that expire; kUnknownTime: every exception with `expires` is inert.
  int64_t now = kUnknownTime;

  void set_facts(const ExternalFacts& facts) {
    claims = facts.claims;
    namespace_labels = facts.namespace_labels;
    groups = facts.groups;
    now = facts.now;
  }
};

// `pod` is modified in place when mutations apply: it becomes the mutated pod.
void evaluate(const CompiledPolicy& policy, PodView& pod, const EvalOptions& options, Decision& out);

inline Decision evaluate(const CompiledPolicy& policy, PodView& pod, const EvalOptions& options) {
  Decision d;
  evaluate(policy, pod, options, d);
  return d;
}

// Namespace and username exemptions: true (and `out` marked exempt) when no rule applies.
bool exempt(const CompiledPolicy& policy, std::string_view ns, const EvalOptions& options, Decision& out);

// The tenant of namespace `ns` (nullptr: none), recorded in `out` with whether the namespace's
// labels could not be read (tenant_unknown) and the tenant's enforcement mode.
const Tenant* tenant_of(const CompiledPolicy& policy, std::string_view ns, const EvalOptions& options, Decision& out);

// Judges a ResourceClaim or ResourceClaimTemplate on its own admission: gpu-cap when it
// alone exceeds its namespace's tenant's cap or asks for allocationMode All, gpu-device-access for
// adminAccess. Findings name spec.devices.requests[i] (spec.spec.devices... for a template).
void evaluate_claim(const CompiledPolicy& policy, const ClaimView& claim, const EvalOptions& options, Decision& out);

// Judges a PodGroup on its own admission (group_evaluator.cpp): its spec.resourceClaims as every
// pod of the group will have them, by every rule whose entry has a group check, with its
// namespace's tenant, in the pool a pod of the group that pins none is judged in (the tenant's
// default pool; none without one). Claims are looked up through options.claims. Findings name
// spec.resourceClaims[i] (or spec.resourceClaims for the group's total).
void evaluate_pod_group(const CompiledPolicy& policy, const PodGroupView& group, const EvalOptions& options,
                        Decision& out);

}  // namespace gpu_admission::policy
