// End-to-end tests of `policy export --format vap`: the objects it writes (a policy and a binding
// per rule and action, named for the rule, with the action's validationActions), what it lists as
// not expressed (in the YAML's comment and on stderr, the same lines), the YAML reading back as
// the JSON output, and its exit codes. What the CEL decides is tested by a real CEL engine
// (test/vap, CTest vap:backstop).
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "webhook/cli/cli_test_support.h"
#include "webhook/io/yaml_json.h"
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempDir;
using gpu_admission::Json;

const std::string kSource = test_paths::source_dir();
const std::string kFixturePolicy = kSource + "/test/fixtures/policy.yaml";

Json items_of(const CliRun& r) {
  INFO(describe(r));
  REQUIRE(r.code == 0);
  Json list = Json::parse(r.out);
  REQUIRE(list["kind"] == "List");
  return list["items"];
}

// The "  - ..." lines of stderr, and the "#   - ..." lines of the YAML's comment.
std::vector<std::string> listed(const std::string& text, const std::string& marker) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(marker, 0) == 0) out.push_back(line.substr(marker.size()));
  return out;
}

const Json* find_object(const Json& items, const std::string& kind, const std::string& name) {
  for (const auto& o : items)
    if (o["kind"] == kind && o["metadata"]["name"] == name) return &o;
  return nullptr;
}

