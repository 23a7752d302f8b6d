// Effective GPU request of a pod with Kubernetes semantics, in exact integer compute slices:
// per container, full and shared GPUs count one whole GPU each and a MIG slice counts its <g>
// slices (without a pool: its largest share on any model, in slices of kAnyModelSlicesPerGpu);
// a DRA extended resource (deviceclass.resource.kubernetes.io/<class>) counts one whole GPU per
// unit for a full or a MIG class (a MIG class's profile is not known: the worst case); requests
// default to limits; init containers and restartable sidecars combine as the
// scheduler combines them. A GPU quantity never counts as zero unless it is zero: a fraction
// counts as its ceiling, one too large or unreadable as more than any cap (see units_of).
#pragma once

#include <cstdint>
#include <limits>
#include <memory_resource>
#include <string>
#include <vector>

#include "policy/dra/claim_view.h"
#include "policy/config/compiled_policy.h"
#include "policy/dra/pod_claims.h"
#include "policy/views/pod_view.h"
#include "policy/views/quantity.h"
#include "policy/views/slices.h"

namespace gpu_admission::policy {

struct QuantityProblem {
  const ContainerView* container;
  bool in_limits;  // false: in requests
  const ResourceQuantity* quantity;
  Quantity::Status status;
};

struct GpuRequest {
  explicit GpuRequest(std::pmr::memory_resource* memory = std::pmr::get_default_resource()) : claims(memory) {}
  int64_t slices = 0;          // effective pod request in compute slices: resources + DRA claims (saturating)
  int64_t resource_slices = 0; // through extended resources (nvidia.com/gpu, MIG, shared, device classes)
  int slices_per_gpu = 7;      // of the pool's model; kAnyModelSlicesPerGpu without a pool
  bool asks_for_gpu = false;   // some non-ephemeral container has a GPU quantity that is not exactly 0, or
                               // the pod has a spec.gpuSharingAnnotations annotation
  std::string_view first_resource;  // the first GPU resource name asked for
  CompiledPolicy::GpuKind first_kind = CompiledPolicy::GpuKind::NotGpu;  // and its kind
  bool several_resources = false;   // and another one too
  bool device_class_resources = false;  // a DRA extended resource (deviceclass.resource.kubernetes.io/) is asked for
  PodClaims claims;            // DRA: spec.resourceClaims resolved and counted
  bool gpu_pod() const { return slices > 0 || asks_for_gpu || claims.gpu; }
};


// Exact reading of a string or number quantity; a number (JSON float) is taken as the value the
// decoder read (ceiling for fractions, TooLarge from 2^63 on).
Quantity quantity_of(const ResourceQuantity& q);

// A quantity of exactly zero: an entry that asks for nothing (zero-count entries do not count).
inline bool zero_quantity(const ResourceQuantity& q) { return !quantity_of(q).nonzero(); }

// Units a GPU quantity counts for: the value (the ceiling for a fraction); kSaturatedSlices for
// one too large or unreadable; 0 for a negative one (which still makes a GPU pod).
int64_t units_of(const Quantity& q);

// The one function that counts a pod's GPUs, from extended resources and DRA claims alike.
// `problems` (optional) receives GPU quantities that are not whole numbers: fractions, negative,
// unreadable or too large ones (all still counted, see units_of). Claims are looked up through
// `resolver` in `namespace_name`; without a resolver every claim is unresolved. `group` is the
// pod's PodGroup (pod.pod_group) as the caller resolved it: its claims count as the pod's; a pod
// that names a group without one has an unresolved group. The claims' lists come from `memory`.
GpuRequest compute_gpu_request(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                               std::vector<QuantityProblem>* problems, const ClaimResolver* resolver = nullptr,
                               std::string_view namespace_name = {},
                               std::pmr::memory_resource* memory = std::pmr::get_default_resource(),
                               const PodGroupView* group = nullptr);

// The first pod annotation whose key is in spec.gpuSharingAnnotations (a scheduler's share of a
// GPU: KAI's and Run:ai's `gpu-fraction`, `gpu-memory`), as {key, value}; nullptr when none. Such
// a pod asks for a GPU (GpuRequest::asks_for_gpu) and counts no GPUs, as a fractional resource.
const std::pair<std::string_view, std::string_view>* gpu_sharing_annotation(const CompiledPolicy& policy,
                                                                            const PodView& pod);

// True when container `c` asks for any GPU through its resources: a GPU resource whose quantity
// is not exactly zero (a fraction, a negative or an unreadable quantity counts as asking). The
// same test as GpuRequest::asks_for_gpu, per container.
bool container_asks_for_gpu(const CompiledPolicy& policy, const ContainerView& c);

// GPUs as a person reads them: "2", "4/7", "1 2/7", "1 3/4" (slices of a `per_gpu`-slice GPU,
// the fraction in lowest terms);
// "more than can be counted" once saturated.
std::string gpus_text(int64_t slices, int per_gpu);

// Where the pod's GPUs come from, for people: "1 nvidia.com/gpu + 2 from claim template two-gpus",
// "2 deviceclass.resource.kubernetes.io/mig.nvidia.com (a whole GPU each)" (GPUs of the pool's
// model; repeats of a shared claim and non-GPU claims are left out).
std::string gpu_sources_text(const GpuRequest& gpu);

// Compute slices of one GPU in `pool` (its model's), or kAnyModelSlicesPerGpu without a pool.
int slices_per_gpu_in(const Pool* pool);

// Slices (of slices_per_gpu_in(pool)) one unit of `resource` stands for; 0 when it is not a GPU
// resource. Every kind of GPU resource is counted here (CompiledPolicy::classify_resource).
int64_t slices_per_unit(const CompiledPolicy& policy, std::string_view resource, const Pool* pool);

}  // namespace gpu_admission::policy
