// The backstop's checks of gpu-tolerations, gpu-cap, tenant-pool and tenant-label (see
// rule_checks.h): the parts that need neither cluster state nor a mutation. Mutations are what
// tell a pod's pool when it names none and give it its tenant's labels, so "not pinned" and "lacks
// its labels" stay with the webhook: in an outage of both webhooks they would refuse every pod.
#include <vector>

#include "policy/base/tenant_labels.h"
#include "webhook/backstop/cel_text.h"
#include "webhook/backstop/pod_cel.h"
#include "webhook/backstop/pool_cel.h"
#include "webhook/backstop/rule_checks.h"

namespace gpu_admission::webhook::backstop {
namespace {

constexpr const char* kSuffix = " (gpu-admission backstop: a ValidatingAdmissionPolicy that acts while the webhook cannot)";

std::string tolerates_all(const std::vector<policy::Taint>& taints) {
  std::vector<std::string> parts;
  for (const auto& t : taints) parts.push_back(tolerates("t.spec", t));
  return all_of(parts);
}

// The tenant's label keys with the values tenant-labels gives them.
std::vector<std::pair<std::string, std::string>> tenant_labels(const policy::Tenant& t) {
  std::vector<std::pair<std::string, std::string>> out = {{std::string(policy::kTenantLabelKey), t.name}};
  for (const auto& kv : t.labels) out.push_back(kv);
  return out;
}

// The pod's labels `labels` claim a tenant other than its own, or set one of its tenant's label
// keys to another value. With `old` (the old object's labels), only when the old object did not
// already carry that label with that value; and removing one the old object had.
std::string labels_violation(const policy::CompiledPolicy& policy, const std::string& labels, const std::string& old) {
  const std::string key = quote(policy::kTenantLabelKey);
  auto unchanged = [&](const std::string& k) {
    return old.empty() ? std::string() : " && !(" + k + " in " + old + " && " + old + "[" + k + "] == " + labels + "[" + k + "])";
  };
  std::vector<std::string> parts;
  parts.push_back("variables.tenant == '' && " + key + " in " + labels + unchanged(key));
  for (const auto& t : policy.tenants()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : tenant_labels(t)) {
      const std::string qk = quote(k);
      std::string bad = "(" + qk + " in " + labels + " && " + labels + "[" + qk + "] != " + quote(v) + unchanged(qk) + ")";
      if (!old.empty()) bad += " || (!(" + qk + " in " + labels + ") && " + qk + " in " + old + ")";
      keys.push_back(bad);
    }
    parts.push_back("variables.tenant == " + quote(t.name) + " && (" + any_of(keys) + ")");
  }
  return any_of(parts);
}

}  // namespace

RulePlan plan_gpu_tolerations(const PlanContext& ctx) {
  RulePlan plan;
  const auto& policy = ctx.policy;
  std::vector<std::string> missing;
  if (!policy.gpu_taints().empty()) missing.push_back("!(" + tolerates_all(policy.gpu_taints()) + ")");
  std::vector<std::string> pools;
  for (const auto& p : policy.pools())
    if (!p.taints.empty()) pools.push_back("pool == " + quote(p.name) + " && !(" + tolerates_all(p.taints) + ")");
  if (!pools.empty()) missing.push_back(with_pools(policy, "t.spec", any_of(pools)));
  if (missing.empty()) {
    plan.notes.push_back("gpu-tolerations: the policy lists no taint (no policy)");
    return plan;
  }
  plan.checks.push_back({over_templates(ctx, pod_asks_gpu(policy, "t.spec") + " &&\n(" + any_of(missing) + ")"),
                         "[gpu-tolerations] a GPU pod does not tolerate the GPU nodes' taints (defaults.gpuTaints) or "
                         "its pool's" + std::string(kSuffix)});
  plan.notes.push_back("gpu-tolerations: GPU pods whose GPUs come only from DRA claims, and the pool taints of a pod "
                       "that names no pool (pool-selector pins it)");
  return plan;
}

