#include "policy/dra/gpu_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "policy/base/quoted_value.h"
#include "policy/views/mig.h"

namespace gpu_admission::policy {

Quantity quantity_of(const ResourceQuantity& q) {
  Quantity out;
  switch (q.form) {
    case ResourceQuantity::Form::String: return parse_quantity(q.text);
    case ResourceQuantity::Form::Integer:
      out.status = q.integer < 0 ? Quantity::Status::Negative : Quantity::Status::Integer;
      out.value = std::max<int64_t>(q.integer, 0);
      return out;
    case ResourceQuantity::Form::Float: {
      const double d = q.number;
      if (!std::isfinite(d)) return out;  // Invalid (JSON cannot spell these)
      if (d < 0) {
        out.status = Quantity::Status::Negative;
      } else if (d >= 9223372036854775808.0) {  // 2^63: no int64 holds it
        out.status = Quantity::Status::TooLarge;
        out.value = Quantity::kMax;
      } else {
        // Doubles from 2^52 on are whole, so the ceiling of one below 2^63 stays below 2^63.
        const double up = std::ceil(d);
        out.status = up == d ? Quantity::Status::Integer : Quantity::Status::NotInteger;
        out.value = static_cast<int64_t>(up);
      }
      return out;
    }
  }
  return out;
}

int64_t units_of(const Quantity& q) {
  switch (q.status) {
    case Quantity::Status::Integer:
    case Quantity::Status::NotInteger: return std::min(q.value, kSaturatedSlices);
    case Quantity::Status::TooLarge:
    case Quantity::Status::Invalid: return kSaturatedSlices;
    case Quantity::Status::Negative: return 0;
  }
  return kSaturatedSlices;
}

std::string gpus_text(int64_t slices, int per_gpu) {
  if (slices >= kSaturatedSlices) return "more than can be counted";
  if (per_gpu <= 0) per_gpu = 7;
  const int64_t whole = slices / per_gpu, rest = slices % per_gpu;
  if (rest == 0) return std::to_string(whole);
  const int64_t common = std::gcd(rest, static_cast<int64_t>(per_gpu));  // 7/28 reads 1/4
  std::string fraction = std::to_string(rest / common) + "/" + std::to_string(per_gpu / common);
  return whole == 0 ? fraction : std::to_string(whole) + " " + fraction;
}

int slices_per_gpu_in(const Pool* pool) { return pool ? pool->compute_slices : kAnyModelSlicesPerGpu; }

namespace {

// slices_per_unit for a resource already classified as `kind`.
int64_t kind_slices_per_unit(const CompiledPolicy& policy, CompiledPolicy::GpuKind kind, std::string_view resource,
                             const Pool* pool) {
  const int slices_per_gpu = slices_per_gpu_in(pool);
  switch (kind) {
    case CompiledPolicy::GpuKind::NotGpu:
    case CompiledPolicy::GpuKind::Fractional: return 0;  // a GPU pod, but no GPUs of its own
    case CompiledPolicy::GpuKind::Full:
    case CompiledPolicy::GpuKind::Shared:
    // A DRA extended resource is one device of its class; a MIG class's device is a slice of a
    // profile nothing names here, so it counts as the whole GPU it may be.
    case CompiledPolicy::GpuKind::DeviceClassFull:
    case CompiledPolicy::GpuKind::DeviceClassMig: return slices_per_gpu;
    case CompiledPolicy::GpuKind::Mig: {
      const std::string_view suffix = resource.substr(policy.mig_prefix().size());
      // count x g / compute slices, even when g is more than the model has (mig-profile refuses
      // such a profile); without a pool, the profile's largest share on any model. An unreadable
      // MIG name counts as a whole GPU: never under-count.
      auto slices = pool ? mig_profile_slices(suffix) : mig_profile_slices_any_model(suffix);
      return slices ? std::max<int64_t>(*slices, 1) : slices_per_gpu;
    }
  }
  return slices_per_gpu;  // not reached: every kind is listed above
}

bool is_device_class(CompiledPolicy::GpuKind kind) {
  return kind == CompiledPolicy::GpuKind::DeviceClassFull || kind == CompiledPolicy::GpuKind::DeviceClassMig;
}

}  // namespace

int64_t slices_per_unit(const CompiledPolicy& policy, std::string_view resource, const Pool* pool) {
  return kind_slices_per_unit(policy, policy.classify_resource(resource), resource, pool);
}

bool container_asks_for_gpu(const CompiledPolicy& policy, const ContainerView& c) {
  auto asks = [&](const ResourceQuantity& q) {
    if (policy.classify_resource(q.name) == CompiledPolicy::GpuKind::NotGpu) return false;
    return quantity_of(q).nonzero();
  };
  return std::any_of(c.requests.begin(), c.requests.end(), asks) ||
         std::any_of(c.limits.begin(), c.limits.end(), asks);
}

std::string gpu_sources_text(const GpuRequest& gpu) {
  std::string out;
  auto add = [&](std::string part) { out += (out.empty() ? "" : " + ") + part; };
  if (gpu.resource_slices > 0) {
    std::string what = gpu.several_resources ? "through resources" : bounded(gpu.first_resource);
    // A MIG class's extended resource names no profile: each device counts as the GPU it may be.
    if (!gpu.several_resources && gpu.first_kind == CompiledPolicy::GpuKind::DeviceClassMig) what += " (a whole GPU each)";
    add(gpus_text(gpu.resource_slices, gpu.slices_per_gpu) + " " + what);
  }
  for (const auto& e : gpu.claims.entries) {
    if (e.repeat) continue;
    if (!e.resolved()) add("? from " + e.describe() + " (not found)");
    else if (e.gpus.gpu) add(gpus_text(e.gpus.slices, gpu.slices_per_gpu) + " from " + e.describe());
  }
  return out;
}

const std::pair<std::string_view, std::string_view>* gpu_sharing_annotation(const CompiledPolicy& policy,
                                                                            const PodView& pod) {
  const auto& keys = policy.gpu_sharing_annotations();
  if (keys.empty()) return nullptr;
  for (const auto& entry : pod.annotations)
    if (std::find(keys.begin(), keys.end(), entry.first) != keys.end()) return &entry;
  return nullptr;
}

GpuRequest compute_gpu_request(const CompiledPolicy& policy, const PodView& pod, const Pool* pool,
                               std::vector<QuantityProblem>* problems, const ClaimResolver* resolver,
                               std::string_view namespace_name, std::pmr::memory_resource* memory,
                               const PodGroupView* group) {
  GpuRequest out(memory);
  out.slices_per_gpu = slices_per_gpu_in(pool);

  auto container_slices = [&](const ContainerView& c) -> int64_t {
    int64_t total = 0;
    // Requests first; a resource only in limits counts its limit (requests default to limits).
    // A limit beside a request counts only what it adds: the API server requires the two to be
    // equal for extended resources, but a file given to `check` may not, and the larger counts.
    auto count = [&](const ResourceQuantity& q, bool in_limits) {
      const CompiledPolicy::GpuKind kind = policy.classify_resource(q.name);
      const int64_t per_unit = kind_slices_per_unit(policy, kind, q.name, pool);
      if (per_unit == 0) {
        // A sharing layer's fraction (gpuResources.fractional) makes a GPU pod and counts nothing:
        // the GPUs come from the GPU resource beside it.
        if (kind == CompiledPolicy::GpuKind::Fractional && quantity_of(q).nonzero()) out.asks_for_gpu = true;
        return;
      }
      const ResourceQuantity* request = in_limits ? find_resource(c.requests, q.name) : nullptr;
      const int64_t already = request ? units_of(quantity_of(*request)) : 0;
      Quantity value = quantity_of(q);
      // A quantity too large to represent is a whole number: it counts above any cap, and is a
      // finding only where a cap applies (the cap check below).
      if (!value.is_integer() && value.status != Quantity::Status::TooLarge && problems)
        problems->push_back({&c, in_limits, &q, value.status});
      if (value.nonzero()) {
        out.asks_for_gpu = true;
        out.device_class_resources = out.device_class_resources || is_device_class(kind);
        if (out.first_resource.empty()) {
          out.first_resource = q.name;
          out.first_kind = kind;
        } else if (q.name != out.first_resource) {
          out.several_resources = true;
        }
      }
      const int64_t units = units_of(value);
      if (units > already) total = sat_add(total, sat_mul(units - already, per_unit));
    };
    for (const auto& q : c.requests) count(q, false);
    for (const auto& q : c.limits) count(q, true);
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
  out.resource_slices = std::max(sat_add(app_sum, restartable_sum), init_max);
  // A scheduler's GPU share by annotation makes a GPU pod and counts no GPUs (as a fractional resource).
  if (gpu_sharing_annotation(policy, pod)) out.asks_for_gpu = true;
  out.claims = resolve_pod_claims(policy, pod, pool, resolver, namespace_name, memory, group);
  out.slices = sat_add(out.resource_slices, out.claims.slices);
  return out;
}

}  // namespace gpu_admission::policy
