// The built-in default policy (webhook/io/default-policy.yaml, embedded at build time).
#pragma once

#include <string_view>

namespace gpu_admission::webhook {

std::string_view default_policy_yaml();
inline constexpr std::string_view kDefaultPolicyName = "<built-in default policy>";

}  // namespace gpu_admission::webhook
