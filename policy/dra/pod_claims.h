// A pod's DRA claims resolved and counted: each spec.resourceClaims entry looked up
// through the ClaimResolver the caller gives (the claims among `check`'s inputs, the cluster
// state of `serve`) and counted with the pool's GPU model. A claim that cannot be resolved is
// never a silent zero: it makes the pod a GPU pod and gpu-cap reports it where a cap applies.
// A pod of a PodGroup (spec.schedulingGroup.podGroupName) also has its group's claims, as
// entries after its own; a group that cannot be resolved is one unresolved entry standing for
// all of them. Lists come from the caller's memory resource (claim_gpus.h).
#pragma once

#include <cstdint>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

#include "policy/dra/claim_gpus.h"
#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/config/compiled_policy.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

struct PodClaimGpus {
  explicit PodClaimGpus(std::pmr::memory_resource* memory = std::pmr::get_default_resource()) : gpus(memory) {}
  // The pod's spec.resourceClaims entry, or its group's spec.resourceClaims entry (`group` set);
  // never null (an entry for a missing group points at an empty one).
  const PodResourceClaim* ref = nullptr;
  ClaimKind kind = ClaimKind::Claim;      // Template for resourceClaimTemplateName
  std::string_view object_name;           // the claim's or template's name ("" when the entry names none)
  const ClaimView* claim = nullptr;       // nullptr: not found, or nothing to resolve with
  bool repeat = false;                    // names a claim an earlier entry already counted
  // The PodGroup this entry comes from ("" for the pod's own entries, and for an entry of the pod
  // that matches one of its group's: that one stands for the group's claim, counted once).
  std::string_view group;
  // Stands for the pod's whole PodGroup, which cannot be resolved (object_name and group are
  // its name): every claim it may hold is unknown.
  bool group_missing = false;
  ClaimGpus gpus;                         // when resolved

  bool resolved() const { return claim != nullptr; }
  bool from_group() const { return !group.empty(); }
  // "claim template two-gpus" / "claim shared-gpu" / "claim x of PodGroup g" / "PodGroup g", as
  // output names the source of GPUs.
  std::string describe() const;
};

// Remembers the answers of another resolver for one evaluation, so each claim is looked up once
// however often the pod is counted (a cache miss in `serve` costs a GET to the API server).
class MemoizedClaims : public ClaimResolver {
 public:
  explicit MemoizedClaims(const ClaimResolver* inner,
                          std::pmr::memory_resource* memory = std::pmr::get_default_resource())
      : inner_(inner), answers_(memory) {}
  const ClaimView* find(ClaimKind kind, std::string_view namespace_name, std::string_view name) const override;
  const ClaimResolver* get() const { return inner_ ? this : nullptr; }

 private:
  struct Answer {
    ClaimKind kind;
    std::string_view namespace_name, name;
    const ClaimView* claim;
  };
  const ClaimResolver* inner_;
  mutable std::pmr::vector<Answer> answers_;
};

struct PodClaims {
  explicit PodClaims(std::pmr::memory_resource* memory = std::pmr::get_default_resource()) : entries(memory) {}
  std::pmr::vector<PodClaimGpus> entries;  // one per spec.resourceClaims entry, in order
  int64_t slices = 0;                 // sum over distinct resolved claims (saturating)
  bool gpu = false;                   // some claim asks for GPUs, or cannot be resolved
  bool unresolved = false;

  // The pod's own entry named `pod_claim_name` (what containers' resources.claims refer to).
  const PodClaimGpus* find(std::string_view pod_claim_name) const;
};

// The counting rules of the policy and pool: device classes from spec.deviceClasses, slices per
// GPU and per MIG profile from the pool's model (without a pool: kAnyModelSlicesPerGpu slices
// and the profile's largest share on any model).
GpuCounting gpu_counting(const CompiledPolicy& policy, const Pool* pool);

// `group` is the pod's PodGroup (pod.pod_group) as its caller resolved it; nullptr for a pod that
// names a group: that group is unresolved.
PodClaims resolve_pod_claims(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                             const ClaimResolver* resolver, std::string_view namespace_name,
                             std::pmr::memory_resource* memory = std::pmr::get_default_resource(),
                             const PodGroupView* group = nullptr);

// Whether a pod's entry and its group's are the same claim (DRAWorkloadResourceClaims: every
// field equal): the pod's entry then resolves to the group's claim, counted once.
bool matches_group_entry(const PodResourceClaim& pod_entry, const PodResourceClaim& group_entry);

// True when container `c` uses a GPU through its resources.claims: a reference to a claim that
// asks for GPUs (in the referenced request, or any request when it names none) or that cannot
// be resolved.
bool container_uses_gpu_claim(const ContainerView& c, const PodClaims& claims);

}  // namespace gpu_admission::policy
