// The policy fields of a staged rollout that the policy schema (policy_schema.h) reads with
// helpers of their own: spec.rules and tenants[].rules (an action per rule), and the expiry time
// of spec.exceptions[]. Reading and validating them, and printing them back for `policy show`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/base/ids.h"
#include "policy/base/json.h"
#include "policy/config/field_reader.h"
#include "policy/config/policy_config.h"

namespace gpu_admission::policy {

// A mapping of rule ID to action ({gpu-cap: audit}); unknown rule IDs and actions are errors.
void read_rule_actions(FieldReader& r, const Json& v, const std::string& path,
                       std::vector<std::pair<RuleId, Action>>& out);

// An RFC 3339 date-time ("2026-12-31T23:59:59Z", "2026-12-31T18:00:00.5-05:00") as Unix seconds
// (fractions dropped); nullopt when it is not one. Lower-case t and z are accepted, as Go's parser does.
std::optional<int64_t> parse_rfc3339(std::string_view text);

// For `policy show`.
Json rule_actions_to_json(const std::vector<std::pair<RuleId, Action>>& actions);

}  // namespace gpu_admission::policy
