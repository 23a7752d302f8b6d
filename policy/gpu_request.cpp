#include "policy/gpu_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policy/mig.h"

namespace gpu_admission::policy {
namespace {

constexpr int64_t kSaturate = std::numeric_limits<int64_t>::max() / 4;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r > kSaturate) return kSaturate;
  return r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > kSaturate) return kSaturate;
  return r;
}

}  // namespace

Quantity quantity_of(const ResourceQuantity& q) {
  switch (q.form) {
    case ResourceQuantity::Form::String: return parse_quantity(q.text);
    case ResourceQuantity::Form::Integer:
      if (q.integer < 0) return {Quantity::Status::Negative, 0};
      return {Quantity::Status::Integer, q.integer};
    case ResourceQuantity::Form::Float:
      if (!std::isfinite(q.number)) return {Quantity::Status::Invalid, 0};
      if (q.number < 0) return {Quantity::Status::Negative, 0};
      if (q.number >= 9.0e18) return {Quantity::Status::TooLarge, 0};
      if (std::floor(q.number) != q.number) return {Quantity::Status::NotInteger, 0};
      return {Quantity::Status::Integer, static_cast<int64_t>(q.number)};
  }
  return {};
}

std::string gpus_text(int64_t slices, int per_gpu) {
  if (per_gpu <= 0) per_gpu = 7;
  const int64_t whole = slices / per_gpu, rest = slices % per_gpu;
  if (rest == 0) return std::to_string(whole);
  std::string fraction = std::to_string(rest) + "/" + std::to_string(per_gpu);
  return whole == 0 ? fraction : std::to_string(whole) + " " + fraction;
}

int64_t slices_per_unit(const CompiledPolicy& policy, std::string_view resource, int slices_per_gpu) {
  switch (policy.classify_resource(resource)) {
    case CompiledPolicy::GpuKind::NotGpu: return 0;
    case CompiledPolicy::GpuKind::Full:
    case CompiledPolicy::GpuKind::Shared: return slices_per_gpu;
    case CompiledPolicy::GpuKind::Mig: {
      auto slices = mig_profile_slices(resource.substr(policy.mig_prefix().size()));
      // An unreadable MIG name counts as a whole GPU: never under-count.
      return slices ? std::min<int64_t>(*slices, slices_per_gpu) : slices_per_gpu;
    }
  }
  return 0;
}

GpuRequest compute_gpu_request(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                               std::vector<QuantityProblem>* problems) {
  GpuRequest out;
  out.slices_per_gpu = pool ? pool->compute_slices : 7;

  auto container_slices = [&](const ContainerView& c) -> int64_t {
    int64_t total = 0;
    // Requests first; a resource only in limits counts its limit (requests default to limits).
    // A limit that has a request beside it is only checked, not counted.
    auto count = [&](const ResourceQuantity& q, bool in_limits, bool counted) {
      int64_t per_unit = slices_per_unit(policy, q.name, out.slices_per_gpu);
      if (per_unit == 0) return;
      Quantity value = quantity_of(q);
      if (!value.is_integer()) {
        if (problems) problems->push_back({&c, in_limits, &q, value.status});
        return;
      }
      if (counted) total = sat_add(total, sat_mul(value.value, per_unit));
    };
    for (const auto& q : c.requests) count(q, false, true);
    for (const auto& q : c.limits) count(q, true, find_resource(c.requests, q.name) == nullptr);
    return total;
  };

  int64_t app_sum = 0, restartable_sum = 0, init_max = 0;
  for (const auto& c : pod.containers) {
    if (c.kind == ContainerKind::Ephemeral) continue;  // ephemeral containers have no resources
    int64_t slices = container_slices(c);
    if (c.kind == ContainerKind::App) {
      app_sum = sat_add(app_sum, slices);
    } else if (c.restartable) {
      restartable_sum = sat_add(restartable_sum, slices);
      init_max = std::max(init_max, restartable_sum);
    } else {
      init_max = std::max(init_max, sat_add(slices, restartable_sum));
    }
  }
  out.slices = std::max(sat_add(app_sum, restartable_sum), init_max);
  return out;
}

}  // namespace gpu_admission::policy
