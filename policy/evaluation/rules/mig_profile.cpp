// mig-profile: MIG resources must be valid profiles of the pool's GPU model and only appear in
// pools using the mixed strategy; whole GPUs do not appear in mixed pools (mig-resources turns
// them into slices; an unmutated pod still has them); a full-GPU DRA device class (a claim, or
// its deviceclass.resource.kubernetes.io/ extended resource) is refused in mixed and single
// pools; in a single pool a GPU pod selects one of the pool's MIG products; the mig-profile
// annotation must name a valid profile; a container may use one MIG type. A pod with no pool is
// checked only for the last.
#include "policy/dra/gpu_request.h"
#include "policy/views/mig.h"
#include "policy/evaluation/rules/rule.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {

namespace {

// The profile /mutate would have used for what mig-profile found (the annotation's when valid,
// else the pool's default, as mig-resources chooses), or none while mig-resources is off (then a
// "/mutate would have" hint would be wrong).
const MigProfileEntry* mutation_profile(const RuleContext& ctx, const Pool& pool) {
  if (!ctx.policy.mutation_enabled(MutationId::MigResources)) return nullptr;
  bool annotated = false;
  std::string_view requested = ctx.pod.annotation(kMigProfileAnnotation, &annotated);
  if (annotated)
    if (const MigProfileEntry* named = pool.find_profile(requested)) return named;
  return pool.default_profile < 0 ? nullptr : &pool.mig_profiles[pool.default_profile];
}

// Calls f(container, limits, quantity) for each entry of kind `kind` that asks for something,
// once per resource: at the request, or at the limit when the request is missing or zero.
template <typename F>
void for_each_asked(const RuleContext& ctx, CompiledPolicy::GpuKind kind, F f) {
  for (const auto& c : ctx.pod.containers) {
    for (int pass = 0; pass < 2; ++pass) {
      const bool limits = pass == 1;
      for (const auto& q : limits ? c.limits : c.requests) {
        if (ctx.policy.classify_resource(q.name) != kind || zero_quantity(q)) continue;
        if (limits && find_resource(c.requests, q.name) && !zero_quantity(*find_resource(c.requests, q.name)))
          continue;  // reported at the request
        f(c, limits, q);
      }
    }
  }
}

void check_whole_gpus(const RuleContext& ctx, const Pool& pool, RuleOutput& out) {
  const MigProfileEntry* fix = mutation_profile(ctx, pool);
  auto hint = [&] { return fix ? "; /mutate would have made them " + fix->resource : std::string(); };
  for_each_asked(ctx, CompiledPolicy::GpuKind::Full, [&](const ContainerView& c, bool limits, const ResourceQuantity& q) {
    out.report(resource_field(ctx, c, limits, q.name), container_label(c) + " requests whole GPUs (" +
                                                           bounded(q.name) + ") in pool " + quoted(pool.name) +
                                                           ", which hands out MIG slices" + hint());
  });
}

// A full-GPU device class asked for as a DRA extended resource in a MIG pool (mixed or single):
// like a claim for that class, whole GPUs are not handed out there. mig-resources leaves these
// alone (the class is what the pod asked the DRA driver for), so no /mutate hint.
void check_device_class_resources(const RuleContext& ctx, const Pool& pool, RuleOutput& out) {
  const size_t prefix = CompiledPolicy::kDeviceClassResourcePrefix.size();
  for_each_asked(ctx, CompiledPolicy::GpuKind::DeviceClassFull,
                 [&](const ContainerView& c, bool limits, const ResourceQuantity& q) {
                   out.report(resource_field(ctx, c, limits, q.name),
                              container_label(c) + " requests whole GPUs (" + bounded(q.name) + ", device class " +
                                  quoted(q.name.substr(prefix)) + ") in MIG pool " + quoted(pool.name) +
                                  "; ask a MIG device class");
                 });
}

void check_single_product(const RuleContext& ctx, const Pool& pool, RuleOutput& out) {
  bool found = false;
  std::string_view product = ctx.pod.node_selector_value(kGpuProductLabel, &found);
  auto field = [&] { return ctx.field("spec.nodeSelector" + quoted_key(kGpuProductLabel)); };
  if (!found) {
    const MigProfileEntry* fix = mutation_profile(ctx, pool);
    out.report(field(), "GPU pod in pool " + quoted(pool.name) + " (MIG strategy single) does not select a MIG product "
                      "through nvidia.com/gpu.product" +
                          (fix ? "; /mutate would have selected " + quoted(fix->single_product) : ""));
    return;
  }
  for (const auto& profile : pool.mig_profiles)
    if (profile.single_product == product) return;
  out.report(field(), "nvidia.com/gpu.product=" + quoted(product) + " is not a MIG product of " + quoted(pool.gpu_model) +
                        " in pool " + quoted(pool.name) + " (expected " + pool.gpu_model + "-MIG-<profile>)");
}

// DRA in a MIG pool: whole GPUs are not handed out (ask a MIG device class), and a pinned
// profile must be one of the pool's model.
void check_claims(const RuleContext& ctx, const Pool& pool, RuleOutput& out) {
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved()) {  // it could ask for whole GPUs or an invalid profile: fail closed in a MIG pool
      if (pool.mig_strategy != MigStrategy::None)
        out.report(claim_field(ctx, e), unresolved_claim_message(e, "judge the MIG devices") + " (pool " +
                                            quoted(pool.name) + " hands out MIG devices)");
      continue;
    }
    for (const auto& r : e.gpus.requests) {
      if (!r.gpu) continue;
      const DeviceRequestView& request = e.claim->requests[r.index];
      for (const auto& alt : request.alternatives) {
        if (ctx.policy.classify_device_class(alt.device_class) != CompiledPolicy::GpuKind::Full ||
            pool.mig_strategy == MigStrategy::None)
          continue;
        out.report(claim_field(ctx, e), e.describe() + " request " + quoted(r.name) + " asks for whole GPUs (device class " +
                              quoted(alt.device_class) + ") in MIG pool " + quoted(pool.name) +
                              "; ask a MIG device class");
        break;
      }
      for (auto profile : r.profiles) {
        if (pool.find_profile(profile)) continue;
        out.report(claim_field(ctx, e), e.describe() + " request " + quoted(r.name) + " pins MIG profile " + quoted(profile) +
                              ", not a profile of " + quoted(pool.gpu_model) + " in pool " + quoted(pool.name));
      }
    }
  }
}

