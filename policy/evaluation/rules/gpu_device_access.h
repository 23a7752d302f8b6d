// The parts of gpu-device-access that have a file of their own (docs/adding-a-rule.md: a rule
// with several parts), called in order from the rule's checks in gpu_device_access.cpp. Only the
// rule's files include this.
#pragma once

#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {

// gpu_device_access_runtime.cpp: a GPU pod whose spec.runtimeClassName is not in its pool's
// runtimeClasses (else spec.runtimeClasses), when that list is not empty. A GPU pod without
// runtimeClassName runs with the node's default runtime handler, which the list does not name:
// refused too.
void check_runtime_class(const RuleContext& ctx, RuleOutput& out);

// gpu_device_access_tolerations.cpp: a DRA GPU request of one of the pod's resolved claims with a
// toleration that spec.deviceTolerations does not allow (policy/evaluation/device_tolerations.h).
void check_device_tolerations(const RuleContext& ctx, RuleOutput& out);
// The same for a ResourceClaim or ResourceClaimTemplate on its own: one finding per disallowed
// toleration, at its field in the object.
void check_claim_device_tolerations(const ClaimContext& ctx, RuleOutput& out);

// gpu_device_access_imex.cpp: in an adversarial pool, a DRA request of one of the pod's resolved
// claims that reaches every IMEX channel of a compute domain (RequestGpus::imex_every_channel),
// unless its device class is in spec.deviceClasses.imexAllowed.
void check_imex_channels(const RuleContext& ctx, RuleOutput& out);

}  // namespace gpu_admission::policy
