// Reads a policy document (already turned into a JSON tree by the caller; policy/ has no YAML
// code) into a PolicyConfig. Every problem is collected with its field path and source mark:
// unknown fields, wrong types, bad enum values, missing required fields.
#pragma once

#include "policy/json.h"

#include "policy/policy_config.h"
#include "policy/source.h"

namespace gpu_admission::policy {

inline constexpr std::string_view kPolicyApiVersion = "gpu-admission.io/v1alpha1";
inline constexpr std::string_view kPolicyKind = "GpuAdmissionPolicy";

struct PolicyLoadResult {
  PolicyConfig config;
  Issues issues;
};

PolicyLoadResult load_policy_config(const Json& document, const SourceMap& marks);

// The effective policy as a JSON tree (every default spelled out), for `policy show`.
Json policy_config_to_json(const PolicyConfig& config);

}  // namespace gpu_admission::policy
