// Policy loading: every error names the file, line, column and field path; all errors are
// reported; lint warnings for footguns.
#include <catch2/catch.hpp>

#include <string>

#include "policy/config/policy_loader.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

constexpr const char* kValid = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: test}
spec:
  pools:
    - name: a100-secure
      nodeSelector: {gpu.example.com/pool: a100-secure}
      trust: adversarial
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
  tenants:
    - name: alpha
      namespaces: [team-alpha]
      pools: [a100-secure]
      defaultPool: a100-secure
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

bool reports(const webhook::PolicyLoad& load, const std::string& needle) {
  return load.report().find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a valid policy compiles with defaults filled in", "[loader]") {
  auto load = webhook::load_policy_text(kValid, "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  CHECK(load.policy->name() == "test");
  CHECK(load.policy->action(policy::RuleId::GpuCap) == policy::Action::Deny);
  CHECK(load.policy->mutation_enabled(policy::MutationId::PoolSelector));
  CHECK(load.policy->tenant_for_namespace("team-alpha")->name == "alpha");
  CHECK(load.policy->tenant_for_namespace("team-beta") == nullptr);
  CHECK(load.policy->hash().size() == 16);
}

TEST_CASE("an unknown pool reference names file, line, column and path", "[loader]") {
  auto load = webhook::load_policy_text(replace(kValid, "pools: [a100-secure]", "pools: [a100-sec]"), "p.yaml");
  REQUIRE_FALSE(load.ok());
  INFO(load.report());
  CHECK(reports(load, "p.yaml:14:15: error: spec.tenants[0].pools[0]: unknown pool \"a100-sec\""));
}

TEST_CASE("all errors are reported, not just the first", "[loader]") {
  std::string text = replace(kValid, "trust: adversarial", "trust: hostile");
  text = replace(text, "defaultProfile: 1g.10gb", "defaultProfile: 3g.20gb");
  text = replace(text, "namespaces: [team-alpha]", "namespaces: [team-alpha]\n      colour: blue");
  auto load = webhook::load_policy_text(text, "p.yaml");
  REQUIRE_FALSE(load.ok());
  INFO(load.report());
  CHECK(reports(load, "spec.pools[0].trust: invalid value \"hostile\""));
  CHECK(reports(load, "spec.tenants[0].colour: unknown field \"colour\""));
  // The MIG profile is checked at compile time, which runs only when the document is well-formed.
  auto mig = webhook::load_policy_text(replace(kValid, "defaultProfile: 1g.10gb", "defaultProfile: 3g.20gb"), "p.yaml");
  CHECK(reports(mig, "p.yaml:10:"));
  CHECK(reports(mig, "spec.pools[0].mig.defaultProfile: invalid MIG profile \"3g.20gb\" for gpuModel \"A100-SXM4-80GB\""));
}

TEST_CASE("wrong types, duplicates and bad rule actions are errors", "[loader]") {
  CHECK(reports(webhook::load_policy_text(replace(kValid, "namespaces: [team-alpha]", "namespaces: team-alpha"), "p"),
                "spec.tenants[0].namespaces: must be a list of strings, got a string"));
  std::string dup = std::string(kValid) + "    - name: alpha\n      namespaces: [other]\n";
  CHECK(reports(webhook::load_policy_text(dup, "p"), "spec.tenants[1].name: duplicate tenant name \"alpha\""));
  std::string rules = replace(kValid, "spec:\n", "spec:\n  rules: {privileged: block, no-such-rule: deny}\n");
  auto load = webhook::load_policy_text(rules, "p");
  CHECK(reports(load, "spec.rules.privileged: invalid value \"block\" (expected deny | warn | audit | off)"));
  CHECK(reports(load, "spec.rules.no-such-rule: unknown rule"));
  CHECK(reports(webhook::load_policy_text(replace(kValid, "defaultPool: a100-secure", "defaultPool: nope"), "p"),
                "spec.tenants[0].defaultPool: unknown pool \"nope\""));
  CHECK(reports(webhook::load_policy_text(replace(kValid, "kind: GpuAdmissionPolicy", "kind: Policy"), "p"),
                "kind: unsupported kind \"Policy\""));
}

TEST_CASE("YAML syntax errors and unreadable files are unusable input", "[loader]") {
  auto bad = webhook::load_policy_text("spec: [unclosed\n", "bad.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.unusable);
  CHECK(reports(bad, "bad.yaml:"));
  CHECK(reports(bad, "invalid YAML"));
  auto missing = webhook::load_policy_file("/nonexistent/policy.yaml");
  CHECK(missing.unusable);
  CHECK(reports(missing, "/nonexistent/policy.yaml: error: cannot read: No such file or directory"));
  auto two = webhook::load_policy_text(std::string(kValid) + "---\n" + kValid, "two.yaml");
  CHECK(reports(two, "expected one YAML document, found 2"));
}

TEST_CASE("lint warns about controller exemptions and adversarial MPS pools", "[loader]") {
  std::string text = replace(kValid, "spec:\n", "spec:\n  exemptions: {usernames: [\"system:serviceaccount:kube-system:*\"]}\n");
  text = replace(text, "mig: {strategy: mixed, defaultProfile: 1g.10gb}", "sharing: mps");
  auto load = webhook::load_policy_text(text, "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());  // warnings never block
  CHECK(reports(load, "warning: spec.exemptions.usernames[0]: \"system:serviceaccount:kube-system:*\" matches the controller username"));
  CHECK(reports(load, "warning: spec.pools[0].sharing: pool \"a100-secure\" is adversarial but shares GPUs with MPS"));
}

TEST_CASE("the built-in default policy compiles without warnings", "[loader]") {
  auto load = webhook::load_policy_file("");
  INFO(load.report());
  REQUIRE(load.ok());
  CHECK(load.issues.empty());
  CHECK(load.policy->pools().size() >= 2);
}

TEST_CASE("gpuResources.fractional and the rule gpu-sharing load, and show as they were given", "[loader]") {
  const std::string text = replace(kValid, "spec:\n", R"(spec:
  gpuResources: {fractional: [nvidia.com/gpumem, nvidia.com/gpucores]}
  rules: {gpu-sharing: warn}
)");
  auto load = webhook::load_policy_text(text, "p.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  using Kind = policy::CompiledPolicy::GpuKind;
  CHECK(load.policy->classify_resource("nvidia.com/gpumem") == Kind::Fractional);
  CHECK(load.policy->classify_resource("nvidia.com/gpucores") == Kind::Fractional);
  CHECK(load.policy->classify_resource("nvidia.com/gpumem-percentage") == Kind::NotGpu);
  CHECK(load.policy->action(policy::RuleId::GpuSharing) == policy::Action::Warn);
  const Json shown = policy::policy_config_to_json(load.policy->config());
  CHECK(shown["spec"]["gpuResources"]["fractional"] == Json::array({"nvidia.com/gpumem", "nvidia.com/gpucores"}));
  CHECK(shown["spec"]["rules"]["gpu-sharing"] == "warn");
  // Left out: no fractional resources, gpu-sharing denies.
  auto plain = webhook::load_policy_text(kValid, "p.yaml");
  REQUIRE(plain.ok());
  CHECK_FALSE(policy::policy_config_to_json(plain.policy->config())["spec"]["gpuResources"].contains("fractional"));
  CHECK(plain.policy->action(policy::RuleId::GpuSharing) == policy::Action::Deny);
  // A name in full and fractional is a whole GPU; a fractional list of the wrong type is an error.
  auto both = webhook::load_policy_text(replace(kValid, "spec:\n", "spec:\n  gpuResources: {fractional: [nvidia.com/gpu]}\n"),
                                        "p.yaml");
  REQUIRE(both.ok());
  CHECK(both.policy->classify_resource("nvidia.com/gpu") == Kind::Full);
  auto bad = webhook::load_policy_text(replace(kValid, "spec:\n", "spec:\n  gpuResources: {fractional: nvidia.com/gpumem}\n"),
                                       "p.yaml");
  CHECK_FALSE(bad.ok());
  CHECK(reports(bad, "spec.gpuResources.fractional"));
}
