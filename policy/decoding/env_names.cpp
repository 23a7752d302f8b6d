#include "policy/decoding/env_names.h"

#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// Both prefixes the names read begin with hold "A_": the scan looks for that pair (and for
// backslashes), then checks whether a name read starts where it would.
constexpr std::string_view kDevicePrefix = "NVIDIA_";  // every kDeviceEnvVars name begins so
constexpr size_t kDevicePair = 5;                      // "A_" at 5 in NVIDIA_
constexpr size_t kMpsPair = 3;                         // and at 3 in CUDA_MPS_
static_assert(kDevicePrefix.substr(kDevicePair, 2) == "A_" && kMpsEnvPrefix.substr(kMpsPair, 2) == "A_");
constexpr bool all_device_vars_begin_with_prefix() {
  for (auto var : kDeviceEnvVars)
    if (!var.starts_with(kDevicePrefix)) return false;
  return true;
}
static_assert(all_device_vars_begin_with_prefix(), "the scan finds device env vars by the A_ of NVIDIA_");

bool starts_device_var(std::string_view rest) {
  for (auto var : kDeviceEnvVars)
    if (rest.starts_with(var)) return true;
  return false;
}

}  // namespace

bool env_sign_at(std::string_view json, size_t at) {
  if (json[at] == '\\') return true;
  return (at >= kDevicePair && starts_device_var(json.substr(at - kDevicePair))) ||
         (at >= kMpsPair && json.substr(at - kMpsPair).starts_with(kMpsEnvPrefix));
}

}  // namespace gpu_admission::policy
