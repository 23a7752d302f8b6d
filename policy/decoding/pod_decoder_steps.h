// The pod decoder's steps, one per part of a pod, each reading its part with the reader of the
// pass (errors are kept in the reader) into the PodView. pod_decoder.cpp walks the object and its
// spec and calls them; container_decoder.cpp and pod_spec_decoder.cpp hold them. Internal to
// policy/decoding.
#pragma once

#include <cstdint>

#include "policy/decoding/json_reader.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy::pod_decoding {

namespace od = simdjson::ondemand;

// One entry of spec.containers, initContainers or ephemeralContainers, appended to pod.containers.
bool decode_container(json::Reader& r, PodView& pod, od::value& v, ContainerKind kind, uint32_t index, const Loc& at);

// spec.resourceClaims, spec.affinity (required node affinity), spec.tolerations, spec.volumes.
bool decode_resource_claims(json::Reader& r, PodView& pod, od::value& v, const Loc& at);
bool decode_scheduling_group(json::Reader& r, PodView& pod, od::value& v, const Loc& at);
bool decode_affinity(json::Reader& r, PodView& pod, od::value& v, const Loc& at);
bool decode_tolerations(json::Reader& r, PodView& pod, od::value& v, const Loc& at);
bool decode_volumes(json::Reader& r, PodView& pod, od::value& v, const Loc& at);

}  // namespace gpu_admission::policy::pod_decoding
