// gpu-sharing: a GPU shared by time-slicing, by a sharing layer's fractions or as a DRA share of
// a device gives the pods that share it no memory or fault isolation from one another, so a pod
// in an adversarial pool must have no way to share one (MPS is mps-adversarial's): the pool's
// device plugin time-slicing every GPU, a shared (time-sliced replica) or fractional resource, a
// node constraint that can reach time-sliced nodes (nvidia.com/gpu.replicas; on the product, a
// `-SHARED` value or an operator that does not name products),
// a scheduler's GPU share asked for by pod annotation (spec.gpuSharingAnnotations: KAI Scheduler
// and Run:ai put several such pods on one GPU),
// a DRA GPU request for a share of a device (capacity) or whose driver config asks for
// time-slicing, and a claim that cannot be resolved (its content could ask for either).
#include <algorithm>
#include <array>

#include "policy/dra/gpu_request.h"
#include "policy/evaluation/rules/rule.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// GPU feature discovery labels a time-sliced node carries: its replica count, and its product
// with `-SHARED` appended.
constexpr std::string_view kReplicasLabel = "nvidia.com/gpu.replicas";
constexpr std::string_view kSharedProductSuffix = "-SHARED";

// How a node-affinity operator on the product label reaches time-sliced nodes: In only through a
// `-SHARED` value it names; DoesNotExist never (GPU feature discovery labels every GPU node with its
// product, time-sliced ones included). Every other operator (NotIn, Exists, Gt, Lt, and any
// spelling the API server would refuse) can select one whatever its values.
enum class ProductReach { ByValue, Never, Always };
struct ProductOperator {
  std::string_view op;
  ProductReach reach;
};
constexpr std::array<ProductOperator, 2> kProductOperators = {{
    {"In", ProductReach::ByValue},
    {"DoesNotExist", ProductReach::Never},
}};

ProductReach product_reach(const NodeConstraint& c) {
  if (c.selector) return ProductReach::ByValue;  // a nodeSelector entry is equality
  for (const auto& o : kProductOperators)
    if (o.op == c.op) return o.reach;
  return ProductReach::Always;
}

bool shared_product(std::string_view product) {
  if (product.size() < kSharedProductSuffix.size()) return false;
  std::string_view tail = product.substr(product.size() - kSharedProductSuffix.size());
  // Node label values are case-sensitive; a tenant's other spelling selects no node, and refusing
  // it costs nothing.
  return std::equal(tail.begin(), tail.end(), kSharedProductSuffix.begin(), [](char a, char b) {
    return (a >= 'a' && a <= 'z' ? static_cast<char>(a - 'a' + 'A') : a) == b;
  });
}

// Shared and fractional resources, once per container and resource (at the request, else the
// limit); zero-count entries ask for nothing.
void check_resources(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  for (const auto& c : ctx.pod.containers) {
    for (const bool limits : {false, true}) {
      for (const auto& q : limits ? c.limits : c.requests) {
        const auto kind = ctx.policy.classify_resource(q.name);
        if (kind != CompiledPolicy::GpuKind::Shared && kind != CompiledPolicy::GpuKind::Fractional) continue;
        if (zero_quantity(q)) continue;
        const ResourceQuantity* request = limits ? find_resource(c.requests, q.name) : nullptr;
        if (request && !zero_quantity(*request)) continue;  // reported at the request
        const char* what = kind == CompiledPolicy::GpuKind::Shared
                               ? ", a time-sliced replica of a GPU that other pods share,"
                               : ", a sharing layer's fraction of a GPU that other pods share,";
        out.report(resource_field(ctx, c, limits, q.name),
                   container_label(c) + " asks for " + bounded(q.name) + what + " in adversarial pool " + pool);
      }
    }
  }
}

// Any constraint on the replica label (whatever the operator, in every ORed term); on the product,
// a `-SHARED` value (nodeSelector, or a value of an In) or an operator that can select any product.
void check_node_constraints(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  for_each_node_constraint(ctx, kReplicasLabel, [&](const NodeConstraint& c) {
    out.report(c.field,
               "node constraint " + c.describe() + " can select time-sliced GPU nodes in adversarial pool " + pool);
  });
  for_each_node_constraint(ctx, kGpuProductLabel, [&](const NodeConstraint& c) {
    switch (product_reach(c)) {
      case ProductReach::Never:
        return;
      case ProductReach::ByValue:
        if (std::none_of(c.values.begin(), c.values.end(), shared_product)) return;
        out.report(c.field, "node constraint " + c.describe() + " selects time-sliced GPU nodes (a " +
                                std::string(kSharedProductSuffix) + " product) in adversarial pool " + pool);
        return;
      case ProductReach::Always:
        out.report(c.field, "node constraint " + c.describe() + " can select time-sliced GPU nodes (a " +
                                std::string(kSharedProductSuffix) +
                                " product; name the products with = or In) in adversarial pool " + pool);
        return;
    }
  });
}

