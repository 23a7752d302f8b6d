// Policy lint (policy/config/lint.cpp): one case per warning, each naming its field path and
// saying the risk in one line; warnings never block loading; a clean policy gets none.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "test/policy/config/lint_test_support.h"

using namespace gpu_admission;
using namespace lint_test;

namespace {

// Clean: no username exemptions (they never apply at allocation), an adversarial MIG pool without
// sharing, a tenant with a default pool, every rule on deny (the default) and every mutation on.
constexpr const char* kClean = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: lint}
spec:
  exemptions:
    namespaces: [kube-system, "infra-*"]
    usernames: []
  rules:
    gpu-cap: deny
  mutations:
    pool-selector: true
    mig-resources: true
  pools:
    - name: a100-secure
      nodeSelector: {gpu.example.com/pool: a100-secure}
      trust: adversarial
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
    - name: h100-coop
      nodeSelector: {gpu.example.com/pool: h100-coop}
      trust: cooperative
      gpuModel: H100-SXM5-80GB
      sharing: mps
  tenants:
    - name: alpha
      namespaces: [team-alpha]
      pools: [a100-secure, h100-coop]
      defaultPool: a100-secure
    - name: cpu-only
      namespaces: [batch]
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

Linted lint(const std::string& text) { return lint_text(text); }

std::string with_usernames(const std::string& list) {
  return replace(kClean, "usernames: []", "usernames: " + list);
}

}  // namespace

TEST_CASE("lint: a clean policy gets no warnings", "[lint]") {
  Linted l = lint(kClean);
  INFO(l.load.report());
  CHECK(l.warnings.empty());
}

TEST_CASE("lint: the namespace exemption * exempts everything", "[lint]") {
  Linted l = lint(replace(kClean, R"(namespaces: [kube-system, "infra-*"])", R"(namespaces: [kube-system, "*"])"));
  INFO(l.load.report());
  CHECK(has(l, "spec.exemptions.namespaces[1]", "exempts every namespace"));
  CHECK(l.warnings.size() == 1);
  CHECK(l.load.report().find("lint.yaml:6:") != std::string::npos);  // the source line of the field
}

TEST_CASE("lint: a username exemption that matches a controller", "[lint]") {
  Linted l = lint(with_usernames(R"(["system:serviceaccount:kube-system:*"])"));
  INFO(l.load.report());
  CHECK(has(l, "spec.exemptions.usernames[0]",
            "matches the controller username \"system:serviceaccount:kube-system:replicaset-controller\""));
  CHECK(at(l, "spec.exemptions.usernames[0]").size() == 1);  // kube-system is named: no namespace glob
}

TEST_CASE("lint: a username glob whose * spans a service-account namespace", "[lint]") {
  const std::vector<std::string> spanning = {
      "system:serviceaccount:*:argo", "system:serviceaccount:*", "system:serviceaccount:team-*:x",
      "system:serviceaccount:*-ci:deployer", "system:serviceaccount*", "system:*", "*", "*:argo", "*-bot", "s*:x"};
  for (const auto& pattern : spanning) {
    INFO("pattern " << pattern);
    Linted l = lint(with_usernames("[\"" + pattern + "\"]"));
    INFO(l.load.report());
    CHECK(has(l, "spec.exemptions.usernames[0]", "service-account namespace"));
    CHECK(has(l, "spec.exemptions.usernames[0]", "a namespace a tenant can create"));
  }
  const std::vector<std::string> fixed = {"system:serviceaccount:ci:*",  "system:serviceaccount:ci:deploy-*",
                                          "system:serviceaccount:kube-system:*", "*@example.com", "oidc:*",
                                          "system:node:*", "alice", "admin-*"};
  for (const auto& pattern : fixed) {
    INFO("pattern " << pattern);
    Linted l = lint(with_usernames("[\"" + pattern + "\"]"));
    INFO(l.load.report());
    CHECK_FALSE(has(l, "spec.exemptions.usernames[0]", "service-account namespace"));
  }
}

TEST_CASE("lint: an adversarial pool shared with MPS", "[lint]") {
  Linted l = lint(replace(kClean, "mig: {strategy: mixed, defaultProfile: 1g.10gb}", "sharing: mps"));
  INFO(l.load.report());
  CHECK(has(l, "spec.pools[0].sharing", "pool \"a100-secure\" is adversarial but shares GPUs with MPS"));
  CHECK(l.warnings.size() == 1);
}

TEST_CASE("lint: an adversarial pool shared by time-slicing", "[lint]") {
  Linted l = lint(replace(kClean, "mig: {strategy: mixed, defaultProfile: 1g.10gb}", "sharing: time-slicing"));
  INFO(l.load.report());
  CHECK(has(l, "spec.pools[0].sharing",
            "pool \"a100-secure\" is adversarial but shares GPUs by time-slicing: time-slicing gives no memory or "
            "fault isolation between tenants, and gpu-sharing will deny every GPU pod here"));
  CHECK(l.warnings.size() == 1);
  // A cooperative pool may time-slice.
  Linted coop = lint(replace(kClean, "sharing: mps", "sharing: time-slicing"));
  INFO(coop.load.report());
  CHECK(coop.warnings.empty());
}

