// GPUs a ResourceClaim asks for, in exact integer compute slices, and the facts rules
// need per request (GPU or not, allocationMode All, adminAccess, MPS or time-slicing sharing, a
// share of a device through consumable capacity, pinned MIG profiles, IMEX channels of a whole
// compute domain). Pure functions over a
// decoded ClaimView; the caller says which device classes are GPU classes and how many slices a
// GPU and a MIG profile have (from the policy and the pool).
//
// Counting: a full-GPU device is one GPU (slices_per_gpu slices); a MIG device is its pinned
// profile's slices (at most one GPU) when a selector pins the profile
// (`device.attributes['gpu.nvidia.com'].profile == '1g.10gb'`, possibly one conjunct of a
// top-level `&&` chain), otherwise one whole GPU; times `count`. `allocationMode: All` is
// unbounded (flagged, and counted as kSaturatedSlices). firstAvailable counts its largest
// alternative. A claim's slices are the sum over its GPU requests. Arithmetic saturates at
// kSaturatedSlices (policy/dra/gpu_request.h).
//
// Memory: the lists of a count come from the memory resource the caller passes (the heap by
// default). The evaluator passes an arena that lives for one evaluation, so counting the claims
// of a review touches the heap only when they outgrow it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/dra/claim_view.h"

namespace gpu_admission::policy {

// MIG profiles: views into a claim's selectors, sorted and distinct.
using ProfileList = std::pmr::vector<std::string_view>;

// The profile a CEL selector pins, when it certainly pins one: the whole expression, or one
// conjunct of a top-level `&&` chain (parentheses allowed around the whole and around
// conjuncts), is `device.attributes['gpu.nvidia.com'].profile == '<p>'` (either quote style,
// `["profile"]` for `.profile`, the literal on either side). Not a pin: an equality under `||`,
// `!` or a ternary, `!=`, escapes or raw/byte/triple-quoted strings in the parts we read,
// anything the tokenizer does not know, or two conjuncts pinning different profiles.
std::optional<std::string> pinned_mig_profile(std::string_view cel);

// Every profile the expression's top-level conjuncts pin (sorted, distinct; empty when none or
// when the expression is not understood). Views into `cel`.
std::vector<std::string_view> pinned_mig_profiles(std::string_view cel);
// The same appended to `out` (sorted and without repeats among those appended).
void append_pinned_mig_profiles(std::string_view cel, ProfileList& out);
// Sets sub.pinned_profiles to what all of its selectors pin (sorted, distinct) and pins_found.
void find_pinned_mig_profiles(DeviceSubrequest& sub);

enum class GpuClassKind : uint8_t { NotGpu, Full, Mig };

// The default device classes: gpu.nvidia.com and vfio.gpu.nvidia.com are Full,
// mig.nvidia.com is Mig.
GpuClassKind default_gpu_class_kind(std::string_view device_class);

// The compute-domain driver's default classes (IMEX channels and daemons of Multi-Node NVLink
// domains): compute-domain-default-channel.nvidia.com, compute-domain-daemon.nvidia.com, and
// imex.nvidia.com (the IMEX channel class of earlier driver versions).
bool default_imex_class(std::string_view device_class);

struct GpuCounting {
  // What a device class is; empty: default_gpu_class_kind.
  std::function<GpuClassKind(std::string_view device_class)> class_kind;
  // Compute slices of one GPU of the pool's model (7; 4 for the A30). Values below 1 count as 7.
  int slices_per_gpu = 7;
  // Slices of a MIG profile ("1g.10gb" -> 1); nullopt (or below 1) when unknown: the device
  // counts as a whole GPU. Empty: mig_profile_slices (the leading "<g>g.").
  std::function<std::optional<int>(std::string_view profile)> profile_slices;
  // Whether a device class hands out IMEX channels or daemons; empty: default_imex_class.
  std::function<bool(std::string_view device_class)> imex_class;
};

struct SubrequestGpus {
  explicit SubrequestGpus(std::pmr::memory_resource* memory = std::pmr::get_default_resource()) : profiles(memory) {}
  GpuClassKind kind = GpuClassKind::NotGpu;  // of its device class
  bool gpu = false;      // its device class is a GPU class
  bool all = false;      // a GPU class with allocationMode All
  int64_t slices = 0;    // kSaturatedSlices when `all`
  ProfileList profiles;  // MIG class: profiles its selectors pin (sorted, distinct; views into the claim)
};

struct RequestGpus {
  explicit RequestGpus(std::pmr::memory_resource* memory = std::pmr::get_default_resource())
      : profiles(memory), imex_every_channel(memory) {}
  uint32_t index = 0;          // spec.devices.requests[index]
  std::string_view name;
  bool first_available = false;
  bool gpu = false;            // some alternative asks a GPU class
  bool full_class = false;     // some alternative asks a full-GPU class
  bool mig_class = false;      // some alternative asks a MIG class
  bool all = false;            // some GPU alternative asks allocationMode All (unbounded)
  bool admin_access = false;   // a GPU alternative with adminAccess: true
  // A gpu.nvidia.com GpuConfig / MigDeviceConfig with sharing.strategy MPS (any case) applies
  // to the request. Set whatever the device class: the config is the NVIDIA driver's.
  bool mps = false;
  bool time_slicing = false;   // the same for sharing.strategy TimeSlicing
  bool capacity = false;       // a GPU alternative asks for a share of a device (capacity.requests)
  int64_t slices = 0;          // the largest GPU alternative
  ProfileList profiles;        // profiles pinned by its MIG alternatives (sorted, distinct)
  // IMEX: the device classes of its alternatives that reach every channel of a compute domain
  // (sorted, distinct; views into the claim): an IMEX class asked with allocationMode All or a
  // count above 1 (a range of channels), or any class under a compute-domain.nvidia.com config
  // asking for all channels (ComputeDomainChannelConfig allocationMode All, any case) or for the
  // domain's IMEX daemon (ComputeDomainDaemonConfig).
  ProfileList imex_every_channel;
  bool imex_config = false;    // a compute-domain config reaching every channel applies to the request
};

struct ClaimGpus {
  explicit ClaimGpus(std::pmr::memory_resource* memory = std::pmr::get_default_resource()) : requests(memory) {}
  int64_t slices = 0;          // sum over GPU requests (saturating)
  bool gpu = false;            // some request is a GPU request
  bool all = false;            // some request has `all`
  bool admin_access = false;   // some request has `admin_access`
  bool mps = false;            // some request has `mps`
  bool time_slicing = false;   // some request has `time_slicing`
  bool capacity = false;       // some GPU request has `capacity`
  bool imex_every_channel = false;  // some request has `imex_every_channel` entries
  std::pmr::vector<RequestGpus> requests;  // one per request of the claim, in order
};

SubrequestGpus count_subrequest(const DeviceSubrequest& sub, const GpuCounting& counting,
                                std::pmr::memory_resource* memory = std::pmr::get_default_resource());

// True when `config` is an NVIDIA GPU driver config asking for MPS (driver gpu.nvidia.com,
// parameters kind GpuConfig or MigDeviceConfig, sharing.strategy MPS in any case).
bool config_asks_mps(const DriverConfigView& config);
// The same for sharing.strategy TimeSlicing (in any case).
bool config_asks_time_slicing(const DriverConfigView& config);

// True when `config` is a compute-domain driver config that reaches every IMEX channel of its
// domain: ComputeDomainChannelConfig with allocationMode All (any case), or ComputeDomainDaemonConfig.
bool config_reaches_every_imex_channel(const DriverConfigView& config);

// True when `config` applies to the request named `request`: it lists no requests, or lists
// `request` or `request/<subrequest>` (the part before the first '/' is the request).
bool config_applies_to(const DriverConfigView& config, std::string_view request);

RequestGpus count_request(const ClaimView& claim, const DeviceRequestView& request, const GpuCounting& counting,
                          std::pmr::memory_resource* memory = std::pmr::get_default_resource());

ClaimGpus count_claim_gpus(const ClaimView& claim, const GpuCounting& counting,
                           std::pmr::memory_resource* memory = std::pmr::get_default_resource());

}  // namespace gpu_admission::policy
