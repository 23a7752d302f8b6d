// The shape of a validation rule (Pod Security Admission style): a line in policy/base/rules.def
// (stable ID, short reason, categories) and one file here that defines the rule's entry: small
// pure functions that report findings naming the offending containers or fields, and what they
// refuse. The evaluator walks the registry and runs each rule whose action is not `off`.
// docs/adding-a-rule.md has the steps.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/quoted_value.h"
#include "policy/config/compiled_policy.h"
#include "policy/evaluation/decision.h"
#include "policy/dra/claim_gpus.h"
#include "policy/dra/claim_view.h"
#include "policy/dra/gpu_request.h"
#include "policy/views/pod_view.h"
#include "policy/evaluation/pool_resolution.h"

namespace gpu_admission::policy {

// Everything a rule may look at: the pod as it is judged (after mutation when mutations ran,
// else as received), and what the evaluator resolved once for all rules.
struct RuleContext {
  const CompiledPolicy& policy;
  const PodView& pod;
  std::string_view namespace_name;      // where the pod is created
  const Tenant* tenant;                 // nullptr: unmapped namespace
  const Pool* pool;                     // nullptr: no pool
  bool pinned;                          // the pod (as judged) can only be scheduled in `pool`
  const PodView* old_pod;               // UPDATE: the object before the change; else nullptr
  const NamedPools& named_pools;  // pools the pod names itself (0, 1 or more)
  const GpuRequest& gpu;
  const std::vector<QuantityProblem>& quantity_problems;
  // tenant is nullptr because the namespace's labels could not be read, not because it has none.
  bool tenant_unknown = false;

  // Field path with the workload prefix: field("spec.hostPID") -> "spec.template.spec.hostPID".
  std::string field(std::string_view pod_relative) const;
};

class RuleOutput {
 public:
  RuleOutput(RuleId rule, Action action, std::vector<Finding>& sink) : rule_(rule), action_(action), sink_(sink) {}
  void report(std::string field, std::string message) {
    sink_.push_back({rule_, action_, std::move(field), std::move(message)});
  }

 private:
  RuleId rule_;
  Action action_;
  std::vector<Finding>& sink_;
};

// A ResourceClaim or ResourceClaimTemplate judged on its own admission, with its namespace's
// tenant. It names no pool (the pod that uses it is judged again with its pool), so its GPUs are
// counted as in no pool: a pinned MIG profile as its largest share on any model.
struct ClaimContext {
  const CompiledPolicy& policy;
  const ClaimView& claim;
  const ClaimGpus& gpus;
  const Tenant* tenant;  // nullptr: unmapped namespace
  int slices_per_gpu;