void check_mig_profile(const RuleContext& ctx, RuleOutput& out) {
  const std::string_view prefix = ctx.policy.mig_prefix();
  const Pool* pool = ctx.pool;
  for (const auto& c : ctx.pod.containers) {
    std::string_view first_type;
    for (int pass = 0; pass < 2; ++pass) {
      const bool limits = pass == 1;
      for (const auto& q : limits ? c.limits : c.requests) {
        if (ctx.policy.classify_resource(q.name) != CompiledPolicy::GpuKind::Mig) continue;
        // Checked at the request, unless the request is zero (then the limit is what counts).
        if (limits && find_resource(c.requests, q.name) && !zero_quantity(*find_resource(c.requests, q.name))) continue;
        if (zero_quantity(q)) continue;  // zero-count entries ask for nothing
        if (first_type.empty()) {
          first_type = q.name;
        } else if (q.name != first_type) {
          out.report(resource_field(ctx, c, limits, q.name), container_label(c) + " uses two MIG types (" +
                                                                 bounded(first_type) + " and " +
                                                                 bounded(q.name) + ")");
        }
        if (!pool) continue;
        if (pool->mig_strategy != MigStrategy::Mixed) {
          out.report(resource_field(ctx, c, limits, q.name),
                     container_label(c) + " requests " + bounded(q.name) + " in pool " + quoted(pool->name) +
                         " whose MIG strategy is " +
                         std::string(kMigStrategyNames[static_cast<size_t>(pool->mig_strategy)]) +
                         (pool->mig_strategy == MigStrategy::Single ? " (MIG devices appear as nvidia.com/gpu there)"
                                                                    : ""));
        } else if (!pool->find_profile_by_resource(q.name)) {
          std::string profile = mig_profile_from_resource_suffix(q.name.substr(prefix.size()));
          out.report(resource_field(ctx, c, limits, q.name),
                     container_label(c) + " requests MIG profile " + quoted(profile) + ", not a profile of " +
                         quoted(pool->gpu_model) + " in pool " + quoted(pool->name));
        }
      }
    }
  }
  if (pool && pool->mig_strategy == MigStrategy::Mixed) check_whole_gpus(ctx, *pool, out);
  if (pool && pool->mig_strategy != MigStrategy::None) check_device_class_resources(ctx, *pool, out);
  if (pool) check_claims(ctx, *pool, out);
  if (pool && pool->mig_strategy == MigStrategy::Single && ctx.gpu.gpu_pod()) check_single_product(ctx, *pool, out);
  bool found = false;
  std::string_view requested = ctx.pod.annotation(kMigProfileAnnotation, &found);
  if (found && pool && !pool->find_profile(requested)) {
    out.report(ctx.field("metadata.annotations" + quoted_key(kMigProfileAnnotation)),
               "annotation names MIG profile " + quoted(requested) + ", not a profile of " +
                   quoted(pool->gpu_model.empty() ? std::string("(no gpuModel)") : pool->gpu_model) + " in pool " +
                   quoted(pool->name));
  }
}

// A PodGroup: its claims in its pods' pool.
void check_group_mig_profile(const RuleContext& ctx, RuleOutput& out) {
  if (ctx.pool) check_claims(ctx, *ctx.pool, out);
}

}  // namespace

constinit const RuleEntry kMigProfileRule = rule_entry({
    .pod = check_mig_profile,
    .refuses = "a MIG resource that is not a profile of the pool's `gpuModel`; a MIG resource in a pool whose "
               "`mig.strategy` is `none` or `single`; a whole GPU in a `mixed` pool (`mig-resources` converts it, so "
               "on `/validate` it is a pod that was not mutated); in a `single` pool, a GPU pod whose "
               "`nvidia.com/gpu.product` node selector is missing or is not one of the pool's MIG products; an "
               "invalid `gpu-admission.io/mig-profile` annotation; a DRA request for a whole-GPU device class in a "
               "MIG pool (through a claim, or the class's extended resource "
               "`deviceclass.resource.kubernetes.io/<class>`), or for a profile the pool's model does not have; a "
               "claim in a MIG pool that cannot be found; two different MIG types in one container. A pod with no "
               "pool is checked for the last one only",
    .group = check_group_mig_profile,
    .group_refuses = "in the tenant's default pool: a claim of the group that asks for a whole-GPU device class in "
                     "a MIG pool or pins a profile the pool's model does not have; a claim that cannot be found in a "
                     "MIG pool",
});

}  // namespace gpu_admission::policy
