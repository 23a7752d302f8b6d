// DRA device tolerations (Kubernetes 1.33+): a request's `tolerations` let it be allocated devices
// whose device taints they match, and device taints fence broken GPUs or reserve GPUs for someone
// else. spec.deviceTolerations lists what tenants may tolerate; gpu-device-access refuses a GPU
// request with a toleration that no allowed entry covers.
//
// "Allowed" is containment: the requested toleration T is allowed by an entry A when A tolerates
// every device taint T tolerates (matching as in Kubernetes: keys equal, or A's key empty with
// Exists; Exists, or Equal with equal values; A's effect empty or equal to the taint's). So
// A {key: k, Exists} allows T {key: k, Equal, value: v}, and A {key: k, Equal, v, NoSchedule}
// allows neither T {key: k, Exists} nor T {key: k, Equal, v} without an effect (which also
// tolerates NoExecute). A T with an empty key and Exists tolerates every taint: only an A with an
// empty key and Exists (and no effect, unless T names the same effect) allows it. One entry must
// cover T on its own; a T only a union of entries would cover is refused (sound, not complete).
// An operator other than Exists and Equal ("" is Equal) never allows and is never allowed.
#pragma once

#include <string>
#include <vector>

#include "policy/config/compiled_policy.h"
#include "policy/dra/claim_view.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

// True when `allowed` tolerates every device taint that `requested` tolerates.
bool toleration_allows(const Toleration& allowed, const Toleration& requested);
// True when some entry of `allowed` does (spec.deviceTolerations).
bool device_toleration_allowed(const std::vector<TolerationConfig>& allowed, const Toleration& requested);

// A toleration of a claim's GPU request that spec.deviceTolerations does not allow.
struct DisallowedToleration {
  const DeviceRequestView* request;
  const DeviceSubrequest* subrequest;  // the request itself, or its firstAvailable alternative
  const Toleration* toleration;
  std::string field;  // in the claim, from spec.devices: "requests[0].exactly.tolerations[1]"
};

// Every toleration of a GPU request (a subrequest whose device class is a spec.deviceClasses
// class) of `claim` that spec.deviceTolerations does not allow, in claim order, appended to `out`.
void find_disallowed_tolerations(const CompiledPolicy& policy, const ClaimView& claim,
                                 std::vector<DisallowedToleration>& out);

// "{key: k, operator: Exists, effect: NoSchedule}", as a person would write it.
std::string toleration_text(const Toleration& t);

// What a finding says about `d`: `request "gpu" tolerates device taints {...} (at ...), which
// spec.deviceTolerations does not allow ...` ("gpu/slice" for a firstAvailable subrequest).
std::string disallowed_toleration_message(const ClaimView& claim, const DisallowedToleration& d);

}  // namespace gpu_admission::policy