  // A request's field path: "spec.devices.requests[0]" (a template's under spec.spec).
  std::string request_field(const RequestGpus& r) const;
};

using RuleCheck = void (*)(const RuleContext&, RuleOutput&);
using ClaimCheck = void (*)(const ClaimContext&, RuleOutput&);

// What a rule's own file defines (as k<Enum>Rule, the Enum of its rules.def line): its checks
// and, for the generated reference docs/rules.md, what they refuse. Its ID, short reason and
// categories are its rules.def line (policy/base/ids.h), so that config/ can list rules too.
struct RuleEntry {
  RuleCheck pod = nullptr;          // judges a pod or a workload's pod template; always set
  std::string_view refuses = {};    // what `pod` refuses: Markdown, one paragraph
  ClaimCheck claim = nullptr;       // judges a claim on its own; nullptr: claims only through pods
  std::string_view claim_refuses = {};  // what `claim` refuses: set exactly when `claim` is
  // Judges a PodGroup's claims (evaluate_pod_group): `pod` of the context is a pod of the group
  // with no containers whose spec.resourceClaims are the group's, so fields name the group's
  // entries. nullptr: PodGroups only through their pods.
  RuleCheck group = nullptr;
  std::string_view group_refuses = {};  // what `group` refuses: set exactly when `group` is
  std::string_view source = {};     // "policy/evaluation/rules/x.cpp", where it is defined (set by rule_entry)
};

// Checks an entry at compile time (a rule without its pod check or its texts does not build)
// and records the file it is defined in:
//   constinit const RuleEntry kPrivilegedRule = rule_entry({.pod = check_privileged, .refuses = "..."});
// (__builtin_FILE, which g++ and clang have, rather than std::source_location, which clang 14
// lacks.)
consteval RuleEntry rule_entry(RuleEntry entry, const char* where = __builtin_FILE()) {
  if (!entry.pod || entry.refuses.empty()) throw "a rule entry needs its pod check and what it refuses";
  if (!entry.claim != entry.claim_refuses.empty()) throw "a claim check comes with what it refuses, and only then";
  if (!entry.group != entry.group_refuses.empty()) throw "a group check comes with what it refuses, and only then";
  const std::string_view file = where;
  const size_t at = file.rfind("policy/evaluation/rules/");
  if (at == std::string_view::npos) throw "a rule entry is defined in its file in policy/evaluation/rules/";
  entry.source = file.substr(at);
  return entry;
}

// One entry per line of rules.def, each defined in its rule's file: a rule whose file does not
// define its entry fails to link ("undefined reference to ...k<Enum>Rule").
#define GPU_ADMISSION_RULE(Enum, id, reason, categories) extern const RuleEntry k##Enum##Rule;
#include "policy/base/rules.def"
#undef GPU_ADMISSION_RULE

// The entries, in RuleId order (registry.cpp, generated from rules.def).
const std::array<const RuleEntry*, kRuleCount>& rule_entries();

// Runs one kind of check of the rules (`&RuleEntry::pod`, `::claim` or `::group`): that of every
// rule that has one and that `tenant`'s policy does not turn off, each adding its findings to
// `findings` in rule order.
template <typename Check, typename Context>
void run_rule_checks(const CompiledPolicy& policy, const Tenant* tenant, Check RuleEntry::*check, const Context& ctx,
                     std::vector<Finding>& findings) {
  const auto& rules = rule_entries();
  for (size_t i = 0; i < kRuleCount; ++i) {
    const Check run = rules[i]->*check;
    if (!run) continue;
    const RuleId id = static_cast<RuleId>(i);
    const Action action = policy.action(id, tenant);
    if (action == Action::Off) continue;
    RuleOutput output(id, action, findings);
    run(ctx, output);
  }
}

// Small helpers shared by rules. Values a tenant wrote are shown through quoted() / bounded() /
// quoted_key() (policy/base/quoted_value.h): at most 256 bytes of each.
std::string container_label(const ContainerView& c);         // container "main" / init container "setup"
std::string resource_field(const RuleContext& ctx, const ContainerView& c, bool limits, std::string_view resource);
std::string claim_field(const RuleContext& ctx, const PodClaimGpus& claim);  // spec.resourceClaims[i]
// What a rule says of a pod claim it cannot judge because the claim or template was not found:
// "cannot <what> of ResourceClaimTemplate x: not found" (or that the entry names nothing).
// Rules fail closed on such a claim wherever its content could matter.
std::string unresolved_claim_message(const PodClaimGpus& claim, std::string_view what);

// One node constraint of the pod on a label: its nodeSelector entry, or a required node-affinity
// requirement on it (any operator) in any of the ORed terms.
struct NodeConstraint {
  std::string field;                         // spec.nodeSelector["k"] / ...nodeSelectorTerms[t].matchExpressions[e]
  bool selector = false;                     // a nodeSelector entry (equality with values[0])
  std::string_view key;
  std::string_view op;                       // the affinity operator as written ("" for nodeSelector)
  std::span<const std::string_view> values;  // the nodeSelector value, or the requirement's values
  std::string describe() const;              // `k=v`, `k NotIn [a, b]`, `k Exists`
};

// Calls visit(const NodeConstraint&) for every node constraint of the pod on `key`.
template <typename Visit>
void for_each_node_constraint(const RuleContext& ctx, std::string_view key, Visit visit) {
  for (const auto& entry : ctx.pod.node_selector) {
    if (entry.first != key) continue;
    visit(NodeConstraint{ctx.field("spec.nodeSelector" + quoted_key(key)), true, key, "",
                         std::span<const std::string_view>(&entry.second, 1)});
  }
  const auto& terms = ctx.pod.required_node_affinity;
  for (size_t t = 0; t < terms.size(); ++t) {
    for (size_t e = 0; e < terms[t].match_expressions.size(); ++e) {
      const NodeSelectorRequirement& expr = terms[t].match_expressions[e];
      if (expr.key != key) continue;
      visit(NodeConstraint{ctx.field("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                                     "nodeSelectorTerms[" + std::to_string(t) + "].matchExpressions[" +
                                     std::to_string(e) + "]"),
                           false, key, expr.op, expr.values});
    }
  }
}

}  // namespace gpu_admission::policy
