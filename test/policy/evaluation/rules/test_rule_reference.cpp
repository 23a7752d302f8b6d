// The rule reference is generated from the registry: docs/rules.md (every rule: its ID, short
// reason, categories, what it refuses in pods and in claims on their own, its file and fixtures)
// and the rule table of docs/policy-reference.md (between its generated-table markers). The
// tests fail while a committed file differs from what the registry renders; run them with
// GPU_ADMISSION_WRITE_DOCS=1 to write the files instead.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "policy/base/ids.h"
#include "policy/evaluation/rules/rule.h"
#include "test_paths.h"

using namespace gpu_admission;

namespace {

namespace fs = std::filesystem;

constexpr const char* kRegenerate = "GPU_ADMISSION_WRITE_DOCS=1 build/test/policy_tests \"[rule-reference]\"";
constexpr std::string_view kTableBegin =
    "<!-- rule table: generated from the rule registry, as docs/rules.md is; see there to change it -->\n";
constexpr std::string_view kTableEnd = "<!-- end of rule table -->\n";

fs::path doc_path(std::string_view name) { return fs::path(test_paths::source_dir()) / "docs" / std::string(name); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_mode() {
  const char* v = std::getenv("GPU_ADMISSION_WRITE_DOCS");
  return v && *v && std::string_view(v) != "0";
}

// "security" / "gpu, tenancy"
std::string categories_of(const policy::RuleInfo& info) {
  std::string out;
  for (const auto& c : policy::kRuleCategories)
    if (info.in(c.flag)) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

std::string judges(const policy::RuleEntry& e) {
  std::string out = "pods";
  if (e.claim) out += ", claims";
  if (e.group) out += ", PodGroups";
  return out;
}

std::string summary_row(size_t i, std::string_view link_prefix) {
  const policy::RuleInfo& info = policy::kRuleInfos[i];
  const std::string name(info.name);
  return "| `" + name + "` | [" + std::string(info.reason) + "](" + std::string(link_prefix) + "#" + name + ") | " +
         categories_of(info) + " | " + judges(*policy::rule_entries()[i]) + " |\n";
}

std::string summary_table(std::string_view link_prefix) {
  std::string out = "| rule ID | refuses, in short | categories | judges |\n|---|---|---|---|\n";
  for (size_t i = 0; i < policy::kRuleCount; ++i) out += summary_row(i, link_prefix);
  return out;
}

std::string categories_table() {
  std::string out = "| category | what it means | rules |\n|---|---|---|\n";
  for (const auto& c : policy::kRuleCategories) {
    std::string rules;
    for (const auto& info : policy::kRuleInfos)
      if (info.in(c.flag)) rules += (rules.empty() ? "`" : ", `") + std::string(info.name) + "`";
    out += "| `" + std::string(c.name) + "` | " + std::string(c.meaning) + " | " + rules + " |\n";
  }
  return out;
}

std::string rule_section(size_t i) {
  const policy::RuleInfo& info = policy::kRuleInfos[i];
  const policy::RuleEntry& e = *policy::rule_entries()[i];
  const std::string name(info.name), source(e.source);
  std::string out = "\n## `" + name + "`\n\n";
  out += "- Reason: " + std::string(info.reason) + "\n- Categories: " + categories_of(info) + "\n- Checked in: [`" +
         source + "`](../" + source + ")\n- Fixtures: [`test/fixtures/" + name + "/`](../test/fixtures/" + name + ")\n\n";
  out += "**In a pod** (or a workload's pod template), it refuses " + std::string(e.refuses) + ".\n";
  if (e.claim)
    out += "\n**In a ResourceClaim or ResourceClaimTemplate on its own**, it refuses " + std::string(e.claim_refuses) +
           ".\n";
  if (e.group)
    out += "\n**In a PodGroup on its own** (its `spec.resourceClaims`, as each pod of the group has them), it "
           "refuses " + std::string(e.group_refuses) + ".\n";
  return out;
}

std::string rules_md() {
  std::string out = "# Rule reference\n\n";
  out += "<!-- Generated from the rule registry (policy/base/rules.def and each rule's entry in\n"
         "     policy/evaluation/rules/) by test/policy/evaluation/rules/test_rule_reference.cpp, which fails\n"
         "     while this file differs. Do not edit it: change the rule, then run\n"
         "     " + std::string(kRegenerate) + " -->\n\n";
  out += "Every rule a policy can set in `spec.rules` and `tenants[].rules` to `deny`, `warn`, `audit` or `off`\n"
         "([policy-reference.md](policy-reference.md#rules)), in the order rules run and findings are listed.\n"
         "Rules look at every container: init containers (sidecars included), app containers and ephemeral\n"
         "containers. A ResourceClaim or ResourceClaimTemplate is judged on its own, with the tenant of its\n"
         "namespace, by the rules that judge claims; every rule judges the claims a pod uses with the pod.\n"
         "A PodGroup (`scheduling.k8s.io`, Kubernetes 1.36+) is judged on its own by the rules that judge\n"
         "PodGroups, in its tenant's default pool; its claims are every pod's of the group, and every rule\n"
         "judges them with each pod.\n"
         "[adding-a-rule.md](adding-a-rule.md) says how a rule is added.\n\n";
  out += summary_table("");
  out += "\n## Categories\n\n" + categories_table();
  for (size_t i = 0; i < policy::kRuleCount; ++i) out += rule_section(i);
  return out;
}

// The first line where `a` and `b` differ, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string l, r;
  for (int line = 1;; ++line) {
    const bool more_l = static_cast<bool>(std::getline(x, l)), more_r = static_cast<bool>(std::getline(y, r));
    if (!more_l && !more_r) return "none";
    if (more_l != more_r || l != r)
      return "line " + std::to_string(line) + ":\n  committed: " + (more_l ? l : "(end)") +
             "\n  generated: " + (more_r ? r : "(end)");
  }
}

// Writes `text` to `path` in write mode; then compares the file with it.
void check_generated(const fs::path& path, const std::string& text) {
  if (write_mode()) std::ofstream(path, std::ios::binary) << text;
  const std::string committed = read_text(path);
  INFO(path.string() << " differs from what the rule registry renders; regenerate it with\n  " << kRegenerate
                     << "\nfirst difference at " << first_difference(committed, text));
  const bool same = committed == text;  // not CHECK(a == b): Catch would print both files
  CHECK(same);
}

}  // namespace

TEST_CASE("docs/rules.md is the rule reference the registry renders", "[rule-reference]") {
  check_generated(doc_path("rules.md"), rules_md());
}

TEST_CASE("docs/policy-reference.md's rule table is the one the registry renders", "[rule-reference]") {
  const fs::path path = doc_path("policy-reference.md");
  const std::string text = read_text(path);
  const size_t begin = text.find(kTableBegin);
  INFO("docs/policy-reference.md must hold the rule table between \"" << kTableBegin.substr(0, kTableBegin.size() - 1)
                                                                       << "\" and \"" << kTableEnd.substr(0, kTableEnd.size() - 1) << "\"");
  REQUIRE(begin != std::string::npos);
  const size_t end = text.find(kTableEnd, begin);
  REQUIRE(end != std::string::npos);
  const size_t body = begin + kTableBegin.size();
  check_generated(path, text.substr(0, body) + summary_table("rules.md") + text.substr(end));
}

TEST_CASE("the rule reference's summary links reach its sections", "[rule-reference]") {
  const std::string md = rules_md();
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const std::string name(policy::kRuleNames[i]);
    INFO("rule " << name);
    CHECK(md.find("](#" + name + ")") != std::string::npos);
    CHECK(md.find("\n## `" + name + "`\n") != std::string::npos);  // GitHub's anchor of it is #<name>
  }
  CHECK(first_difference("a\nb\n", "a\nc\n") == "line 2:\n  committed: b\n  generated: c");
  CHECK(first_difference("a\n", "a\n") == "none");
}