TEST_CASE("lint: MIG together with sharing", "[lint]") {
  Linted l = lint(replace(kClean, "mig: {strategy: mixed, defaultProfile: 1g.10gb}",
                          "mig: {strategy: mixed, defaultProfile: 1g.10gb}\n      sharing: time-slicing"));
  INFO(l.load.report());
  CHECK(has(l, "spec.pools[0].sharing", "MIG and time-slicing sharing together"));
  // The pool is adversarial too: time-slicing there is gpu-sharing's warning as well.
  CHECK(has(l, "spec.pools[0].sharing", "is adversarial but shares GPUs by time-slicing"));
  CHECK(l.warnings.size() == 2);
}

TEST_CASE("lint: a tenant with pools and no defaultPool", "[lint]") {
  Linted l = lint(replace(kClean, "      defaultPool: a100-secure\n", ""));
  INFO(l.load.report());
  CHECK(has(l, "spec.tenants[0].defaultPool", "tenant \"alpha\" has pools but no defaultPool"));
  CHECK(has(l, "spec.tenants[0].defaultPool", "not pinned"));
  CHECK(l.warnings.size() == 1);  // cpu-only has no pools: nothing to pin
}

TEST_CASE("lint: pool-selector off while a tenant has a defaultPool", "[lint]") {
  Linted l = lint(replace(kClean, "pool-selector: true", "pool-selector: false"));
  INFO(l.load.report());
  CHECK(has(l, "spec.mutations.pool-selector", "off while tenant \"alpha\" has a defaultPool"));
  CHECK(l.warnings.size() == 1);

  // Without default pools there is nothing for pool-selector to do (the tenant warning remains).
  Linted none = lint(replace(replace(kClean, "pool-selector: true", "pool-selector: false"),
                             "      defaultPool: a100-secure\n", ""));
  INFO(none.load.report());
  CHECK(at(none, "spec.mutations.pool-selector").empty());
}

TEST_CASE("lint: mig-resources off while a pool uses MIG", "[lint]") {
  Linted mixed = lint(replace(kClean, "mig-resources: true", "mig-resources: false"));
  INFO(mixed.load.report());
  CHECK(has(mixed, "spec.mutations.mig-resources", "off while pool \"a100-secure\" uses MIG"));
  CHECK(mixed.warnings.size() == 1);

  Linted single = lint(replace(replace(kClean, "mig-resources: true", "mig-resources: false"),
                               "mig: {strategy: mixed, defaultProfile: 1g.10gb}",
                               "mig: {strategy: single, defaultProfile: 1g.10gb}"));
  INFO(single.load.report());
  CHECK(has(single, "spec.mutations.mig-resources", "uses MIG"));

  Linted no_mig = lint(replace(replace(kClean, "mig-resources: true", "mig-resources: false"),
                               "mig: {strategy: mixed, defaultProfile: 1g.10gb}", "mig: {strategy: none}"));
  INFO(no_mig.load.report());
  CHECK(at(no_mig, "spec.mutations.mig-resources").empty());
}

TEST_CASE("lint: gpu-cap not on deny", "[lint]") {
  for (const char* action : {"warn", "audit", "off"}) {
    INFO("gpu-cap: " << action);
    Linted l = lint(replace(kClean, "gpu-cap: deny", std::string("gpu-cap: ") + action));
    INFO(l.load.report());
    CHECK(has(l, "spec.rules.gpu-cap", std::string("is ") + action + ", not deny"));
    CHECK(l.warnings.size() == 1);
  }
}

TEST_CASE("lint: warnings are listed with errors and never block", "[lint]") {
  // An unknown pool is an error; the lint warnings about the same policy are still reported.
  auto load = webhook::load_policy_text(
      replace(replace(kClean, "gpu-cap: deny", "gpu-cap: audit"), "pools: [a100-secure, h100-coop]",
              "pools: [a100-secure, h100-cop]"),
      "lint.yaml");
  INFO(load.report());
  CHECK_FALSE(load.ok());
  CHECK(load.report().find("warning: spec.rules.gpu-cap: is audit") != std::string::npos);
  CHECK(load.report().find("error: spec.tenants[0].pools[1]: unknown pool \"h100-cop\"") != std::string::npos);
}

TEST_CASE("lint: unmappedGpuPods allow next to namespaceSelector tenants", "[lint]") {
  const std::string selector_tenant = replace(kClean, "    - name: cpu-only\n      namespaces: [batch]\n",
                                              "    - name: cpu-only\n      namespaceSelector: {matchLabels: {team: batch}}\n");
  const std::string allow = "spec:\n  defaults: {unmappedGpuPods: allow}\n";
  Linted l = lint(replace(selector_tenant, "spec:\n", allow));
  INFO(l.load.report());
  CHECK(has(l, "spec.defaults.unmappedGpuPods", "tenant \"cpu-only\" is chosen by namespaceSelector"));
  CHECK(l.warnings.size() == 1);
  // deny, or allow without selector tenants: nothing to say.
  CHECK(lint(selector_tenant).warnings.empty());
  CHECK(lint(replace(kClean, "spec:\n", allow)).warnings.empty());
}