// Pod annotations in spec.gpuSharingAnnotations, each (one key is enough for the scheduler).
void check_annotations(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  const auto& keys = ctx.policy.gpu_sharing_annotations();
  if (keys.empty()) return;
  for (const auto& [key, value] : ctx.pod.annotations) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    out.report(ctx.field("metadata.annotations" + quoted_key(key)),
               "annotation " + quoted(key) + " asks a scheduler for a share of a GPU that other pods use (no memory "
               "isolation between them) in adversarial pool " + pool);
  }
}

// DRA: a GPU request for a share of a device, or a driver config asking for time-slicing; a
// claim that cannot be resolved could ask for either.
void check_claims(const RuleContext& ctx, const std::string& pool, RuleOutput& out) {
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved()) {
      out.report(claim_field(ctx, e), unresolved_claim_message(e, "judge the sharing") + " in adversarial pool " + pool);
      continue;
    }
    if (!e.gpus.capacity && !e.gpus.time_slicing) continue;
    for (const RequestGpus& r : e.gpus.requests) {
      const std::string request = e.describe() + ": request " + quoted(r.name);
      if (r.gpu && r.capacity)
        out.report(claim_field(ctx, e),
                   request + " asks for a share of a device (capacity.requests) in adversarial pool " + pool);
      if (r.time_slicing)
        out.report(claim_field(ctx, e), request +
                                            " asks the GPU driver for time-slicing (sharing.strategy: TimeSlicing) "
                                            "in adversarial pool " + pool);
    }
  }
}

void check_gpu_sharing(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.pool || ctx.pool->trust != Trust::Adversarial) return;
  const std::string pool = quoted(ctx.pool->name);
  if (ctx.pool->sharing == Sharing::TimeSlicing && ctx.gpu.gpu_pod())
    out.report(ctx.field("spec"), "pool " + pool + " is adversarial and shares its GPUs by time-slicing");
  check_resources(ctx, pool, out);
  check_node_constraints(ctx, pool, out);
  check_annotations(ctx, pool, out);
  check_claims(ctx, pool, out);
}

// A PodGroup: its claims in its pods' pool.
void check_group_gpu_sharing(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.pool || ctx.pool->trust != Trust::Adversarial) return;
  const std::string pool = quoted(ctx.pool->name);
  if (ctx.pool->sharing == Sharing::TimeSlicing && ctx.gpu.gpu_pod())
    out.report(ctx.field("spec"), "pool " + pool + " is adversarial and shares its GPUs by time-slicing");
  check_claims(ctx, pool, out);
}

}  // namespace

constinit const RuleEntry kGpuSharingRule = rule_entry({
    .pod = check_gpu_sharing,
    .refuses = "in a pool with `trust: adversarial`, any other way to share a GPU with other pods (no memory or "
               "fault isolation between them): a GPU pod when the pool's `sharing` is `time-slicing`; a "
               "`spec.gpuResources.shared` resource (time-sliced replicas) or a `spec.gpuResources.fractional` one, "
               "in any container; a node constraint (`nodeSelector` or required node affinity, any operator, any "
               "ORed term) on `nvidia.com/gpu.replicas`, or one on `nvidia.com/gpu.product` that can select a "
               "time-sliced node: a value ending in `-SHARED` (a `nodeSelector` value or an `In` value, in any "
               "case), or any operator but `In` and `DoesNotExist` (`NotIn`, `Exists`, `Gt`, `Lt`; `DoesNotExist` "
               "selects only nodes without GPUs, since every GPU node carries the label); a pod annotation whose key "
               "is in `spec.gpuSharingAnnotations` (a scheduler's share of a GPU: KAI Scheduler's and Run:ai's "
               "`gpu-fraction`, `gpu-memory`, `gpu-fraction-num-devices`); a DRA GPU request that "
               "asks for a share of a device (`capacity.requests`, consumable capacity) or whose NVIDIA driver "
               "configuration asks for `sharing.strategy: TimeSlicing`; a DRA claim that cannot be found",
    .group = check_group_gpu_sharing,
    .group_refuses = "when the tenant's default pool has `trust: adversarial`: a claim of the group that asks for a "
                     "share of a device or for time-slicing, or one that cannot be found; GPU claims when that "
                     "pool's `sharing` is `time-slicing`",
});

}  // namespace gpu_admission::policy
