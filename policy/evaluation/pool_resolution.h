// Which pool a pod is in: the pools its scheduling constraints name, and the one they
// pin it to. A pool is named by the pod's nodeSelector when it holds every pool label, and by a
// required node-affinity term that allows every pool label together with the nodeSelector (`In`
// on the pool's keys): the pod targets every pool one of its (ORed) terms names. A pod is pinned
// when it names only that pool and every way it can be scheduled names it: the nodeSelector holds
// every pool label, or every term names the pool (a second term that names no pool lets the pod
// escape). Values of a pool key that are no pool's (`In [a100, other]`) name nothing: pools are
// the policy's node label sets, and nodes are labelled by the cluster's operators, not tenants. A
// pod that names several pools is reported by tenant-pool and judged in the first (policy order).
#pragma once

#include "policy/config/compiled_policy.h"
#include "policy/base/inline_list.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

using NamedPools = InlineList<const Pool*, 4>;

struct PoolResolution {
  NamedPools named;                // pools the pod names, in policy order
  const Pool* pool = nullptr;      // the pool the rules judge it in: the pinned one, or the first of several
  bool pinned = false;             // pinned to `pool`, or naming several (which tenant-pool reports)
};

PoolResolution resolve_pools(const CompiledPolicy& policy, const PodView& pod);

// The pod's nodeSelector holds every label of `pool` (what pool-selector writes).
bool selector_holds(const PodView& pod, const Pool& pool);
// The pod's nodeSelector sets one of `pool`'s keys to another value: pool-selector, which never
// overwrites a key, cannot pin the pod there. Returns that key, or nullptr.
const std::string* selector_contradicts(const PodView& pod, const Pool& pool);

}  // namespace gpu_admission::policy
