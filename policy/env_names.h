// Whether a container's env list can matter to a rule, decided from its JSON text before it is
// read: most lists (a dozen configuration variables) name no variable a rule reads, and the pod
// decoder then skips them whole instead of reading every entry.
#pragma once

#include <string_view>

namespace gpu_admission::policy {

// True when `json`, an env list's JSON text, could hold an entry named one of kDeviceEnvVars or
// beginning with kMpsEnvPrefix (policy/tenant_labels.h): it contains one of those names, or a
// backslash (an escape such as \u004e could spell one). False means no entry can: a name in the
// decoded object is these bytes, as sent. `json` must be followed by SIMDJSON_PADDING readable
// bytes (it lies inside a document simdjson iterates).
bool env_may_name_read(std::string_view json);

}  // namespace gpu_admission::policy
