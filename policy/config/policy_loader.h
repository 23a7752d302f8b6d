// Reads a policy document (already turned into a JSON tree by the caller; policy/ has no YAML
// code) into a PolicyConfig. Every problem is collected with its field path and source mark:
// unknown fields, wrong types, bad enum values, missing required fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"

#include "policy/config/policy_config.h"
#include "policy/base/source.h"

namespace gpu_admission::policy {

inline constexpr std::string_view kPolicyApiVersion = "gpu-admission.io/v1alpha1";
inline constexpr std::string_view kPolicyKind = "GpuAdmissionPolicy";

struct PolicyLoadResult {
  PolicyConfig config;
  Issues issues;
};

PolicyLoadResult load_policy_config(const Json& document, const SourceMap& marks);

// A field the loader accepts: `object` is the path of the mapping that holds it, `[]` standing for
// any item of a list ("spec.pools[].mig"; "" for the document itself), `name` its key.
struct PolicyField {
  std::string_view object;
  std::string_view name;
  std::string path() const;  // "spec.pools[].mig.strategy"
};

// Every field of every mapping whose keys the loader checks, from the tables its "unknown field"
// errors list. Not included: the keys of spec.rules and spec.mutations (the rule IDs and mutation
// names of policy/base/ids.h) and of free string maps (nodeSelector, labels, matchLabels).
std::vector<PolicyField> accepted_policy_fields();

// The effective policy as a JSON tree (every default spelled out), for `policy show`.
Json policy_config_to_json(const PolicyConfig& config);

}  // namespace gpu_admission::policy
