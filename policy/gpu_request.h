// Effective GPU request of a pod with Kubernetes semantics, in exact integer compute slices:
// per container, full and shared GPUs count one whole GPU each and a MIG slice counts its <g>
// slices; requests default to limits; init containers and restartable sidecars combine as the
// scheduler combines them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/compiled_policy.h"
#include "policy/pod_view.h"
#include "policy/quantity.h"

namespace gpu_admission::policy {

struct QuantityProblem {
  const ContainerView* container;
  bool in_limits;  // false: in requests
  const ResourceQuantity* quantity;
  Quantity::Status status;
};

struct GpuRequest {
  int64_t slices = 0;        // effective pod request in compute slices
  int slices_per_gpu = 7;    // of the pool's model; 7 without a pool
  bool gpu_pod() const { return slices > 0; }
};

Quantity quantity_of(const ResourceQuantity& q);

// `problems` (optional) receives GPU quantities that are not whole numbers or not valid.
GpuRequest compute_gpu_request(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                               std::vector<QuantityProblem>* problems);

// GPUs as a person reads them: "2", "4/7", "1 2/7" (slices of a `per_gpu`-slice GPU).
std::string gpus_text(int64_t slices, int per_gpu);

// Slices one unit of `resource` stands for (0 when it is not a GPU resource).
int64_t slices_per_unit(const CompiledPolicy& policy, std::string_view resource, int slices_per_gpu);

}  // namespace gpu_admission::policy
