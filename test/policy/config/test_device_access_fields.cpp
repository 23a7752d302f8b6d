// The policy fields of gpu-device-access's runtime-class and DRA-toleration checks
// (policy/config/device_access_fields.cpp): what loads, every error with its field path, the
// lint warnings, and `policy show` printing them back so that its output loads the same.
#include <catch2/catch.hpp>

#include <string>

#include "policy/config/device_access_fields.h"
#include "policy/config/policy_loader.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

std::string policy_with(const std::string& spec_lines, const std::string& pool_lines = "") {
  return R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: fields}
spec:
)" + spec_lines + R"(
  pools:
    - name: a
      nodeSelector: {pool: a}
)" + pool_lines + R"(
    - name: b
      nodeSelector: {pool: b}
)";
}

bool reports(const webhook::PolicyLoad& load, const std::string& needle) {
  return load.report().find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("runtimeClasses load globally and per pool; the pool's list overrides", "[loader][runtime-class]") {
  auto load = webhook::load_policy_text(policy_with("  runtimeClasses: [nvidia, kata-nvidia]",
                                                    "      runtimeClasses: [nvidia-cdi]"),
                                        "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  CHECK(load.issues.empty());
  const auto& p = *load.policy;
  CHECK(p.runtime_classes_for(nullptr) == std::vector<std::string>{"nvidia", "kata-nvidia"});
  CHECK(p.runtime_classes_for(&p.pools()[0]) == std::vector<std::string>{"nvidia-cdi"});
  CHECK(p.runtime_classes_for(&p.pools()[1]) == std::vector<std::string>{"nvidia", "kata-nvidia"});

  auto none = webhook::load_policy_text(policy_with("  runtimeClasses: null"), "p.yaml");
  REQUIRE(none.ok());
  CHECK(none.policy->runtime_classes_for(nullptr).empty());
}

TEST_CASE("runtimeClasses errors name the entry", "[loader][runtime-class]") {
  struct Case {
    std::string spec, pool, error;
  };
  const Case cases[] = {
      {"  runtimeClasses: nvidia", "", "p.yaml:5:19: error: spec.runtimeClasses: must be a list of RuntimeClass names, got a string"},
      {"  runtimeClasses: [nvidia, 7]", "", "spec.runtimeClasses[1]: must be a string, got a number"},
      {"  runtimeClasses: [\"\"]", "", "spec.runtimeClasses[0]: \"\" is not a RuntimeClass name"},
      {"  runtimeClasses: [Kata]", "", "spec.runtimeClasses[0]: \"Kata\" is not a RuntimeClass name (a DNS-1123 subdomain"},
      {"  runtimeClasses: [kata_nvidia]", "", "spec.runtimeClasses[0]: \"kata_nvidia\" is not a RuntimeClass name"},
      {"  runtimeClasses: [-kata]", "", "\"-kata\" is not a RuntimeClass name"},
      {"  runtimeClasses: [kata..nvidia]", "", "\"kata..nvidia\" is not a RuntimeClass name"},
      {"  runtimeClasses: [nvidia, nvidia]", "", "spec.runtimeClasses[1]: \"nvidia\" is listed twice"},
      {"", "      runtimeClasses: [runc, \"a/b\"]", "spec.pools[0].runtimeClasses[1]: \"a/b\" is not a RuntimeClass name"},
      {"", "      runtimeClasses: {a: b}", "spec.pools[0].runtimeClasses: must be a list of RuntimeClass names, got a mapping"},
  };
  for (const auto& c : cases) {
    auto load = webhook::load_policy_text(policy_with(c.spec, c.pool), "p.yaml");
    INFO(c.spec << c.pool << "\n" << load.report());
    CHECK_FALSE(load.ok());
    CHECK(reports(load, c.error));
  }
  CHECK(policy::is_dns1123_subdomain("nvidia.example.com"));
  CHECK(policy::is_dns1123_subdomain(std::string(253, 'a')));
  CHECK_FALSE(policy::is_dns1123_subdomain(std::string(254, 'a')));
  CHECK_FALSE(policy::is_dns1123_subdomain("nvidia."));
}

TEST_CASE("a pool's empty runtimeClasses inherits the global list, and lint says so", "[loader][lint][runtime-class]") {
  auto load = webhook::load_policy_text(policy_with("  runtimeClasses: [nvidia]", "      runtimeClasses: []"), "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  CHECK(load.policy->runtime_classes_for(&load.policy->pools()[0]) == std::vector<std::string>{"nvidia"});
  REQUIRE(load.issues.size() == 1);
  CHECK(load.issues[0].severity == policy::Issue::Severity::Warning);
  CHECK(load.issues[0].path == "spec.pools[0].runtimeClasses");
  CHECK(load.issues[0].message.find("inherits spec.runtimeClasses") != std::string::npos);
  // Without a global list an empty one means what it says: any runtime class. No warning.
  auto alone = webhook::load_policy_text(policy_with("", "      runtimeClasses: []"), "p.yaml");
  REQUIRE(alone.ok());
  CHECK(alone.issues.empty());
}

TEST_CASE("deviceTolerations load with the API's defaults", "[loader][device-tolerations]") {
  auto load = webhook::load_policy_text(policy_with(R"(  deviceTolerations:
    - {key: example.com/maintenance, operator: Exists}
    - {key: example.com/reserved, value: alpha, effect: NoSchedule}
    - {key: example.com/other, operator: "", value: "", effect: ""})"),
                                        "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  CHECK(load.issues.empty());
  const auto& list = load.policy->device_tolerations();
  REQUIRE(list.size() == 3);
  CHECK(list[0].op == "Exists");
  CHECK(list[1].op == "Equal");  // the default
  CHECK(list[1].effect == "NoSchedule");
  CHECK(list[2].op == "Equal");
  CHECK(webhook::load_policy_text(policy_with(""), "p.yaml").policy->device_tolerations().empty());  // default: none
}

TEST_CASE("deviceTolerations errors name the entry and field", "[loader][device-tolerations]") {
  struct Case {
    std::string entry, error;
  };
  const Case cases[] = {
      {"{key: k, operator: In}", "spec.deviceTolerations[0].operator: invalid value \"In\" (expected Exists | Equal)"},
      {"{key: k, operator: exists}", "spec.deviceTolerations[0].operator: invalid value \"exists\""},
      {"{key: k, operator: Exists, value: v}", "spec.deviceTolerations[0].value: must be empty with operator Exists"},
      {"{operator: Equal, value: v}", "spec.deviceTolerations[0]: an empty key needs operator Exists"},
      {"{value: v}", "spec.deviceTolerations[0]: an empty key needs operator Exists"},
      {"{key: k, effect: PreferNoSchedule}", "spec.deviceTolerations[0].effect: invalid value \"PreferNoSchedule\""},
      {"{key: k, effect: noschedule}", "spec.deviceTolerations[0].effect: invalid value \"noschedule\""},
      {"{key: \"bad key\", operator: Exists}", "spec.deviceTolerations[0].key: \"bad key\" is not a valid label key"},
      {"{key: k, value: \"not a value\"}", "spec.deviceTolerations[0].value: \"not a value\" is not a valid label value"},
      {"{key: k, tolerationSeconds: 5}", "spec.deviceTolerations[0].tolerationSeconds: unknown field \"tolerationSeconds\" "
                                         "(expected one of: key, operator, value, effect)"},
      {"{key: 7}", "spec.deviceTolerations[0].key: must be a string, got a number"},
      {"example.com/k", "spec.deviceTolerations[0]: must be a mapping, got a string"},
  };
  for (const auto& c : cases) {
    auto load = webhook::load_policy_text(policy_with("  deviceTolerations:\n    - " + c.entry), "p.yaml");
    INFO(c.entry << "\n" << load.report());
    CHECK_FALSE(load.ok());
    CHECK(reports(load, c.error));
  }
  auto not_list = webhook::load_policy_text(policy_with("  deviceTolerations: {key: k}"), "p.yaml");
  CHECK(reports(not_list, "spec.deviceTolerations: must be a list of tolerations, got a mapping"));
}

TEST_CASE("lint warns about an allowed device toleration without a key", "[lint][device-tolerations]") {
  auto load = webhook::load_policy_text(policy_with(R"(  deviceTolerations:
    - {key: example.com/maintenance, operator: Exists}
    - {operator: Exists, effect: NoSchedule})"),
                                        "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  REQUIRE(load.issues.size() == 1);
  CHECK(load.issues[0].path == "spec.deviceTolerations[1]");
  CHECK(load.issues[0].message.find("may tolerate every device taint with effect NoSchedule") != std::string::npos);
}

TEST_CASE("policy show prints the new fields back, and leaves them out when unset", "[loader][show]") {
  const std::string text = policy_with(R"(  runtimeClasses: [nvidia]
  deviceTolerations:
    - {key: example.com/maintenance, operator: Exists}
    - {key: example.com/reserved, value: alpha, effect: NoSchedule})",
                                       "      runtimeClasses: []");
  auto load = webhook::load_policy_text(text, "p.yaml");
  REQUIRE(load.ok());
  Json shown = policy::policy_config_to_json(load.policy->config());
  CHECK(shown["spec"]["runtimeClasses"] == Json::array({"nvidia"}));
  CHECK(shown["spec"]["pools"][0]["runtimeClasses"] == Json::array());
  CHECK_FALSE(shown["spec"]["pools"][1].contains("runtimeClasses"));
  CHECK(shown["spec"]["deviceTolerations"][1] ==
        Json::parse(R"({"key": "example.com/reserved", "operator": "Equal", "value": "alpha", "effect": "NoSchedule"})"));
  auto again = webhook::load_policy_text(shown.dump(), "shown.json");
  INFO(again.report());
  REQUIRE(again.ok());
  CHECK(again.policy->hash() == load.policy->hash());
  CHECK(again.policy->runtime_classes_for(&again.policy->pools()[0]) == std::vector<std::string>{"nvidia"});

  Json plain = policy::policy_config_to_json(webhook::load_policy_text(policy_with(""), "p.yaml").policy->config());
  CHECK_FALSE(plain["spec"].contains("runtimeClasses"));
  CHECK_FALSE(plain["spec"].contains("deviceTolerations"));
  CHECK_FALSE(plain["spec"]["pools"][0].contains("runtimeClasses"));
}
