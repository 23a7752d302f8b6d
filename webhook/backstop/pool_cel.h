// A pod's pools in CEL, as policy/evaluation/pool_resolution.h resolves them: the pools its
// nodeSelector holds or a required node-affinity term names (`In` on the pool's keys, with the
// nodeSelector), and the pool it is judged in (the one it is pinned to, or the first of several).
#pragma once

#include <string>

#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook::backstop {

// A list(string) expression: the names of the pools pod spec `spec` names, in policy order.
std::string named_pools(const policy::CompiledPolicy& policy, const std::string& spec);

// `body` with `named` bound to named_pools(spec) and `pool` to the name of the pool the pod is
// judged in ('' when none: it names no pool, or names one without being pinned to it).
std::string with_pools(const policy::CompiledPolicy& policy, const std::string& spec, const std::string& body);

}  // namespace gpu_admission::webhook::backstop
