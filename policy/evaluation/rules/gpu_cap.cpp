// gpu-cap: the pod's effective GPU request (exact, in compute slices) above its tenant's
// maxGpusPerPod, else defaults.maxGpusPerPod; and GPU quantities that are not whole numbers
// (or are negative, unreadable or too large). Such a quantity still counts (gpu_request.h): a
// fraction as its ceiling, too large or unreadable as more than any cap, so the cap check below
// sees it too. A ResourceClaim or template on its own is refused for what it alone asks.
#include <algorithm>

#include "policy/evaluation/mutations/mutation.h"
#include "policy/views/quantity.h"
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {
namespace {

// What a quantity that is not a whole number counts as, for the message.
std::string counted_as(const Quantity& q) {
  switch (q.status) {
    case Quantity::Status::NotInteger:
      return "; it counts as " + std::to_string(q.value) + " (the kubelet rounds up)";
    case Quantity::Status::TooLarge:
    case Quantity::Status::Invalid: return "; it counts as more than any cap";
    case Quantity::Status::Negative:
    case Quantity::Status::Integer: break;
  }
  return "";
}

// DRA claims where a cap applies: one that cannot be resolved cannot be counted, and one that
// asks for every device of a class (allocationMode: All) is unbounded.
void check_claims(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved()) {
      out.report(claim_field(ctx, e), unresolved_claim_message(e, "count the GPUs"));
      continue;
    }
    for (const auto& r : e.gpus.requests) {
      if (!r.all) continue;
      out.report(claim_field(ctx, e), e.describe() + " request " + quoted(r.name) +
                                          " asks for every GPU of its device class (allocationMode: All) where a cap applies");
    }
  }
}

// Whether the GPUs counted are over `cap` per pod; not when they are unbounded because of
// allocationMode All (check_claims reports that).
bool over_cap(const RuleContext& ctx, int64_t cap) {
  if (ctx.gpu.slices <= cap * ctx.gpu.slices_per_gpu) return false;
  const auto& claims = ctx.gpu.claims.entries;
  return !(std::any_of(claims.begin(), claims.end(), [](const PodClaimGpus& e) { return e.gpus.all; }) &&
           ctx.gpu.slices >= kSaturatedSlices);
}

// "tenant \"a\" allows 2 per pod", "the default cap is 2 per pod".
std::string cap_text(const RuleContext& ctx, int64_t cap) {
  std::string who = ctx.tenant && ctx.tenant->max_gpus_per_pod ? "tenant " + quoted(ctx.tenant->name) + " allows"
                                                                : "the default cap is";
  return who + " " + std::to_string(cap) + " per pod";
}

// "3 (1 nvidia.com/gpu + 2 from claim template two-gpus)": where a pod's GPUs come from.
std::string requested_text(const RuleContext& ctx) {
  const int per_gpu = ctx.gpu.slices_per_gpu;
  if (ctx.gpu.slices >= kSaturatedSlices) return "more GPUs than can be counted";
  std::string out = gpus_text(ctx.gpu.slices, per_gpu) + " GPUs";
  if (ctx.gpu.claims.slices == 0) return out;
  return out + " (" + gpu_sources_text(ctx.gpu) + ")";
}

void check_gpu_cap(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& p : ctx.quantity_problems) {
    std::string shown = bounded(quantity_json(*p.quantity));
    out.report(resource_field(ctx, *p.container, p.in_limits, p.quantity->name),
               container_label(*p.container) + " requests " + bounded(p.quantity->name) + " " + shown + ", which is " +
                   describe(p.status) + " (GPU quantities must be whole numbers)" + counted_as(quantity_of(*p.quantity)));
  }
  auto cap = ctx.policy.max_gpus_for(ctx.tenant);
  if (!cap) return;
  check_claims(ctx, out);
  if (!over_cap(ctx, *cap)) return;
  out.report(ctx.field("spec"), "pod requests " + requested_text(ctx) + "; " + cap_text(ctx, *cap));
}

// A PodGroup: its claims as each of its pods has them, where a cap applies.
void check_group_gpu_cap(const RuleContext& ctx, RuleOutput& out) {
  auto cap = ctx.policy.max_gpus_for(ctx.tenant);
  if (!cap) return;
  check_claims(ctx, out);
  if (!over_cap(ctx, *cap)) return;
  out.report(ctx.field("spec.resourceClaims"),
             "the group's claims give each of its pods " + requested_text(ctx) + "; " + cap_text(ctx, *cap));
}

// A claim on its own: every GPU of a class (allocationMode: All) where a cap applies, or more
// GPUs than the cap.
void check_claim_gpu_cap(const ClaimContext& ctx, RuleOutput& out) {
  auto cap = ctx.policy.max_gpus_for(ctx.tenant);
  if (!cap) return;
  for (const auto& r : ctx.gpus.requests) {
    if (!r.all) continue;
    out.report(ctx.request_field(r), "request " + quoted(r.name) +
                                         " asks for every GPU of its device class (allocationMode: All) where a cap applies");
  }
  const int per_gpu = ctx.slices_per_gpu;
  if (ctx.gpus.slices <= *cap * per_gpu || ctx.gpus.all) return;  // All is reported above
  std::string who = ctx.tenant && ctx.tenant->max_gpus_per_pod ? "tenant " + quoted(ctx.tenant->name) + " allows"
                                                                : "the default cap is";
  std::string asked =
      ctx.gpus.slices >= kSaturatedSlices ? "more GPUs than can be counted" : gpus_text(ctx.gpus.slices, per_gpu) + " GPUs";
  out.report(std::string(ctx.claim.devices_field()) + ".requests",
             std::string(ctx.claim.kind == ClaimKind::Template ? "claim template" : "claim") + " asks for " + asked +
                 "; " + who + " " + std::to_string(*cap) + " per pod");
}

}  // namespace

constinit const RuleEntry kGpuCapRule = rule_entry({
    .pod = check_gpu_cap,
    .refuses = "a pod whose GPU total is above its tenant's `maxGpusPerPod` (else `spec.defaults.maxGpusPerPod`); a "
               "GPU quantity that is not a whole number (it counts as the next whole number); where a cap applies, a "
               "DRA GPU request with `allocationMode: All` or a claim that cannot be found. The total is computed "
               "exactly, as the kubelet hands out GPUs: the larger of all app containers and sidecars together and "
               "any one init container with the sidecars started before it, plus DRA devices",
    .claim = check_claim_gpu_cap,
    .claim_refuses = "a claim that alone asks for more GPUs than the cap (a pinned MIG profile counts as its largest "
                     "share on any GPU model), or a GPU request with `allocationMode: All` where a cap applies",
    .group = check_group_gpu_cap,
    .group_refuses = "where a cap applies, claims that together give each pod of the group more GPUs than the cap "
                     "(counted in the tenant's default pool), a GPU request with `allocationMode: All`, or a claim "
                     "that cannot be found",
});

}  // namespace gpu_admission::policy
