#include "policy/dra/pod_claims.h"

#include <algorithm>

#include "policy/base/quoted_value.h"
#include "policy/dra/gpu_request.h"
#include "policy/views/mig.h"

namespace gpu_admission::policy {
namespace {

bool same_object(const PodClaimGpus& a, const PodClaimGpus& b) {
  return a.kind == b.kind && a.object_name == b.object_name && !a.object_name.empty() && !a.group_missing &&
         !b.group_missing;
}

// What the entry for a missing group points at (rules read ref->index and ref->name).
const PodResourceClaim kNoEntry{};

// Adds one entry for `ref` (the pod's or, with `group`, its group's) to `out`, resolved and counted.
void add_entry(PodClaims& out, const PodResourceClaim& ref, std::string_view group, const ClaimResolver* resolver,
               std::string_view namespace_name, const GpuCounting& counting, std::pmr::memory_resource* memory) {
  PodClaimGpus& e = out.entries.emplace_back(memory);
  e.ref = &ref;
  e.group = group;
  e.kind = ref.template_name.empty() ? ClaimKind::Claim : ClaimKind::Template;
  e.object_name = e.kind == ClaimKind::Template ? ref.template_name : ref.claim_name;
  // A template is instantiated per entry, so only shared claims can repeat.
  e.repeat = e.kind == ClaimKind::Claim && std::any_of(out.entries.begin(), out.entries.end() - 1,
                                                       [&](const PodClaimGpus& o) { return same_object(o, e); });
  if (resolver && !e.object_name.empty()) e.claim = resolver->find(e.kind, namespace_name, e.object_name);
  if (!e.resolved()) {
    out.unresolved = out.gpu = true;
    return;
  }
  e.gpus = count_claim_gpus(*e.claim, counting, memory);  // same resource: moved, not copied
  out.gpu = out.gpu || e.gpus.gpu;
  if (!e.repeat) out.slices = sat_add(out.slices, e.gpus.slices);
}

// The pod's group: its entries that no entry of the pod matches, or one unresolved entry for a
// group that cannot be found.
void add_group_entries(PodClaims& out, const PodView& pod, const PodGroupView* group, const ClaimResolver* resolver,
                       std::string_view namespace_name, const GpuCounting& counting,
                       std::pmr::memory_resource* memory) {
  if (!group) {
    PodClaimGpus& e = out.entries.emplace_back(memory);
    e.ref = &kNoEntry;
    e.group = e.object_name = pod.pod_group;
    e.group_missing = true;
    out.unresolved = out.gpu = true;
    return;
  }
  for (const auto& ref : group->resource_claims) {
    const bool matched = std::any_of(pod.resource_claims.begin(), pod.resource_claims.end(),
                                     [&](const PodResourceClaim& own) { return matches_group_entry(own, ref); });
    if (!matched) add_entry(out, ref, pod.pod_group, resolver, namespace_name, counting, memory);
  }
}

}  // namespace

bool matches_group_entry(const PodResourceClaim& pod_entry, const PodResourceClaim& group_entry) {
  return pod_entry.name == group_entry.name && pod_entry.claim_name == group_entry.claim_name &&
         pod_entry.template_name == group_entry.template_name;
}

const ClaimView* MemoizedClaims::find(ClaimKind kind, std::string_view namespace_name, std::string_view name) const {
  for (const auto& a : answers_)
    if (a.kind == kind && a.namespace_name == namespace_name && a.name == name) return a.claim;
  const ClaimView* claim = inner_ ? inner_->find(kind, namespace_name, name) : nullptr;
  answers_.push_back({kind, namespace_name, name, claim});
  return claim;
}

std::string PodClaimGpus::describe() const {
  if (group_missing) return "PodGroup " + bounded(group);
  std::string out = kind == ClaimKind::Template ? "claim template " : "claim ";
  out += object_name.empty() ? std::string("(unnamed)") : bounded(object_name);
  if (from_group()) out += " of PodGroup " + bounded(group);
  return out;
}

const PodClaimGpus* PodClaims::find(std::string_view pod_claim_name) const {
  for (const auto& e : entries)
    if (!e.from_group() && e.ref->name == pod_claim_name) return &e;
  return nullptr;
}

GpuCounting gpu_counting(const CompiledPolicy& policy, const Pool* pool) {
  GpuCounting counting;
  counting.class_kind = [&policy](std::string_view device_class) {
    switch (policy.classify_device_class(device_class)) {
      case CompiledPolicy::GpuKind::Full: return GpuClassKind::Full;
      case CompiledPolicy::GpuKind::Mig: return GpuClassKind::Mig;
      default: return GpuClassKind::NotGpu;
    }
  };
  counting.slices_per_gpu = slices_per_gpu_in(pool);
  counting.profile_slices = [pool](std::string_view profile) -> std::optional<int> {
    if (pool && pool->mig_table) {
      const MigProfileEntry* entry = pool->find_profile(profile);
      if (!entry) return std::nullopt;  // not a profile of this model: counted as a whole GPU
      return entry->slices;
    }
    // No pool: the profile's largest share on any model, as for MIG resources.
    return pool ? mig_profile_slices(profile) : mig_profile_slices_any_model(profile);
  };
  counting.imex_class = [&policy](std::string_view device_class) { return policy.imex_device_class(device_class); };
  return counting;
}

PodClaims resolve_pod_claims(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                             const ClaimResolver* resolver, std::string_view namespace_name,
                             std::pmr::memory_resource* memory, const PodGroupView* group) {
  PodClaims out(memory);
  const bool grouped = !pod.pod_group.empty();
  if (pod.resource_claims.empty() && !grouped) return out;
  const GpuCounting counting = gpu_counting(policy, pool);
  // Every entry in one allocation.
  out.entries.reserve(pod.resource_claims.size() + (grouped ? (group ? group->resource_claims.size() : 1) : 0));
  for (const auto& ref : pod.resource_claims) add_entry(out, ref, {}, resolver, namespace_name, counting, memory);
  if (grouped) add_group_entries(out, pod, group, resolver, namespace_name, counting, memory);
  return out;
}

bool container_uses_gpu_claim(const ContainerView& c, const PodClaims& claims) {
  for (const auto& ref : c.claims) {
    const PodClaimGpus* e = claims.find(ref.name);
    if (!e) continue;  // names no claim of the pod: the API server refuses that
    if (!e->resolved()) return true;
    for (const auto& r : e->gpus.requests)
      if (r.gpu && (ref.request.empty() || r.name == ref.request)) return true;
  }
  return false;
}

}  // namespace gpu_admission::policy
