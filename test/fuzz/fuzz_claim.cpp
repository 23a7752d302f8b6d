// Fuzz target: arbitrary bytes as a ResourceClaim / ResourceClaimTemplate (JSON, simdjson DOM)
// through decode_claim and, when it decodes, the DRA GPU counting (policy/dra/claim_gpus.h); and the
// same bytes as a CEL selector through the MIG pin parser, and as a PodGroup through
// decode_pod_group (its spec.resourceClaims, the claims every pod of the group shares). Invariants: nothing crashes; slices
// lie in [0, kSaturatedSlices], one result per request with its index, `All` saturates, a
// claim's sum is at least each GPU request's slices; a pinned profile is text of the selector,
// and stays pinned inside parentheses or `&&` but never under `||`; a decoded PodGroup's entries keep
// their positions and a claim found for a status entry is one of them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "policy/dra/claim_decoder.h"
#include "policy/dra/claim_gpus.h"
#include "policy/dra/gpu_request.h"
#include "policy/dra/pod_group.h"

using namespace gpu_admission::policy;

namespace {

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "fuzz_claim invariant broken: %s\n", why);
  std::abort();
}

void check_pin(std::string_view cel) {
  auto pin = pinned_mig_profile(cel);
  if (!pin) return;
  if (cel.find(*pin) == std::string_view::npos) fail("pinned profile is not in the selector");
  const std::string text(cel);
  // "\n" ends a trailing // comment before the text we add.
  if (pinned_mig_profile("(" + text + "\n)") != pin) fail("parentheses change the pin");
  if (pinned_mig_profile("true && (" + text + "\n) && x > 1") != pin) fail("a conjunction loses the pin");
  if (pinned_mig_profile(text + "\n|| true").has_value()) fail("a pin under || counts");
  if (pinned_mig_profile("!(" + text + "\n)").has_value()) fail("a negated pin counts");
}

void check_counts(const ClaimView& claim, const GpuCounting& counting) {
  ClaimGpus gpus = count_claim_gpus(claim, counting);
  if (gpus.requests.size() != claim.requests.size()) fail("one result per request");
  if (gpus.slices < 0 || gpus.slices > kSaturatedSlices) fail("claim slices out of range");
  if (gpus.all && gpus.slices != kSaturatedSlices) fail("allocationMode All is not saturated");
  for (size_t i = 0; i < gpus.requests.size(); ++i) {
    const RequestGpus& r = gpus.requests[i];
    if (r.index != claim.requests[i].index) fail("request index lost");
    if (r.slices < 0 || r.slices > kSaturatedSlices) fail("request slices out of range");
    if (!r.gpu && (r.slices != 0 || r.all || r.admin_access)) fail("a non-GPU request counts");
    if (r.gpu && r.slices == 0) fail("a GPU request counts zero");
    if (r.gpu && gpus.slices < r.slices) fail("claim sum below a request");
  }
}

void check_pod_group(simdjson::dom::element root) {
  PodGroupView group;
  if (decode_pod_group(root, group).has_value()) return;
  if (!pod_group_api_version_supported(group.api_version)) fail("a PodGroup of an unserved version decoded");
  for (size_t i = 0; i < group.resource_claims.size(); ++i)
    if (group.resource_claims[i].index != i) fail("PodGroup entry index lost");
  for (const auto& [entry, claim] : group.claim_statuses) {
    const PodResourceClaim* found = group.entry_for_claim(claim);
    if (found && (found < group.resource_claims.data() || found >= group.resource_claims.data() + group.resource_claims.size()))
      fail("entry_for_claim points outside the group's entries");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_pin(text);

  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS) return 0;
  check_pod_group(root);
  ClaimView claim;
  if (decode_claim(root, claim).has_value()) return 0;
  for (const auto& request : claim.requests) {
    if (request.alternatives.empty()) fail("a request without alternatives decoded");
    for (const auto& sub : request.alternatives) {
      if (sub.count < 1) fail("count below 1 decoded");
      for (std::string_view cel : sub.selectors) check_pin(cel);
    }
  }
  GpuCounting defaults;
  check_counts(claim, defaults);
  GpuCounting a30;
  a30.slices_per_gpu = 4;
  a30.class_kind = [](std::string_view c) { return c.size() % 3 == 0 ? GpuClassKind::Mig : default_gpu_class_kind(c); };
  a30.profile_slices = [](std::string_view p) -> std::optional<int> {
    if (p.empty()) return std::nullopt;
    return static_cast<int>(p.size()) - 3;  // may be negative or above 4: must be clamped
  };
  check_counts(claim, a30);
  return 0;
}
