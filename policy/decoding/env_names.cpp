#include "policy/decoding/env_names.h"

#include <array>

#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// Every name read holds "A_" (NVIDIA_..., CUDA_...): the scan looks for that pair (and for
// backslashes), then checks whether a name read starts where its first "A_" would put it.
struct ReadName {
  std::string_view text;
  size_t pair;  // where its first "A_" is
};

constexpr auto kReadNames = [] {
  std::array<ReadName, kDeviceEnvVars.size() + 1> out{};
  for (size_t i = 0; i < kDeviceEnvVars.size(); ++i) out[i] = {kDeviceEnvVars[i], kDeviceEnvVars[i].find("A_")};
  out.back() = {kMpsEnvPrefix, kMpsEnvPrefix.find("A_")};
  return out;
}();

constexpr bool every_name_holds_pair() {
  for (const ReadName& name : kReadNames)
    if (name.pair == std::string_view::npos) return false;
  return true;
}
static_assert(every_name_holds_pair(), "the scan finds the names read by their \"A_\"");

}  // namespace

bool env_sign_at(std::string_view json, size_t at) {
  if (json[at] == '\\') return true;
  for (const ReadName& name : kReadNames)
    if (at >= name.pair && json.substr(at - name.pair).starts_with(name.text)) return true;
  return false;
}

}  // namespace gpu_admission::policy
