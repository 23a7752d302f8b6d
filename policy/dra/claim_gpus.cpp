// Counting the GPUs of a decoded ResourceClaim; see claim_gpus.h.
#include "policy/dra/claim_gpus.h"

#include <algorithm>

#include "policy/dra/claim_decoder.h"
#include "policy/dra/gpu_request.h"
#include "policy/views/mig.h"

namespace gpu_admission::policy {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

// Sorted and distinct, in n log n (a selector list is as long as the document allows).
void sort_unique(ProfileList& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// What all of `sub`'s selectors pin, sorted and distinct, into the empty `out`.
void collect_selector_pins(const DeviceSubrequest& sub, ProfileList& out) {
  for (std::string_view cel : sub.selectors) append_pinned_mig_profiles(cel, out);
  sort_unique(out);
}

// The request a config entry names: `req` of `req` or `req/subrequest`.
std::string_view request_part(std::string_view listed) { return listed.substr(0, listed.find('/')); }

// The request's device facts, without driver configs.
RequestGpus count_devices(const DeviceRequestView& request, const GpuCounting& counting,
                          std::pmr::memory_resource* memory) {
  RequestGpus out(memory);
  out.index = request.index;
  out.name = request.name;
  out.first_available = request.first_available;
  for (const DeviceSubrequest& sub : request.alternatives) {
    const bool imex = counting.imex_class ? counting.imex_class(sub.device_class) : default_imex_class(sub.device_class);
    if (imex && (sub.mode == AllocationMode::All || sub.count > 1)) out.imex_every_channel.push_back(sub.device_class);
    SubrequestGpus alt = count_subrequest(sub, counting, memory);
    if (!alt.gpu) continue;
    out.gpu = true;
    out.full_class = out.full_class || alt.kind == GpuClassKind::Full;
    out.mig_class = out.mig_class || alt.kind == GpuClassKind::Mig;
    out.all = out.all || alt.all;
    out.admin_access = out.admin_access || sub.admin_access;
    out.capacity = out.capacity || sub.capacity;
    out.slices = std::max(out.slices, alt.slices);
    out.profiles.insert(out.profiles.end(), alt.profiles.begin(), alt.profiles.end());
  }
  sort_unique(out.profiles);
  sort_unique(out.imex_every_channel);
  return out;
}

// A compute-domain config reaching every IMEX channel applies to `out`: every alternative's class
// of its request reaches them (the driver applies its config to its own devices, whichever
// alternative is allocated).
void add_imex_configured(const DeviceRequestView& request, RequestGpus& out) {
  for (const DeviceSubrequest& sub : request.alternatives) out.imex_every_channel.push_back(sub.device_class);
  sort_unique(out.imex_every_channel);
}

// Sets `flag` on the requests that a config `asks` for applies to, in (requests + names) log
// requests.
void mark_configured(const ClaimView& claim, std::pmr::vector<RequestGpus>& requests,
                     bool (*asks)(const DriverConfigView&), bool RequestGpus::*flag) {
  std::pmr::vector<std::pair<std::string_view, size_t>> by_name(requests.get_allocator());
  for (const DriverConfigView& config : claim.configs) {
    if (!asks(config)) continue;
    if (config.requests.empty()) {
      for (RequestGpus& r : requests) r.*flag = true;
      return;
    }
    if (by_name.empty()) {
      for (size_t i = 0; i < requests.size(); ++i) by_name.emplace_back(requests[i].name, i);
      std::sort(by_name.begin(), by_name.end());
    }
    for (std::string_view listed : config.requests) {
      auto it = std::lower_bound(by_name.begin(), by_name.end(), std::make_pair(request_part(listed), size_t{0}));
      for (; it != by_name.end() && it->first == request_part(listed); ++it) requests[it->second].*flag = true;
    }
  }
}

// The NVIDIA GPU driver's config kinds that carry `sharing`.
bool nvidia_sharing_config(const DriverConfigView& config) {
  return config.driver == kNvidiaGpuDriver &&
         (config.parameters_kind == "GpuConfig" || config.parameters_kind == "MigDeviceConfig");
}

// Slices of one MIG device pinned to `profile`: its slices (a profile larger than the model's GPU
// counts all of them: never under-count); a whole GPU when the profile is unknown.
int64_t profile_device_slices(std::string_view profile, const GpuCounting& counting, int per_gpu) {
  std::optional<int> slices = counting.profile_slices ? counting.profile_slices(profile) : mig_profile_slices(profile);
  if (!slices || *slices < 1) return per_gpu;
  return *slices;
}

}  // namespace

void find_pinned_mig_profiles(DeviceSubrequest& sub) {
  ProfileList pins;
  collect_selector_pins(sub, pins);
  sub.pinned_profiles.assign(pins.begin(), pins.end());
  sub.pins_found = true;
}

GpuClassKind default_gpu_class_kind(std::string_view device_class) {
  if (device_class == "gpu.nvidia.com" || device_class == "vfio.gpu.nvidia.com") return GpuClassKind::Full;
  if (device_class == "mig.nvidia.com") return GpuClassKind::Mig;
  return GpuClassKind::NotGpu;
}

SubrequestGpus count_subrequest(const DeviceSubrequest& sub, const GpuCounting& counting,
                                std::pmr::memory_resource* memory) {
  SubrequestGpus out(memory);
  const GpuClassKind kind =
      counting.class_kind ? counting.class_kind(sub.device_class) : default_gpu_class_kind(sub.device_class);
  out.kind = kind;
  if (kind == GpuClassKind::NotGpu) return out;
  out.gpu = true;
  const int per_gpu = counting.slices_per_gpu >= 1 ? counting.slices_per_gpu : 7;
  int64_t device_slices = per_gpu;
  if (kind == GpuClassKind::Mig) {
    // Every selector must hold: each pin restricts the device; with different pins (nothing
    // matches) the largest is counted.
    if (sub.pins_found) out.profiles.assign(sub.pinned_profiles.begin(), sub.pinned_profiles.end());
    else collect_selector_pins(sub, out.profiles);
    if (!out.profiles.empty()) {
      device_slices = 0;
      for (std::string_view profile : out.profiles)
        device_slices = std::max(device_slices, profile_device_slices(profile, counting, per_gpu));
    }
  }
  if (sub.mode == AllocationMode::All) {
    out.all = true;
    out.slices = kSaturatedSlices;
  } else {
    out.slices = sat_mul(device_slices, std::max<int64_t>(sub.count, 1));
  }
  return out;
}

bool config_asks_mps(const DriverConfigView& config) {
  return nvidia_sharing_config(config) && iequals(config.sharing_strategy, "MPS");
}

bool config_asks_time_slicing(const DriverConfigView& config) {
  return nvidia_sharing_config(config) && iequals(config.sharing_strategy, "TimeSlicing");
}

bool config_reaches_every_imex_channel(const DriverConfigView& config) {
  if (config.driver != kComputeDomainDriver) return false;
  return config.parameters_kind == "ComputeDomainDaemonConfig" ||
         (config.parameters_kind == "ComputeDomainChannelConfig" && iequals(config.allocation_mode, "All"));
}

bool default_imex_class(std::string_view device_class) {
  return device_class == "compute-domain-default-channel.nvidia.com" ||
         device_class == "compute-domain-daemon.nvidia.com" || device_class == "imex.nvidia.com";
}

bool config_applies_to(const DriverConfigView& config, std::string_view request) {
  if (config.requests.empty()) return true;
  for (std::string_view listed : config.requests)
    if (request_part(listed) == request) return true;
  return false;
}

RequestGpus count_request(const ClaimView& claim, const DeviceRequestView& request, const GpuCounting& counting,
                          std::pmr::memory_resource* memory) {
  RequestGpus out = count_devices(request, counting, memory);
  for (const DriverConfigView& config : claim.configs) {
    if (!config_applies_to(config, request.name)) continue;
    out.mps = out.mps || config_asks_mps(config);
    out.time_slicing = out.time_slicing || config_asks_time_slicing(config);
    out.imex_config = out.imex_config || config_reaches_every_imex_channel(config);
  }
  if (out.imex_config) add_imex_configured(request, out);
  return out;
}

ClaimGpus count_claim_gpus(const ClaimView& claim, const GpuCounting& counting, std::pmr::memory_resource* memory) {
  ClaimGpus out(memory);
  out.requests.reserve(claim.requests.size());
  for (const DeviceRequestView& request : claim.requests)
    out.requests.push_back(count_devices(request, counting, memory));
  mark_configured(claim, out.requests, config_asks_mps, &RequestGpus::mps);
  mark_configured(claim, out.requests, config_asks_time_slicing, &RequestGpus::time_slicing);
  mark_configured(claim, out.requests, config_reaches_every_imex_channel, &RequestGpus::imex_config);
  for (size_t i = 0; i < out.requests.size(); ++i)
    if (out.requests[i].imex_config) add_imex_configured(claim.requests[i], out.requests[i]);
  for (const RequestGpus& r : out.requests) {
    out.imex_every_channel = out.imex_every_channel || !r.imex_every_channel.empty();
    out.mps = out.mps || r.mps;
    out.time_slicing = out.time_slicing || r.time_slicing;
    if (!r.gpu) continue;
    out.capacity = out.capacity || r.capacity;
    out.gpu = true;
    out.all = out.all || r.all;
    out.admin_access = out.admin_access || r.admin_access;
    out.slices = sat_add(out.slices, r.slices);
  }
  return out;
}

}  // namespace gpu_admission::policy
