#include "policy/evaluator.h"

#include <algorithm>

#include "policy/gpu_request.h"
#include "policy/mutations/mutation.h"
#include "policy/rules/rule.h"

namespace gpu_admission::policy {
namespace {

bool term_satisfies(const NodeSelectorTerm& term, std::string_view key, std::string_view value) {
  for (const auto& expr : term.match_expressions) {
    if (expr.key != key || expr.op != "In") continue;
    if (std::find(expr.values.begin(), expr.values.end(), value) != expr.values.end()) return true;
  }
  return false;
}

bool pod_names_pool(const PodView& pod, const Pool& pool) {
  auto in_selector = [&](const std::string& key, const std::string& value) {
    bool found = false;
    return pod.node_selector_value(key, &found) == value && found;
  };
  bool by_selector = std::all_of(pool.node_selector.begin(), pool.node_selector.end(),
                                 [&](const auto& kv) { return in_selector(kv.first, kv.second); });
  if (by_selector) return true;
  // nodeSelector and each affinity term are ANDed; the terms are ORed.
  for (const auto& term : pod.required_node_affinity) {
    bool all = std::all_of(pool.node_selector.begin(), pool.node_selector.end(), [&](const auto& kv) {
      return in_selector(kv.first, kv.second) || term_satisfies(term, kv.first, kv.second);
    });
    if (all) return true;
  }
  return false;
}

}  // namespace

std::vector<const Pool*> named_pools(const CompiledPolicy& policy, const PodView& pod) {
  std::vector<const Pool*> out;
  if (pod.node_selector.empty() && pod.required_node_affinity.empty()) return out;
  for (const auto& pool : policy.pools())
    if (pod_names_pool(pod, pool)) out.push_back(&pool);
  return out;
}

void evaluate(const CompiledPolicy& policy, PodView& pod, const EvalOptions& options, Decision& out) {
  out.clear();
  std::string_view ns = options.namespace_name.empty() ? pod.namespace_name : options.namespace_name;
  if (policy.namespace_exempt(ns)) {
    out.exempt = true;
    out.exempt_by = "namespace";
    return;
  }
  if (!options.username.empty() && policy.username_exempt(options.username)) {
    out.exempt = true;
    out.exempt_by = "username";
    return;
  }

  const Tenant* tenant = policy.tenant_for_namespace(ns);
  std::vector<const Pool*> named = named_pools(policy, pod);
  const bool gpu_pod = compute_gpu_request(policy, pod, nullptr, nullptr).gpu_pod();
  const Pool* pool = nullptr;
  if (!named.empty()) pool = named.front();
  else if (gpu_pod && tenant && tenant->default_pool >= 0) pool = &policy.pools()[tenant->default_pool];
  out.tenant = tenant;
  out.pool = pool;

  if (options.mutate) {
    PodPatcher patcher(pod, out.patch);
    MutationContext ctx{policy, pod, tenant, pool, gpu_pod, !named.empty(), patcher};
    using Fn = bool (*)(MutationContext&);
    constexpr std::array<Fn, kMutationCount> kMutations = {mutate_mig_resources, mutate_tenant_labels,
                                                           mutate_pool_selector};
    for (size_t i = 0; i < kMutationCount; ++i) {
      if (policy.mutation_enabled(static_cast<MutationId>(i))) out.mutated[i] = kMutations[i](ctx);
    }
  }

  std::vector<QuantityProblem> problems;
  GpuRequest gpu = compute_gpu_request(policy, pod, pool, &problems);
  out.gpu_slices = gpu.slices;
  out.slices_per_gpu = gpu.slices_per_gpu;

  RuleContext ctx{policy, pod, tenant, pool, named, gpu, problems};
  for (const RuleDef& rule : rule_table()) {
    Action action = policy.action(rule.id);
    if (action == Action::Off) continue;
    RuleOutput output(rule.id, action, out.findings);
    rule.check(ctx, output);
  }
  out.allowed = !out.has(Action::Deny);
}

}  // namespace gpu_admission::policy
