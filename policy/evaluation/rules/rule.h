// The shape of a validation rule (Pod Security Admission style): a small pure function with a
// stable ID and a short reason, that reports findings naming the offending containers or fields.
// The evaluator runs the precomputed table of rules whose action is not `off`.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/quoted_value.h"
#include "policy/config/compiled_policy.h"
#include "policy/evaluation/decision.h"
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

using RuleCheck = void (*)(const RuleContext&, RuleOutput&);

struct RuleDef {
  RuleId id;
  std::string_view reason;  // short, e.g. "privileged container"
  RuleCheck check;
};

// One per rule file.
void check_privileged(const RuleContext&, RuleOutput&);
void check_host_namespaces(const RuleContext&, RuleOutput&);
void check_gpu_device_access(const RuleContext&, RuleOutput&);
void check_gpu_cap(const RuleContext&, RuleOutput&);
void check_mps_adversarial(const RuleContext&, RuleOutput&);
void check_gpu_tolerations(const RuleContext&, RuleOutput&);
void check_tenant_pool(const RuleContext&, RuleOutput&);
void check_tenant_label(const RuleContext&, RuleOutput&);
void check_mig_profile(const RuleContext&, RuleOutput&);
void check_gpu_sharing(const RuleContext&, RuleOutput&);

// The table, in RuleId order.
const std::array<RuleDef, kRuleCount>& rule_table();

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
