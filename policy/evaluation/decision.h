// What evaluating one pod produces: findings (rule results with their actions), the patch of
// the mutations, and the tenant and pool the pod was evaluated in.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/compiled_policy.h"
#include "policy/base/ids.h"
#include "policy/evaluation/patch.h"

namespace gpu_admission::policy {

struct Finding {
  RuleId rule;
  Action action;       // Deny, Warn or Audit (Off rules are not run)
  std::string field;   // offending field path, e.g. spec.containers[0].securityContext.privileged
  std::string message; // detail naming the offending containers or fields
};

struct Decision {
  bool allowed = true;
  bool exempt = false;
  std::string_view exempt_by;  // "namespace" or "username" when exempt
  const Tenant* tenant = nullptr;
  const Pool* pool = nullptr;
  std::vector<Finding> findings;
  Patch patch;
  std::array<bool, kMutationCount> mutated{};  // which mutations changed the pod
  int64_t gpu_slices = 0;                      // effective GPU request, in compute slices
  int slices_per_gpu = 7;
  std::string gpu_sources;  // pods with DRA claims: "1 nvidia.com/gpu + 2 from claim template two-gpus"

  void clear();
  bool has(Action action) const;
};

// Keeps only findings that are not already present (same rule and field) in `before`: used for
// UPDATE requests, which must not be refused for what the existing object already had.
void keep_new_findings(Decision& decision, const Decision& before);

// Adds the decision of one pod template to the decision of its whole object (kinds with several
// templates, such as ML workloads): denied when any template is, findings of all templates (their fields start
// at the object's root), tenant and pool of the first, patches of all.
void merge_template_decision(Decision& whole, const Decision& one, bool first);

}  // namespace gpu_admission::policy
