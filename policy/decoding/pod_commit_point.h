// Which UPDATEs of a Pod are commit points: the ones that start a pod or move it (the last
// scheduling gate removed; nodeSelector, affinity, tolerations, resourceClaims or its scheduling
// group changed, which Kubernetes allows while a pod is gated). Such an UPDATE is judged in full,
// as if the pod were created now: nothing is excused because the old object had it, so a pod
// admitted while nothing was enforced, or whose claims changed since, cannot start unless it
// would be admitted now. Every other UPDATE is refused only for the findings it adds.
#pragma once

#include <cstdint>
#include <string_view>

#include <simdjson.h>

namespace gpu_admission::policy {

enum class CommitPoint : uint8_t {
  None,
  Unknown,          // the objects cannot be compared (no spec object): judged in full
  Ungated,          // the last of spec.schedulingGates is removed
  NodeSelector,     // spec.nodeSelector changes
  Affinity,         // spec.affinity changes
  Tolerations,      // spec.tolerations changes
  ResourceClaims,   // spec.resourceClaims changes
  SchedulingGroup,  // spec.schedulingGroup (1.36+) or spec.workloadRef (1.35) changes
};

// "removes the pod's last scheduling gate", "changes spec.nodeSelector", ...; "" for None.
std::string_view describe(CommitPoint point);

// Compares the pod before and after an UPDATE (the request's object and oldObject, parsed).
// Anything that is not an object where a pod is expected counts as a change: an UPDATE that
// cannot be compared is judged in full.
CommitPoint pod_commit_point(simdjson::dom::element object, simdjson::dom::element old_object);

}  // namespace gpu_admission::policy
