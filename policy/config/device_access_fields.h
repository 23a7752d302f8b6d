// The policy fields behind two checks of gpu-device-access: the runtime classes GPU pods may use
// (spec.runtimeClasses, spec.pools[].runtimeClasses) and the DRA device tolerations tenants' GPU
// requests may carry (spec.deviceTolerations). Reading and validating them for the policy loader,
// and printing them back for `policy show`. The policy schema keeps the field tables; these readers
// get its error list and its unknown-field check through a FieldReaderSink.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/policy_config.h"

namespace gpu_admission::policy {

struct FieldReaderSink {
  std::function<void(const std::string& path, std::string message)> error;
  // Reports the keys of the mapping at `path` that its field table does not list.
  std::function<void(const Json& object, const std::string& path)> check_fields;
};

// A list of RuntimeClass names: each a DNS-1123 subdomain (what the API server accepts as
// runtimeClassName), listed once. null reads as an empty list.
void read_runtime_classes(const Json& v, const std::string& path, std::vector<std::string>& out,
                          const FieldReaderSink& sink);

// spec.deviceTolerations: [{key, operator, value, effect}], checked as the API server checks a
// request's tolerations (a label key; Exists or Equal; no value with Exists, a label value with
// Equal; an empty key only with Exists; effect empty, NoSchedule or NoExecute).
void read_device_tolerations(const Json& v, const std::string& path, std::vector<TolerationConfig>& out,
                             const FieldReaderSink& sink);

// For `policy show`: the list as the loader reads it back.
Json device_tolerations_to_json(const std::vector<TolerationConfig>& list);

// Lowercase letters, digits, '-' and '.', dot-separated labels each starting and ending with a
// letter or digit, 253 characters at most.
bool is_dns1123_subdomain(std::string_view name);

}  // namespace gpu_admission::policy
