// Inputs for the benchmarks: AdmissionReview bodies of realistic sizes and a large policy.
#pragma once

#include <string>

namespace gpu_admission::bench {

// (a) ~4 KB review of a typical GPU training pod.
std::string training_pod_review();
// (b) ~40 KB review: many containers, env vars and volumes.
std::string large_pod_review();
// (c) a Deployment whose template is the training pod.
std::string deployment_review();
// (e) a policy of 200 tenants, 2,000 namespace patterns and 20 pools (YAML text).
std::string large_policy_yaml();

}  // namespace gpu_admission::bench
