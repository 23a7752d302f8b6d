// mps-adversarial: MPS shares one GPU context between processes with no memory or fault
// isolation, so a pod in an adversarial pool must have no path to it: the pool's device plugin
// sharing mode, a node constraint on the MPS node labels, CUDA_MPS_* env vars (set directly or
// formed by an envFrom prefix), hostPaths that reach an MPS pipe directory
// (policy/views/host_path.h's MPS table), host IPC, a DRA claim whose driver config asks for MPS.
#include <algorithm>

#include "policy/views/host_path.h"
#include "policy/evaluation/rules/rule.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {
constexpr std::string_view kSharingLabel = "nvidia.com/gpu.sharing-strategy";
constexpr std::string_view kMpsCapableLabel = "nvidia.com/mps.capable";

// The one constraint on the sharing-strategy label that cannot reach MPS nodes: equal to none
// (nodeSelector, or In with none as its only value).
bool selects_unshared_only(const NodeConstraint& c) {
  if (!c.selector && c.op != "In") return false;
  return !c.values.empty() && std::all_of(c.values.begin(), c.values.end(), [](auto v) { return v == "none"; });
}

// A constraint on the GPU feature discovery labels that say a node shares its GPUs through MPS is
// an opt-in to MPS nodes, whatever the operator (NotIn [none] and Exists reach MPS nodes too), in
// every ORed term; nvidia.com/gpu.sharing-strategy=none is the exception.
void check_node_constraints(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  auto report = [&](const NodeConstraint& c) {
    out.report(c.field, "node constraint " + c.describe() + " can select MPS nodes in adversarial pool " + pool);
  };
  for_each_node_constraint(ctx, kSharingLabel, [&](const NodeConstraint& c) {
    if (!selects_unshared_only(c)) report(c);
  });
  for_each_node_constraint(ctx, kMpsCapableLabel, report);
}

// True when `prefix` + a non-empty key can spell a CUDA_MPS_* name.
bool envfrom_prefix_forms_mps(std::string_view prefix) {
  return !prefix.empty() && (prefix.starts_with(kMpsEnvPrefix) || kMpsEnvPrefix.starts_with(prefix));
}

void check_env(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  for (const auto& c : ctx.pod.containers) {
    for (const EnvVar& v : c.env) {
      if (!v.name.starts_with(kMpsEnvPrefix)) continue;
      out.report(container_field(ctx.pod, c) + ".env[" + std::to_string(v.index) + "]",
                 container_label(c) + " sets " + bounded(v.name) + " in adversarial pool " + pool);
    }
    for (const auto& from : c.env_from) {
      if (!envfrom_prefix_forms_mps(from.prefix)) continue;
      out.report(container_field(ctx.pod, c) + ".envFrom[" + std::to_string(from.index) + "].prefix",
                 container_label(c) + " imports envFrom with prefix " + quoted(from.prefix) +
                     ", which can set CUDA_MPS_* variables in adversarial pool " + pool);
    }
  }
}

void check_host_paths(const RuleContext& ctx, RuleOutput& out) {
  const HostPathTable& table = mps_pipe_host_paths();
  for (const auto& v : ctx.pod.host_paths) {
    const HostPathEntry* entry = table.find(normalize_host_path(v.path));
    if (!entry) continue;
    out.report(ctx.field("spec.volumes[" + std::to_string(v.index) + "].hostPath.path"),
               "hostPath volume " + quoted(v.name) + " mounts " + quoted(v.path) + ", which reaches " + entry->display +
                   ": " + entry->reason);
  }
}

// The pool's own MPS sharing, and DRA claims whose driver config asks for MPS.
void check_pool_and_claims(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  if (ctx.pool->sharing == Sharing::Mps && ctx.gpu.gpu_pod())
    out.report(ctx.field("spec"), "pool " + pool + " is adversarial and shares its GPUs through MPS");
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved()) {  // its driver config could ask for MPS: fail closed
      out.report(claim_field(ctx, e), unresolved_claim_message(e, "judge the sharing") + " in adversarial pool " + pool);
      continue;
    }
    if (!e.gpus.mps) continue;
    out.report(claim_field(ctx, e),
               e.describe() + " asks the GPU driver for MPS sharing (sharing.strategy: MPS) in adversarial pool " + pool);
  }
}

void check_mps_adversarial(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.pool || ctx.pool->trust != Trust::Adversarial) return;
  const std::string pool = quoted(ctx.pool->name);
  check_pool_and_claims(ctx, pool, out);

  check_node_constraints(ctx, pool, out);
  check_env(ctx, pool, out);
  check_host_paths(ctx, out);
  if (ctx.pod.host_ipc)
    out.report(ctx.field("spec.hostIPC"), "hostIPC=true reaches MPS shared memory in adversarial pool " + pool);
}

// A PodGroup: its claims in its pods' pool.
void check_group_mps_adversarial(const RuleContext& ctx, RuleOutput& out) {
  if (ctx.pool && ctx.pool->trust == Trust::Adversarial) check_pool_and_claims(ctx, quoted(ctx.pool->name), out);
}

}  // namespace

constinit const RuleEntry kMpsAdversarialRule = rule_entry({
    .pod = check_mps_adversarial,
    .refuses = "in a pool with `trust: adversarial`, any path to MPS: a GPU pod when the pool's `sharing` is `mps`; a "
               "node constraint (a `nodeSelector` entry, or a required node-affinity requirement with any operator, "
               "in any of the ORed terms) on `nvidia.com/gpu.sharing-strategy` or `nvidia.com/mps.capable`, except "
               "`nvidia.com/gpu.sharing-strategy` equal to `none` (`nodeSelector`, or `In [none]`): `NotIn [none]` "
               "and `Exists` reach MPS nodes too; a `CUDA_MPS_*` env var or an `envFrom` prefix that could spell "
               "one; a `hostPath` of, under or above an MPS pipe directory (`/tmp/nvidia-mps`, `/run/nvidia/mps`); "
               "`hostIPC: true`; a DRA claim whose driver configuration asks for MPS sharing, or one that cannot be "
               "found",
    .group = check_group_mps_adversarial,
    .group_refuses = "when the tenant's default pool has `trust: adversarial`: a claim of the group whose driver "
                     "configuration asks for MPS sharing, or one that cannot be found; GPU claims when that pool's "
                     "`sharing` is `mps`",
});

}  // namespace gpu_admission::policy
