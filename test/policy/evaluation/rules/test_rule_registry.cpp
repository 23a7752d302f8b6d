// The rule registry holds together: each line of policy/base/rules.def has a well-formed ID,
// reason and categories, and an entry defined in the rule's own file (named after its ID) with
// its checks and what they refuse; what is derived from the categories (PolicyReport severity,
// lint's podLabels warning) follows them. That a missing entry or check does not build is the
// compiler's part (rules/rule.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "policy/base/ids.h"
#include "policy/evaluation/rules/rule.h"
#include "test_paths.h"

using namespace gpu_admission;

namespace {

bool kebab_case(std::string_view id) {
  if (id.empty() || id.front() == '-' || id.back() == '-' || id.find("--") != std::string_view::npos) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

// "gpu-device-access" -> "policy/evaluation/rules/gpu_device_access.cpp"
std::string rule_file(std::string_view id) {
  std::string file(id);
  for (char& c : file)
    if (c == '-') c = '_';
  return "policy/evaluation/rules/" + file + ".cpp";
}

uint8_t all_categories() {
  uint8_t bits = 0;
  for (const auto& c : policy::kRuleCategories) bits |= c.flag;
  return bits;
}

}  // namespace

TEST_CASE("every rule of rules.def has a stable ID, a short reason and known categories", "[registry]") {
  REQUIRE(policy::kRuleCount == policy::kRuleNames.size());
  std::set<std::string_view> ids, reasons;
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const auto id = static_cast<policy::RuleId>(i);
    const policy::RuleInfo& info = policy::info_of(id);
    INFO("rule " << info.name);
    CHECK(kebab_case(info.name));
    CHECK(policy::kRuleNames[i] == info.name);
    CHECK(policy::name_of(id) == info.name);
    CHECK(policy::enum_from_name<policy::RuleId>(policy::kRuleNames, info.name) == id);
    CHECK(ids.insert(info.name).second);
    CHECK_FALSE(info.reason.empty());
    CHECK(info.reason.size() <= 60);  // a few words: the rule reference's summary column
    CHECK(reasons.insert(info.reason).second);
    CHECK(info.categories != 0);
    CHECK((info.categories & ~all_categories()) == 0);
  }
  std::set<std::string_view> names;
  for (const auto& c : policy::kRuleCategories) {
    CHECK(names.insert(c.name).second);
    CHECK_FALSE(c.meaning.empty());
  }
}

TEST_CASE("every rule's entry is defined in its own file, with its checks and what they refuse", "[registry]") {
  const auto& entries = policy::rule_entries();
  size_t claim_rules = 0;
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const std::string_view id = policy::kRuleNames[i];
    INFO("rule " << id);
    REQUIRE(entries[i] != nullptr);
    const policy::RuleEntry& e = *entries[i];
    CHECK(e.pod != nullptr);
    CHECK_FALSE(e.refuses.empty());
    CHECK((e.claim != nullptr) == !e.claim_refuses.empty());
    if (e.claim) ++claim_rules;
    // The file named after the rule ID defines its entry, and it is in the checkout.
    CHECK(e.source == rule_file(id));
    CHECK(std::filesystem::is_regular_file(std::filesystem::path(test_paths::source_dir()) / std::string(e.source)));
    for (size_t j = 0; j < i; ++j) CHECK(entries[j] != entries[i]);
  }
  CHECK(claim_rules >= 2);  // gpu-cap and gpu-device-access judge claims on their own
}

TEST_CASE("what follows from a rule's categories", "[registry]") {
  // The security rules: high severity in PolicyReports (webhook/io/policy_report.cpp).
  std::set<std::string_view> security;
  for (size_t i = 0; i < policy::kRuleCount; ++i)
    if (policy::is_security_rule(static_cast<policy::RuleId>(i))) security.insert(policy::kRuleNames[i]);
  CHECK(security == std::set<std::string_view>{"privileged", "host-namespaces", "gpu-device-access",
                                               "mps-adversarial", "gpu-sharing"});
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const auto id = static_cast<policy::RuleId>(i);
    INFO("rule " << policy::name_of(id));
    CHECK(policy::is_security_rule(id) == policy::info_of(id).in(policy::kSecurityRule));
  }
  // Only tenant-label is neither a security nor a GPU rule (lint's podLabels warning covers the rest).
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const policy::RuleInfo& info = policy::kRuleInfos[i];
    INFO("rule " << info.name);
    CHECK(info.in(policy::kSecurityRule | policy::kGpuRule) == (info.name != "tenant-label"));
  }
}
