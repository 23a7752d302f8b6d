// Decodes a ResourceClaim or ResourceClaimTemplate from a simdjson DOM element into a
// ClaimView, for the API versions Kubernetes 1.34+ serves: resource.k8s.io/v1 and /v1beta2
// (a request's fields under `exactly:`, or `firstAvailable:` subrequests) and /v1beta1 (the
// fields flat on the request, or `firstAvailable:`). As in the pod decoder, a field we read
// that has the wrong type is an error naming its full path from the object root
// (`spec.spec.devices.requests[0].firstAvailable[2].deviceClassName`), and fields we do not
// need are not looked at: the opaque parameters of drivers other than gpu.nvidia.com and
// compute-domain.nvidia.com, whose shape is theirs, are not read at all.
#pragma once

#include <optional>
#include <string_view>

#include <simdjson.h>

#include "policy/dra/claim_view.h"
#include "policy/decoding/pod_decoder.h"  // DecodeError, find_duplicate_keys

namespace gpu_admission::policy {

// The drivers whose opaque configuration we read: the GPU driver's (GpuConfig, MigDeviceConfig:
// sharing.strategy, whose mpsConfig, multiUser included, is MPS's business) and the compute-domain
// driver's (ComputeDomainChannelConfig: allocationMode; ComputeDomainDaemonConfig).
inline constexpr std::string_view kNvidiaGpuDriver = "gpu.nvidia.com";
inline constexpr std::string_view kComputeDomainDriver = "compute-domain.nvidia.com";

// "ResourceClaim" -> Claim, "ResourceClaimTemplate" -> Template; false for other kinds.
// `out` may be null.
bool is_claim_kind(std::string_view kind, ClaimKind* out);

// "ResourceClaim" / "ResourceClaimTemplate".
std::string_view claim_kind_name(ClaimKind kind);

// True for resource.k8s.io/v1, /v1beta2 and /v1beta1. False for everything else, notably the
// old /v1alpha2 and /v1alpha3 shapes (not served by Kubernetes 1.34+; callers skip those).
bool claim_api_version_supported(std::string_view api_version);

// Decodes `object` (kind ResourceClaim or ResourceClaimTemplate, a supported apiVersion) into
// `out`, which is cleared first. Errors: a missing or unknown kind or apiVersion (field `kind`
// / `apiVersion`), a field of the wrong type, a missing deviceClassName, a v1/v1beta2 request
// with neither or both of `exactly` and `firstAvailable`, an empty `firstAvailable`, an
// allocationMode other than ExactCount or All, a count that is not an integer of at least 1.
// Objects with duplicate keys are refused unless `check_duplicates` is false (the caller has
// checked a document containing `object`). Views in `out` point into the parser's document.
std::optional<DecodeError> decode_claim(simdjson::dom::element object, ClaimView& out, bool check_duplicates = true);

// The same for a known kind (the AdmissionReview's request.kind); the object's own `kind` is
// not read. `assumed_api_version` ("resource.k8s.io/v1"), when not empty, is the apiVersion of
// an object that has none (the items of a list carry neither apiVersion nor kind); an apiVersion
// the object has is read as always. `out.api_version` may then view `assumed_api_version`: keep
// it alive as long as `out`.
std::optional<DecodeError> decode_claim_as(simdjson::dom::element object, ClaimKind kind, ClaimView& out,
                                           bool check_duplicates = true, std::string_view assumed_api_version = {});

}  // namespace gpu_admission::policy
