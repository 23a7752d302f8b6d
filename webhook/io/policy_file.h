// Loading a policy file: YAML -> JSON tree with source marks -> PolicyConfig -> CompiledPolicy.
// Every problem is reported as "FILE:LINE:COL: error: PATH: MESSAGE".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "policy/config/compiled_policy.h"
#include "policy/base/source.h"
#include "webhook/io/clock.h"

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

// What a load takes besides the file: the time (lint warns about exceptions that expire within
// 14 days) and serve --enforcement, which caps every tenant's mode.
struct PolicyLoadOptions {
  int64_t now = unix_now();
  std::optional<policy::Enforcement> enforcement;
};

// `path` empty: the built-in default policy.
PolicyLoad load_policy_file(const std::string& path, const PolicyLoadOptions& options = {});
PolicyLoad load_policy_text(std::string_view text, const std::string& source_name,
                            const PolicyLoadOptions& options = {});

}  // namespace gpu_admission::webhook
