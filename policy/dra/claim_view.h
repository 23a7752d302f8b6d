// Dynamic Resource Allocation: a ResourceClaim or ResourceClaimTemplate decoded into
// one typed view, whatever its API version (resource.k8s.io v1 and v1beta2 put a request's
// fields under `exactly:` or give `firstAvailable:`; v1beta1 has them flat on the request). Like
// PodView, strings are views into the decoded document. Pods refer to claims by name; the
// evaluator asks a ClaimResolver for them, so where claims come from (the inputs of `check`, the
// cluster state of `serve`) is not the policy engine's business.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "policy/views/pod_view.h"  // Toleration

namespace gpu_admission::policy {

enum class ClaimKind : uint8_t { Claim, Template };
enum class AllocationMode : uint8_t { ExactCount, All };

// One way to satisfy a request: the request itself (`exactly`, or a flat v1beta1 request), or
// one of its `firstAvailable` alternatives.
struct DeviceSubrequest {
  std::string_view name;              // the subrequest's name ("" for the request itself)
  std::string_view device_class;      // deviceClassName
  AllocationMode mode = AllocationMode::ExactCount;
  int64_t count = 1;                  // ExactCount only
  bool admin_access = false;
  // `capacity` is set (capacity.requests, consumable capacity, Kubernetes 1.34+): it asks for a
  // share of a device that other claims may be allocated too.
  bool capacity = false;
  std::vector<std::string_view> selectors;  // CEL expressions (selectors[].cel.expression)
  // The MIG profiles `selectors` pin, sorted and distinct, when `pins_found` (views into the
  // selectors; claim_gpus.h: find_pinned_mig_profiles). The claim decoder finds them once, so a
  // pod using a cached claim does not read its CEL on every request; counting a view built
  // otherwise finds them itself.
  bool pins_found = false;
  std::vector<std::string_view> pinned_profiles;
  // tolerations (Kubernetes 1.33+): the device taints this request may be allocated devices with.
  std::vector<Toleration> tolerations;
};

struct DeviceRequestView {
  uint32_t index = 0;                 // position in spec.devices.requests
  std::string_view name;
  bool first_available = false;       // alternatives come from firstAvailable
  std::vector<DeviceSubrequest> alternatives;  // one entry unless first_available
};

// spec.devices.config[i] with an opaque driver configuration.
struct DriverConfigView {
  uint32_t index = 0;
  std::string_view driver;                  // opaque.driver
  std::string_view parameters_kind;         // opaque.parameters.kind (GpuConfig, MigDeviceConfig, ...)
  std::string_view sharing_strategy;        // opaque.parameters.sharing.strategy (MPS, TimeSlicing)
  // opaque.parameters.allocationMode of the compute-domain driver (ComputeDomainChannelConfig:
  // Single, or All: every IMEX channel of the domain).
  std::string_view allocation_mode;
  std::vector<std::string_view> requests;   // the requests it applies to; empty: all
};

struct ClaimView {
  ClaimKind kind = ClaimKind::Claim;
  std::string_view api_version;
  std::string_view name;
  std::string_view namespace_name;
  std::vector<DeviceRequestView> requests;
  std::vector<DriverConfigView> configs;

  void clear();
  // Field path of spec.devices in this object: "spec.devices" or "spec.spec.devices" (template).
  std::string_view devices_field() const {
    return kind == ClaimKind::Template ? "spec.spec.devices" : "spec.devices";
  }
};

// Where the evaluator finds the claims a pod refers to. Lookups are by namespace and name;
// nullptr means not found. Implementations must be safe to call from many threads at once.
class ClaimResolver {
 public:
  virtual ~ClaimResolver() = default;
  virtual const ClaimView* find(ClaimKind kind, std::string_view namespace_name, std::string_view name) const = 0;
};

}  // namespace gpu_admission::policy
