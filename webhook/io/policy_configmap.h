// A policy carried in a v1 ConfigMap (what the Helm chart and deploy/policy-configmap.yaml
// install: the policy document under data key `policy.yaml`), read for `policy lint`,
// `policy show` and `check`/`test --policy`, so the file a cluster applies can be linted as
// it is. The key is the one data key holding a GpuAdmissionPolicy document (else `policy.yaml`,
// else the only key); no such key, or several, is an error listing the keys.
//
// Problems inside the embedded document name the ConfigMap, the key and the line:column within
// the document, and point at the file's own line and column when the value is a literal block
// scalar (`policy.yaml: |`), whose lines map one to one onto the file's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "webhook/io/policy_file.h"

namespace gpu_admission::webhook {

// Loads `path` ("-": standard input; empty: the built-in policy) as a GpuAdmissionPolicy file
// or as a ConfigMap that carries one. `load.carrier` names the ConfigMap and key when it was one.
PolicyLoad load_policy_document(const std::string& path);
PolicyLoad load_policy_document_text(std::string_view text, const std::string& source_name);

// The policy inside a ConfigMap object given as JSON (or YAML) text, as an admission request
// carries it (webhook/admission/policy_review.h), checked as `policy lint` checks it. Each problem
// reads "KEY:LINE:COL: PATH: MESSAGE": the data key holding the policy and the line and column
// within that key's value (a ConfigMap without a usable key: its problem alone).
struct ConfigMapPolicyCheck {
  std::string key;                    // the data key holding the policy ("" when none was chosen)
  PolicyLoad load;                    // the policy, or its problems (marks within the key's value)
  std::vector<std::string> errors;    // formatted as above
  std::vector<std::string> warnings;
};
ConfigMapPolicyCheck check_configmap_policy(std::string_view object_text, const PolicyLoadOptions& options = {});

}  // namespace gpu_admission::webhook
