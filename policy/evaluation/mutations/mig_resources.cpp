// mig-resources: in a pool with mig.strategy mixed, whole-GPU requests become MIG slices of the
// profile named by the gpu-admission.io/mig-profile annotation, else the pool's default (an
// invalid annotation is never a way to skip the conversion: the default is used and the
// mig-profile rule reports the annotation). A MIG entry the container already has for that
// profile is added to. With strategy single, every GPU pod is pinned to nodes of that profile by
// nvidia.com/gpu.product unless it sets that key itself. What was done is recorded in the
// gpu-admission.io/mig-injected annotation. DRA extended resources
// (deviceclass.resource.kubernetes.io/<class>) are never rewritten: the class is what the pod
// asked the DRA driver for; a full-GPU class in a MIG pool is a mig-profile finding.
#include <algorithm>
#include <string>
#include <vector>

#include "policy/dra/gpu_request.h"
#include "policy/evaluation/mutations/mutation.h"
#include "policy/base/quoted_value.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

const MigProfileEntry* chosen_profile(const MutationContext& ctx) {
  bool annotated = false;
  std::string_view requested = ctx.pod.annotation(kMigProfileAnnotation, &annotated);
  if (annotated) {
    if (const MigProfileEntry* named = ctx.pool->find_profile(requested)) return named;
  }
  if (ctx.pool->default_profile < 0) return nullptr;
  return &ctx.pool->mig_profiles[ctx.pool->default_profile];
}

// a + b when both are whole numbers and the sum fits (a huge count must not wrap around).
bool exact_sum(const ResourceQuantity& a, const ResourceQuantity& b, int64_t& total) {
  Quantity x = quantity_of(a), y = quantity_of(b);
  return x.is_integer() && y.is_integer() && !__builtin_add_overflow(x.value, y.value, &total);
}

// A request left out defaults to the limit: when the target profile is only in the limits, the
// container requested that limit too, so request `q` (about to be renamed to the profile) takes
// it in. Else requests and limits of the profile would differ, which the API server refuses for
// extended resources. Returns false when the sum cannot be made exactly.
bool add_defaulted_request(const ContainerView& c, ResourceQuantity& q, const MigProfileEntry& profile) {
  const ResourceQuantity* limit = find_resource(c.limits, profile.resource);
  if (!limit || zero_quantity(*limit)) return true;
  int64_t total = 0;
  if (!exact_sum(q, *limit, total)) return false;
  q.form = ResourceQuantity::Form::Integer;  // rename_resource writes the sum
  q.integer = total;
  return true;
}

// Whole GPUs converted, per resource name, for the notice the user gets at apply time.
struct Converted {
  std::string name;
  int64_t count = 0;
  bool exact = true;  // every quantity counted was a whole number
};

void count_converted(std::vector<Converted>& converted, const ResourceQuantity& q) {
  auto it = std::find_if(converted.begin(), converted.end(), [&](const Converted& c) { return c.name == q.name; });
  if (it == converted.end()) it = converted.insert(converted.end(), Converted{std::string(q.name)});
  const Quantity n = quantity_of(q);
  if (!n.is_integer() || __builtin_add_overflow(it->count, n.value, &it->count)) it->exact = false;
}

// Converts the whole GPUs of one requests or limits list (counting those of the limits in
// `converted`). Returns true when it changed the list.
bool convert_list(MutationContext& ctx, ContainerView& c, bool limits, const MigProfileEntry& profile,
                  std::vector<Converted>& converted) {
  auto& list = limits ? c.limits : c.requests;
  bool changed = false;
  for (size_t i = 0; i < list.size();) {
    ResourceQuantity& q = list[i];
    if (ctx.policy.classify_resource(q.name) != CompiledPolicy::GpuKind::Full || zero_quantity(q)) {
      ++i;
      continue;
    }
    ResourceQuantity* existing = nullptr;
    for (auto& other : list)
      if (other.name == profile.resource) existing = &other;
    if (!existing) {
      if (!limits && !add_defaulted_request(c, q, profile)) {
        ++i;  // cannot add exactly: the whole GPU stays and mig-profile reports it
        continue;
      }
      if (limits) count_converted(converted, q);
      ctx.patcher.rename_resource(c, limits, q, profile.resource);
      changed = true;
      ++i;
      continue;
    }
    int64_t total = 0;
    if (!exact_sum(*existing, q, total)) {
      ++i;  // cannot add exactly: the whole GPU stays and mig-profile reports it
      continue;
    }
    if (limits) count_converted(converted, q);
    ctx.patcher.merge_resource(c, limits, i, *existing, total);
    changed = true;  // entry i was removed: the next one moved into its place
  }
  return changed;
}

// Converts every container and appends the names of those it changed to `out` as a JSON list's
// items. Returns false when it changed none.
bool convert_mixed(MutationContext& ctx, const MigProfileEntry& profile, std::pmr::string& out) {
  bool any = false;
  std::vector<Converted> converted;
  for (auto& c : ctx.pod.containers) {
    if (c.kind == ContainerKind::Ephemeral) continue;
    bool changed = convert_list(ctx, c, false, profile, converted);
    changed = convert_list(ctx, c, true, profile, converted) || changed;
    if (!changed) continue;
    if (any) out += ',';
    append_json_string(out, c.name);
    any = true;
  }
  for (const Converted& c : converted) {
    const std::string n = c.exact ? std::to_string(c.count) : std::string("some");
    ctx.notices.push_back("converted " + bounded(c.name) + ": " + n + " to " + profile.resource + ": " + n + " in pool " +
                          ctx.pool->name);
  }
  return any;
}

}  // namespace

bool mutate_mig_resources(MutationContext& ctx) {
  if (!ctx.pool || !ctx.gpu_pod) return false;
  const Pool& pool = *ctx.pool;
  if (pool.mig_strategy == MigStrategy::None) return false;
  const MigProfileEntry* profile = chosen_profile(ctx);
  if (!profile) return false;

  // The annotation's JSON record, built in the evaluation's arena (no allocation per review).
  std::pmr::string record(ctx.scratch);
  if (pool.mig_strategy == MigStrategy::Single) {
    bool found = false;
    ctx.pod.node_selector_value(kGpuProductLabel, &found);
    if (found) return false;  // never overwritten: a value that is not a MIG product is a mig-profile finding
    ctx.patcher.add_node_selector(kGpuProductLabel, profile->single_product);
    record += "{\"strategy\":\"single\",\"profile\":\"";
    record += profile->name;
    record += "\"}";
  } else {
    record += "{\"strategy\":\"mixed\",\"profile\":\"";
    record += profile->name;
    record += "\",\"containers\":[";
    if (!convert_mixed(ctx, *profile, record)) return false;
    record += "]}";
  }
  ctx.patcher.set_annotation(kMigInjectedAnnotation, record);
  return true;
}

}  // namespace gpu_admission::policy