std::set<std::string> policy_names(const Json& items) {
  std::set<std::string> out;
  for (const auto& o : items)
    if (o["kind"] == "ValidatingAdmissionPolicy") out.insert(o["metadata"]["name"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("policy export --format vap: a policy and a binding per exported rule", "[cli][export]") {
  for (const std::string& policy : {std::string(), kFixturePolicy}) {
    INFO("policy " << (policy.empty() ? "built-in" : policy));
    std::vector<std::string> args = {"policy", "export", "--format", "vap", "--output", "json"};
    if (!policy.empty()) args.insert(args.end(), {"--policy", policy});
    const Json items = items_of(run_cli(args));
    CHECK(policy_names(items) == std::set<std::string>{"gpu-admission-privileged", "gpu-admission-host-namespaces",
                                                       "gpu-admission-gpu-device-access", "gpu-admission-gpu-cap",
                                                       "gpu-admission-gpu-tolerations", "gpu-admission-tenant-pool",
                                                       "gpu-admission-tenant-label"});
    for (const auto& name : policy_names(items)) {
      INFO(name);
      const Json* p = find_object(items, "ValidatingAdmissionPolicy", name);
      const Json* b = find_object(items, "ValidatingAdmissionPolicyBinding", name);
      REQUIRE(p);
      REQUIRE(b);
      CHECK((*p)["apiVersion"] == "admissionregistration.k8s.io/v1");
      CHECK("gpu-admission-" + (*p)["metadata"]["annotations"]["gpu-admission.io/rule"].get<std::string>() == name);
      CHECK((*p)["metadata"]["annotations"]["gpu-admission.io/action"] == "deny");
      CHECK((*p)["spec"]["failurePolicy"] == "Fail");
      CHECK((*b)["spec"]["policyName"] == name);
      CHECK((*b)["spec"]["validationActions"] == Json::array({"Deny"}));
      CHECK(!(*p)["spec"]["validations"].empty());
      // Exempt namespaces stay out, by name in the selector and (globs too) in a matchCondition.
      CHECK((*p)["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"][0] == "kube-system");
      CHECK((*p)["spec"]["matchConditions"][0]["name"] == "not-an-exempt-namespace");
    }
    // Pods on CREATE, and kubectl debug's ephemeral containers on UPDATE.
    const Json* privileged = find_object(items, "ValidatingAdmissionPolicy", "gpu-admission-privileged");
    REQUIRE(privileged);
    const std::string rules = (*privileged)["spec"]["matchConstraints"]["resourceRules"].dump();
    CHECK(rules.find("\"pods/ephemeralcontainers\"") != std::string::npos);
    CHECK(rules.find("\"deployments\"") != std::string::npos);
    CHECK(rules.find("\"kubeflow.org\"") != std::string::npos);
  }
}

TEST_CASE("policy export: the YAML lists what is not expressed, as stderr does, and reads back as the JSON",
          "[cli][export]") {
  const CliRun yaml = run_cli({"policy", "export", "--format", "vap", "--policy", kFixturePolicy});
  INFO(describe(yaml));
  REQUIRE(yaml.code == 0);
  const std::vector<std::string> in_comment = listed(yaml.out, "#   - ");
  const std::vector<std::string> on_stderr = listed(yaml.err, "  - ");
  CHECK(in_comment == on_stderr);
  std::string all;
  for (const auto& n : on_stderr) all += n + "\n";
  for (const char* part : {"mps-adversarial: not exported", "mig-profile: not exported", "gpu-sharing: not exported",
                           "tenant-pool: a GPU pod not pinned to a pool", "tenant-label: a pod that lacks its tenant's labels",
                           "gpu-device-access: a pod's DRA claims"})
    CHECK(all.find(part) != std::string::npos);
  CHECK(yaml.err.find("7 ValidatingAdmissionPolicies") != std::string::npos);

  const Json items = items_of(run_cli({"policy", "export", "--format", "vap", "-o", "json", "--policy", kFixturePolicy}));
  const auto parsed = gpu_admission::webhook::parse_yaml_or_json(yaml.out);
  REQUIRE_FALSE(parsed.error);
  REQUIRE(parsed.documents.size() == items.size());
  for (size_t i = 0; i < items.size(); ++i) CHECK(parsed.documents[i].value == items[i]);
  // Expressions of several lines are literal blocks, readable as CEL.
  CHECK(yaml.out.find("expression: |-\n") != std::string::npos);
}

TEST_CASE("policy export: actions follow each tenant's mode and rules; off exports nothing", "[cli][export]") {
  TempDir dir;
  const std::string policy = dir.file("policy.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: modes}
spec:
  rules: {gpu-cap: "off", tenant-label: warn}
  tenants:
    - {name: prod, namespaces: [prod]}
    - {name: trial, namespaces: [trial], enforcement: warn}
    - {name: shadow, namespaces: ["shadow-*"], enforcement: audit}
    - {name: lab, namespaces: [lab], rules: {privileged: "off"}}
)");
  const CliRun r = run_cli({"policy", "export", "--format", "vap", "-o", "json", "--policy", policy});
  const Json items = items_of(r);
  const std::set<std::string> names = policy_names(items);
  // privileged: deny (prod, no tenant), warn (trial), audit (shadow); off for lab.
  for (const auto& [name, action] : std::vector<std::pair<std::string, std::string>>{
           {"gpu-admission-privileged-deny", "Deny"}, {"gpu-admission-privileged-warn", "Warn"},
           {"gpu-admission-privileged-audit", "Audit"}, {"gpu-admission-tenant-label-warn", "Warn"},
           {"gpu-admission-tenant-label-audit", "Audit"}}) {
    INFO(name);
    const Json* b = find_object(items, "ValidatingAdmissionPolicyBinding", name);
    REQUIRE(b);
    CHECK((*b)["spec"]["validationActions"] == Json::array({action}));
  }
  CHECK(names.count("gpu-admission-gpu-cap") == 0);
  CHECK(names.count("gpu-admission-gpu-cap-deny") == 0);
  CHECK(r.err.find("gpu-cap: off for every tenant (no policy)") != std::string::npos);
  CHECK(r.err.find("privileged: off for some tenants") != std::string::npos);
  // Which tenants a policy acts for is in its `applies` variable.
  const Json* warn = find_object(items, "ValidatingAdmissionPolicy", "gpu-admission-privileged-warn");
  REQUIRE(warn);
  const std::string vars = (*warn)["spec"]["variables"].dump();
  CHECK(vars.find("variables.tenant in ['trial']") != std::string::npos);
}

TEST_CASE("policy export reads a ConfigMap that carries the policy", "[cli][export][configmap]") {
  const CliRun r = run_cli({"policy", "export", "--format", "vap", "--policy", kSource + "/deploy/policy-configmap.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("policy \"default\"") != std::string::npos);
}

TEST_CASE("policy export: bad flags and bad policies are exit 2", "[cli][export]") {
  TempDir dir;
  const std::string broken = dir.file("broken.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\n"
                                                     "metadata: {name: x}\nspec: {tenants: [{name: a, pools: [nope]}]}\n");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"policy", "export"}, "--format is required"},
           {{"policy", "export", "--format", "kyverno"}, "\"kyverno\" is not a format"},
           {{"policy", "export", "--format", "vap", "--output", "xml"}, "--output must be yaml or json"},
           {{"policy", "export", "--format", "vap", "extra.yaml"}, "unexpected argument"},
           {{"policy", "export", "--format", "vap", "--strict"}, "takes --format vap, --policy FILE and --output"},
           {{"policy", "export", "--format", "vap", "--policy", dir.path.string() + "/missing.yaml"}, "missing.yaml"},
           {{"policy", "export", "--format", "vap", "--policy", broken}, "not a valid policy"},
           {{"policy", "lint", "--format", "vap", broken}, "flags of policy export"},
       }) {
    const CliRun r = run_cli(c.args);
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

TEST_CASE("policy export: a rule with nothing to refuse exports no policy, and says so", "[cli][export]") {
  TempDir dir;
  const std::string policy =
      dir.file("bare.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nmetadata: {name: bare}\nspec: {}\n");
  const CliRun r = run_cli({"policy", "export", "--format", "vap", "-o", "json", "--policy", policy});
  const std::set<std::string> names = policy_names(items_of(r));
  CHECK(names.count("gpu-admission-gpu-cap") == 0);
  CHECK(names.count("gpu-admission-gpu-tolerations") == 0);
  CHECK(names.count("gpu-admission-privileged") == 1);
  CHECK(r.err.find("gpu-cap: the policy sets no maxGpusPerPod (no policy)") != std::string::npos);
  CHECK(r.err.find("gpu-tolerations: the policy lists no taint (no policy)") != std::string::npos);
}
