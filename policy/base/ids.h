// Stable identifiers of the public contract: rule IDs, mutation names, actions and modes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpu_admission::policy {

enum class RuleId : uint8_t {
  Privileged,
  HostNamespaces,
  GpuDeviceAccess,
  GpuCap,
  MpsAdversarial,
  GpuTolerations,
  TenantPool,
  TenantLabel,
  MigProfile,
  GpuSharing,
};
inline constexpr size_t kRuleCount = 10;
inline constexpr std::array<std::string_view, kRuleCount> kRuleNames = {
    "privileged",    "host-namespaces", "gpu-device-access", "gpu-cap",   "mps-adversarial",
    "gpu-tolerations", "tenant-pool",   "tenant-label",      "mig-profile",
    "gpu-sharing"};

enum class MutationId : uint8_t { MigResources, TenantLabels, PoolSelector, HideGpus };
inline constexpr size_t kMutationCount = 4;
inline constexpr std::array<std::string_view, kMutationCount> kMutationNames = {"mig-resources", "tenant-labels",
                                                                                 "pool-selector", "hide-gpus"};

enum class Action : uint8_t { Deny, Warn, Audit, Off };
inline constexpr std::array<std::string_view, 4> kActionNames = {"deny", "warn", "audit", "off"};

// spec.enforcement and tenants[].enforcement: how far the guard acts (enforce; warn: nothing
// changes or is denied, the user is told; audit: nothing changes, it is recorded), capped by
// serve --enforcement. Ordered from strongest to weakest.
enum class Enforcement : uint8_t { Enforce, Warn, Audit };
inline constexpr std::array<std::string_view, 3> kEnforcementNames = {"enforce", "warn", "audit"};

// The rules that keep tenants apart on a node: an exception that selects them by pod labels
// alone is a lint warning, and their deny findings are high severity in PolicyReports.
inline constexpr std::array<RuleId, 5> kSecurityRules = {RuleId::Privileged, RuleId::HostNamespaces,
                                                         RuleId::GpuDeviceAccess, RuleId::MpsAdversarial,
                                                         RuleId::GpuSharing};
inline constexpr bool is_security_rule(RuleId rule) {
  for (RuleId r : kSecurityRules)
    if (r == rule) return true;
  return false;
}

inline std::string_view name_of(RuleId id) { return kRuleNames[static_cast<size_t>(id)]; }
inline std::string_view name_of(MutationId id) { return kMutationNames[static_cast<size_t>(id)]; }
inline std::string_view name_of(Action a) { return kActionNames[static_cast<size_t>(a)]; }
inline std::string_view name_of(Enforcement e) { return kEnforcementNames[static_cast<size_t>(e)]; }

template <typename Enum, size_t N>
std::optional<Enum> enum_from_name(const std::array<std::string_view, N>& names, std::string_view text) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace gpu_admission::policy
