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

bool in_selector(const PodView& pod, const std::string& key, const std::string& value) {
  bool found = false;
  return pod.node_selector_value(key, &found) == value && found;
}

bool selector_names(const PodView& pod, const Pool& pool) {
  return std::all_of(pool.node_selector.begin(), pool.node_selector.end(),
                     [&](const auto& kv) { return in_selector(pod, kv.first, kv.second); });
}

// nodeSelector and an affinity term are ANDed: the term names the pool when every pool label is
// required by one or the other.
bool term_names(const PodView& pod, const NodeSelectorTerm& term, const Pool& pool) {
  return std::all_of(pool.node_selector.begin(), pool.node_selector.end(), [&](const auto& kv) {
    return in_selector(pod, kv.first, kv.second) || term_satisfies(term, kv.first, kv.second);
  });
}

bool pod_names_pool(const PodView& pod, const Pool& pool) {
  if (selector_names(pod, pool)) return true;
  return std::any_of(pod.required_node_affinity.begin(), pod.required_node_affinity.end(),
                     [&](const NodeSelectorTerm& term) { return term_names(pod, term, pool); });
}

}  // namespace

bool pod_confined_to_pool(const PodView& pod, const Pool& pool) {
  if (selector_names(pod, pool)) return true;
  // Terms are ORed: the pod is confined only when every term keeps it in the pool.
  const auto& terms = pod.required_node_affinity;
  return !terms.empty() &&
         std::all_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& t) { return term_names(pod, t, pool); });
}

std::vector<const Pool*> named_pools(const CompiledPolicy& policy, const PodView& pod) {
  std::vector<const Pool*> out;
  if (pod.node_selector.empty() && pod.required_node_affinity.empty()) return out;
  for (const auto& pool : policy.pools())
    if (pod_names_pool(pod, pool)) out.push_back(&pool);
  return out;
}

namespace {

void run_mutations(const CompiledPolicy& policy, MutationContext& ctx, Decision& out) {
  using Fn = bool (*)(MutationContext&);
  constexpr std::array<Fn, kMutationCount> kMutations = {mutate_mig_resources, mutate_tenant_labels,
                                                         mutate_pool_selector, mutate_hide_gpus};
  for (size_t i = 0; i < kMutationCount; ++i) {
    if (policy.mutation_enabled(static_cast<MutationId>(i))) out.mutated[i] = kMutations[i](ctx);
  }
}

}  // namespace

bool exempt(const CompiledPolicy& policy, std::string_view ns, const EvalOptions& options, Decision& out) {
  if (policy.namespace_exempt(ns)) out.exempt_by = "namespace";
  else if (!options.username.empty() && policy.username_exempt(options.username)) out.exempt_by = "username";
  else return false;
  out.exempt = true;
  return true;
}

void evaluate(const CompiledPolicy& policy, PodView& pod, const EvalOptions& options, Decision& out) {
  out.clear();
  std::string_view ns = options.namespace_name.empty() ? pod.namespace_name : options.namespace_name;
  if (exempt(policy, ns, options, out)) return;

  const Tenant* tenant = policy.tenant_for_namespace(ns, options.namespace_labels);
  std::vector<const Pool*> named = named_pools(policy, pod);
  const bool gpu_pod = compute_gpu_request(policy, pod, nullptr, nullptr, options.claims, ns).gpu_pod();
  // A pod that names a pool but could also land elsewhere (an affinity term that does not keep
  // it in the pool) is treated like one that names none: it is evaluated in its tenant's
  // default pool, where pool-selector pins it (and without that pin it is "not pinned").
  const bool confined = !named.empty() && pod_confined_to_pool(pod, *named.front());
  const Pool* pool = nullptr;
  if (confined) pool = named.front();
  else if (gpu_pod && tenant && tenant->default_pool >= 0) pool = &policy.pools()[tenant->default_pool];
  out.tenant = tenant;
  out.pool = pool;

  std::vector<QuantityProblem> problems;
  GpuRequest gpu = compute_gpu_request(policy, pod, pool, &problems, options.claims, ns);
  if (options.mutate) {
    PodPatcher patcher(pod, out.patch);
    MutationContext ctx{policy, pod, tenant, pool, gpu_pod, confined, gpu.claims, patcher};
    run_mutations(policy, ctx, out);
    if (!out.patch.empty()) {  // mutations may rename resources: count the pod as it now is
      problems.clear();
      gpu = compute_gpu_request(policy, pod, pool, &problems, options.claims, ns);
    }
  }
  // Judged as it now is: a pin that a mutation added counts, one that was not added does not.
  const bool pinned = pool && (confined || pod_confined_to_pool(pod, *pool));

  out.gpu_slices = gpu.slices;
  out.slices_per_gpu = gpu.slices_per_gpu;
  if (!gpu.claims.entries.empty()) out.gpu_sources = gpu_sources_text(gpu);

  RuleContext ctx{policy, pod, ns, tenant, pool, pinned, options.old_pod, named, gpu, problems};
  for (const RuleDef& rule : rule_table()) {
    Action action = policy.action(rule.id);
    if (action == Action::Off) continue;
    RuleOutput output(rule.id, action, out.findings);
    rule.check(ctx, output);
  }
  out.allowed = !out.has(Action::Deny);
}

}  // namespace gpu_admission::policy
