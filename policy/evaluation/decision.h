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
  Action action;       // Deny, Warn or Audit (Off rules are not run), in the object's mode
  std::string field;   // offending field path, e.g. spec.containers[0].securityContext.privileged
  std::string message; // detail naming the offending containers or fields
  // The spec.exceptions entry that turns this rule off for this object (a view into the compiled
  // policy); empty when none does. An excepted finding never denies, warns or audits: it is
  // reported as excepted, with the action it would have had.
  std::string_view exception = {};
  // The action enforcement would take (`action` before the mode capped it): while observing, a
  // finding enforcement would deny has action Warn or Audit and `enforced` Deny.
  Action enforced = Action::Deny;

  bool excepted() const { return !exception.empty(); }
  // Denied only because of the mode: what "would be denied" means under warn and audit.
  bool would_deny() const { return enforced == Action::Deny && action != Action::Deny && !excepted(); }
};

struct Decision {
  bool allowed = true;
  bool exempt = false;
  std::string_view exempt_by;  // "namespace" or "username" when exempt
  const Tenant* tenant = nullptr;
  // How far the guard acts on this object (its tenant's mode, capped by serve --enforcement).
  Enforcement mode = Enforcement::Enforce;
  // The namespace's labels could not be read and a namespaceSelector tenant might own it: the
  // tenant is unknown (tenant is nullptr, but not because the namespace belongs to no tenant).
  bool tenant_unknown = false;
  const Pool* pool = nullptr;
  std::vector<Finding> findings;
  Patch patch;
  // Under warn and audit the mutations are found but not applied: what they would have written is
  // here, and `patch` stays empty (/validate of such a pod judges it as so mutated).
  Patch withheld_patch;
  std::array<bool, kMutationCount> mutated{};  // which mutations changed (or would change) the pod
  // What a mutation did that the user should hear of at apply time ("converted nvidia.com/gpu: 4
  // to nvidia.com/mig-1g.10gb: 4 in pool a100-secure"); /mutate returns them as warnings.
  std::vector<std::string> notices;
  int64_t gpu_slices = 0;                      // effective GPU request, in compute slices
  int slices_per_gpu = 7;
  // An UPDATE judged in full because it starts or moves the pod: what it does ("removes the pod's
  // last scheduling gate"); empty for every other request.
  std::string_view commit_point;
  std::string gpu_sources;  // pods with DRA claims: "1 nvidia.com/gpu + 2 from claim template two-gpus"

  void clear();
  // Whether a finding that is not excepted has `action`.
  bool has(Action action) const;
};

// Keeps only findings that are not already present in `before` (the same rule, field and message:
// a violation that grows, 9 GPUs becoming 64, is new): used for UPDATE requests that are not commit
// points, which must not be refused for what the existing object already had.
void keep_new_findings(Decision& decision, const Decision& before);

// What each mutation found but withheld (warn, audit) would have done, one line each for the user:
// "would pin to pool a100-secure", "would convert nvidia.com/gpu: 4 to nvidia.com/mig-1g.10gb: 4 in
// pool a100-secure", "would label the pod gpu-admission.io/tenant=alpha, cost-center=cc-1042".
std::vector<std::string> withheld_changes(const Decision& decision);

// Adds the decision of one pod template to the decision of its whole object (kinds with several
// templates, such as ML workloads): denied when any template is, findings of all templates (their fields start
// at the object's root), tenant, mode and pool of the first, patches of all.
void merge_template_decision(Decision& whole, const Decision& one, bool first);

}  // namespace gpu_admission::policy