RulePlan plan_gpu_cap(const PlanContext& ctx) {
  RulePlan plan;
  bool capped = ctx.policy.max_gpus_for(nullptr).has_value();
  for (const auto& t : ctx.policy.tenants()) capped = capped || ctx.policy.max_gpus_for(&t).has_value();
  if (!capped) {
    plan.notes.push_back("gpu-cap: the policy sets no maxGpusPerPod (no policy)");
    return plan;
  }
  // Whole GPUs that mig-resources converts to MIG slices count as the slices: nothing here. A pod
  // judged in a mixed pool has them converted, and so has one in no pool whose tenant's default
  // pool is mixed (pool-selector pins it there first): so the count is the same for a pod as the
  // mutating webhook leaves it and for one it never saw.
  std::string converted = "false";
  if (ctx.policy.mutation_enabled(policy::MutationId::MigResources)) {
    std::vector<std::string> mixed, by_default;
    for (const auto& p : ctx.policy.pools())
      if (p.mig_strategy == policy::MigStrategy::Mixed) mixed.push_back(p.name);
    for (const auto& t : ctx.policy.tenants())
      if (t.default_pool >= 0 && ctx.policy.pools()[t.default_pool].mig_strategy == policy::MigStrategy::Mixed)
        by_default.push_back(t.name);
    if (!mixed.empty()) {
      converted = "(pool in " + quote_list(mixed);
      if (!by_default.empty() && ctx.policy.mutation_enabled(policy::MutationId::PoolSelector))
        converted += " || (pool == '' && variables.tenant in " + quote_list(by_default) + ")";
      converted += ")";
    }
  }
  std::string body = "variables.cap >= 0 && (" + pod_gpus_exceed(ctx.policy, "t.spec", "variables.cap", converted) + ")";
  if (converted != "false") body = with_pools(ctx.policy, "t.spec", body);
  plan.checks.push_back({over_templates(ctx, body),
                         "[gpu-cap] the pod asks for more whole GPUs than its tenant's maxGpusPerPod" +
                             std::string(kSuffix)});
  plan.notes.push_back("gpu-cap: MIG slices, DRA claims, GPU quantities that are not whole numbers (the API server "
                       "refuses fractions of extended resources), init containers together with the sidecars before them, "
                       "and containers past the 16th app or sidecar container are not counted; quantities of a thousand "
                       "or more count as 1000 or 10000");
  return plan;
}

RulePlan plan_tenant_pool(const PlanContext& ctx) {
  RulePlan plan;
  const auto& policy = ctx.policy;
  std::vector<std::string> parts = {"named.size() > 1"};
  if (!policy.tenants().empty()) {
    std::string allowed = "{";
    for (size_t i = 0; i < policy.tenants().size(); ++i) {
      const policy::Tenant& t = policy.tenants()[i];
      std::vector<std::string> names;
      for (const auto& p : policy.pools())
        if (t.allowed_pools[p.index]) names.push_back(p.name);
      allowed += (i ? ", " : "") + quote(t.name) + ": " + quote_list(names);
    }
    allowed += "}";
    parts.push_back("variables.tenant != '' && named.exists(p, !(p in " + allowed + "[variables.tenant]))");
  }
  std::string body = "[" + named_pools(policy, "t.spec") + "].exists(named, " + any_of(parts) + ")";
  if (policy.config().unmapped_gpu_pods == policy::UnmappedGpuPods::Deny)
    body = "(" + body + ") ||\n(variables.tenant == '' && " + pod_asks_gpu(policy, "t.spec") + ")";
  plan.checks.push_back({over_templates(ctx, body),
                         "[tenant-pool] the pod targets a pool its tenant may not use, more than one pool, or is a GPU "
                         "pod in a namespace of no tenant" + std::string(kSuffix)});
  plan.notes.push_back("tenant-pool: a GPU pod not pinned to a pool (pool-selector pins it), and GPU pods whose GPUs "
                       "come only from DRA claims");
  return plan;
}

RulePlan plan_tenant_label(const PlanContext& ctx) {
  RulePlan plan;
  const std::string labels = "(has(t.metadata) && has(t.metadata.labels) ? t.metadata.labels : {})";
  plan.checks.push_back({over_templates(ctx, "[" + labels + "].exists(labels, " + labels_violation(ctx.policy, "labels", "") + ")"),
                         "[tenant-label] the pod's labels claim another tenant (gpu-admission.io/tenant) or change one "
                         "of its tenant's labels" + std::string(kSuffix)});
  const std::string now = "(has(object.metadata) && has(object.metadata.labels) ? object.metadata.labels : {})";
  const std::string before =
      "(oldObject != null && has(oldObject.metadata) && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})";
  plan.checks.push_back({"has(request.operation) && request.operation == 'UPDATE' && variables.kind == 'Pod' && [" + now + "].exists(labels, [" + before + "].exists(old, " +
                             labels_violation(ctx.policy, "labels", "old") + "))" +
                             (ctx.label_exceptions.empty() ? "" : " && " + not_excepted_pod(ctx, "object")),
                         "[tenant-label] an update changes or removes the pod's tenant labels" + std::string(kSuffix)});
  plan.pod_updates = {"pods"};
  plan.notes.push_back("tenant-label: a pod that lacks its tenant's labels (tenant-labels adds them)");
  return plan;
}

}  // namespace gpu_admission::webhook::backstop
