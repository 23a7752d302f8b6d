// Predicates on pod specs and containers, in CEL, that the backstop's rules are made of. Each takes
// CEL expressions naming the spec (a map with the fields of a PodSpec), a container or the metadata
// and reads every field behind has(), so that no object the API server accepts makes one fail.
// Comprehension variables: c (container), e, f, v, m, k, r, n, tol.
#pragma once

#include <string>

#include "policy/config/compiled_policy.h"
#include "webhook/backstop/host_path_regex.h"

namespace gpu_admission::webhook::backstop {

// `body` (about container `c`) holds for some container of any kind: containers, initContainers,
// ephemeralContainers.
std::string any_container(const std::string& spec, const std::string& body);

// securityContext.privileged: true.
std::string container_privileged(const std::string& c);

// hostPID, hostIPC or hostNetwork true.
std::string host_namespaces(const std::string& spec);

// The container asks for a GPU through its resources: a GPU resource of the policy (full, shared,
// fractional, MIG prefix, a GPU device class's extended resource) with a quantity that is not zero.
std::string container_asks_gpu(const policy::CompiledPolicy& policy, const std::string& c);
// Some container does: a GPU pod (DRA claims aside: the claim objects are not in the request).
std::string pod_asks_gpu(const policy::CompiledPolicy& policy, const std::string& spec);

// A device env var set (value or valueFrom), apart from NVIDIA_VISIBLE_DEVICES=void in a
// container that asks for no GPU, or an envFrom prefix that can form one.
std::string container_device_env(const policy::CompiledPolicy& policy, const std::string& c);

// A volumeMount whose mountPath matches `re`.
std::string container_mount_matches(const std::string& c, const PathRegex& re);

// A hostPath volume whose path matches `re`.
std::string host_path_matches(const std::string& spec, const PathRegex& re);

// An annotation key under spec.deviceAnnotationPrefixes (or a prefix without its trailing /);
// `meta` is the metadata.
std::string device_annotation(const policy::CompiledPolicy& policy, const std::string& meta);

// The spec tolerates the taint, with Kubernetes toleration matching.
std::string tolerates(const std::string& spec, const policy::Taint& taint);

// A lower bound of the pod's whole GPUs exceeds `cap` (an int expression): full and shared
// resources and GPU device classes' extended resources (a quantity as units() reads it), in the
// first 16 app and restartable init containers together, or in one init container. Full resources
// count nothing where `converted` (a bool expression, or "false") holds: mig-resources turns them
// into MIG slices there.
std::string pod_gpus_exceed(const policy::CompiledPolicy& policy, const std::string& spec, const std::string& cap,
                            const std::string& converted);

// A ResourceClaim or ResourceClaimTemplate (`root`) with a GPU request that asks for adminAccess, or
// that tolerates a device taint spec.deviceTolerations does not allow.
std::string claim_admin_access(const policy::CompiledPolicy& policy, const std::string& root);
std::string claim_disallowed_toleration(const policy::CompiledPolicy& policy, const std::string& root);

}  // namespace gpu_admission::webhook::backstop
