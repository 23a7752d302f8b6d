// Stable identifiers of the public contract: rule IDs (listed in rules.def), mutation names,
// actions and modes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpu_admission::policy {

// The rules, from rules.def (one line each): the enum, their stable IDs and what each is.
enum class RuleId : uint8_t {
#define GPU_ADMISSION_RULE(Enum, id, reason, categories) Enum,
#include "policy/base/rules.def"
#undef GPU_ADMISSION_RULE
};

// What a rule keeps out: flags a rule combines in rules.def. kRuleCategories says what each one
// means and what it changes; the rule reference lists the rules of each.
enum RuleCategory : uint8_t { kSecurityRule = 1 << 0, kGpuRule = 1 << 1, kTenancyRule = 1 << 2 };

struct RuleCategoryInfo {
  RuleCategory flag;
  std::string_view name;     // in the rule reference: "security"
  std::string_view meaning;  // what it says of a rule and what it changes (Markdown)
};
inline constexpr std::array<RuleCategoryInfo, 3> kRuleCategories = {{
    {kSecurityRule, "security",
     "keeps tenants apart on a node: a deny finding is `high` severity in PolicyReports, and `policy lint` warns "
     "about an exception that selects the rule by `podLabels`"},
    {kGpuRule, "gpu",
     "decides which GPUs a pod gets and where it runs: `policy lint` warns about an exception that selects the rule "
     "by `podLabels`"},
    {kTenancyRule, "tenancy", "decides whose pod it is: tenant labels and pools"},
}};

struct RuleInfo {
  std::string_view name;    // the stable rule ID: "gpu-cap"
  std::string_view reason;  // what it refuses, in a few words: "GPU request over the cap"
  uint8_t categories;       // RuleCategory flags
  constexpr bool in(uint8_t category) const { return (categories & category) != 0; }
};

inline constexpr auto kRuleInfos = std::to_array<RuleInfo>({
#define GPU_ADMISSION_RULE(Enum, id, reason, categories) {id, reason, static_cast<uint8_t>(categories)},
#include "policy/base/rules.def"
#undef GPU_ADMISSION_RULE
});
inline constexpr size_t kRuleCount = kRuleInfos.size();
inline constexpr std::array<std::string_view, kRuleCount> kRuleNames = {
#define GPU_ADMISSION_RULE(Enum, id, reason, categories) id,
#include "policy/base/rules.def"
#undef GPU_ADMISSION_RULE
};

inline constexpr const RuleInfo& info_of(RuleId id) { return kRuleInfos[static_cast<size_t>(id)]; }
// The rules that keep tenants apart on a node (kSecurityRule).
inline constexpr bool is_security_rule(RuleId rule) { return info_of(rule).in(kSecurityRule); }

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
