// What a ResourceClaim's status and ownership say about who gets its devices, for judging pods
// again when devices are allocated: whether devices are allocated (status.allocation), the
// consumers they are reserved for (status.reservedFor), and, for a claim the resourceclaim
// controller made from a pod's template, the pod that owns it (the controller ownerReference)
// and the pod's claim entry it stands for (the resource.kubernetes.io/pod-claim-name
// annotation). Decoded from the simdjson DOM of a whole claim; strings are views into it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "policy/decoding/pod_decoder.h"  // DecodeError

namespace gpu_admission::policy {

// The annotation the resourceclaim controller puts on a claim it makes from a pod's
// resourceClaimTemplateName entry: that entry's name.
inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

struct ClaimConsumer {
  uint32_t index = 0;          // position in status.reservedFor
  std::string_view api_group;  // "" for pods
  std::string_view resource;   // "pods"
  std::string_view name;
  std::string_view uid;
  bool is_pod() const { return api_group.empty() && resource == "pods"; }
};

struct ClaimStatusView {
  std::string_view uid;               // metadata.uid
  bool allocated = false;             // status.allocation is set
  std::vector<ClaimConsumer> reserved_for;
  std::string_view owner_pod_uid;     // the controller ownerReference of kind Pod (v1), if any
  std::string_view pod_claim_name;    // kPodClaimNameAnnotation
  void clear();
  // True when `consumer` (by uid when both have one, else by name) is in reserved_for.
  bool reserves(const ClaimConsumer& consumer) const;
};

// Decodes the fields above from a ResourceClaim object. Errors name the field
// (`status.reservedFor[1].name: must be a string`); fields not listed are not read.
std::optional<DecodeError> decode_claim_status(simdjson::dom::element object, ClaimStatusView& out);

}  // namespace gpu_admission::policy
