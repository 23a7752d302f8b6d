// Inputs for the benchmarks: AdmissionReview bodies of realistic sizes and a large policy.
#pragma once

#include <string>

#include "policy/base/json.h"

namespace gpu_admission::bench {

// (a) ~4 KB review of a typical GPU training pod.
std::string training_pod_review();
// (b) ~40 KB review: many containers, env vars and volumes.
std::string large_pod_review();
// (c) a Deployment whose template is the training pod.
std::string deployment_review();
// (e) a policy of 200 tenants, 2,000 namespace patterns and 20 pools (YAML text).
std::string large_policy_yaml();

// Cluster state: the objects the stand-in API server (cluster_standin.cpp) serves and
// the reviews bench/load.sh sends to a `serve --cluster required` connected to it. The default
// policy applies: namespaces ml-team-NNN belong to tenant platform (pool h100-shared, whole GPUs,
// default cap of 8), research-team-NNN to research (pool a100-mig, MIG slices, cap 2).
//
// The namespace of the DRA pod and the CPU pod below.
inline constexpr const char* kDraNamespace = "ml-team-042";
// The two ResourceClaims the DRA pod names (2 + 1 whole GPUs of gpu.nvidia.com).
Json dra_pod_claims();
// Namespace i of `count`: the first half ml-team-NNN, the rest research-team-NNN, with the
// tenant label and a team label.
Json cluster_namespace(int i, int count);
// Background ResourceClaim i, in namespace i % namespaces (names claim-<i>): whole GPUs of
// gpu.nvidia.com (counts 1, 2, 4 or 8; some with two requests or firstAvailable) in ml-team
// namespaces, MIG slices of mig.nvidia.com pinned to a profile in research-team ones.
Json cluster_claim(int i, int namespaces);
// (f) ~4 KB review of a GPU pod whose GPUs come from the two claims of dra_pod_claims(), named
// by resourceClaimName, as it arrives at /mutate (bench_admission.cpp derives the /validate body
// by applying the /mutate patch).
std::string dra_pod_review();
// (g) ~4 KB review of a pod without GPUs in the GPU tenant's namespace: one init container and
// four app containers, none of which asks for a GPU, so hide-gpus patches every one of them.
std::string cpu_pod_review();

}  // namespace gpu_admission::bench
