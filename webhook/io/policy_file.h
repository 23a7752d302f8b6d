// Loading a policy file: YAML -> JSON tree with source marks -> PolicyConfig -> CompiledPolicy.
// Every problem is reported as "FILE:LINE:COL: error: PATH: MESSAGE".
#pragma once

#include <string>

#include "policy/config/compiled_policy.h"
#include "policy/base/source.h"

namespace gpu_admission::webhook {

struct PolicyLoad {
  policy::PolicyPtr policy;   // nullptr when there were errors
  policy::Issues issues;      // errors and lint warnings
  std::string source;         // the file name, or "<built-in default policy>"
  bool unusable = false;      // the file could not be read or is not YAML/JSON at all
  std::string carrier;        // "ConfigMap gpu-admission-policy, key policy.yaml" (policy_configmap.h); else empty

  bool ok() const { return policy != nullptr; }
  // Every issue formatted on its own line.
  std::string report() const;
};

// `path` empty: the built-in default policy.
PolicyLoad load_policy_file(const std::string& path);
PolicyLoad load_policy_text(std::string_view text, const std::string& source_name);

}  // namespace gpu_admission::webhook
