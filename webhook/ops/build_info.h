// What this binary is and how it was built: the version, the git commit it was built from, and
// the build's flags. Printed by `gpu-admission version` and exported as gpu_admission_build_info.
// The values are fixed when CMake configures the build (webhook/ops/build_info.cpp.in).
#pragma once

#include <string_view>

namespace gpu_admission::webhook {

struct BuildInfo {
  std::string_view version;     // the project version, "0.1.0"
  std::string_view commit;      // abbreviated git commit, "unknown" when not built from a git checkout
  std::string_view build_type;  // CMAKE_BUILD_TYPE: Release, RelWithDebInfo, Debug
  std::string_view compiler;    // "GNU 12.2.0"
  std::string_view arch;        // the -march level, "x86-64-v3"; "default" when none is forced
  std::string_view sanitizers;  // "address,undefined" or "none"
  std::string_view pgo;         // profile-guided optimisation: "off", "generate" or "use"
};

const BuildInfo& build_info();

}  // namespace gpu_admission::webhook
