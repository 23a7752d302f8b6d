// Policy lint about exceptions and username exemptions (policy/config/lint.cpp): an exception any
// tenant can satisfy (pod labels, service-account globs across namespaces, no namespace or tenant
// scope) and usernames that do not apply when the scheduler allocates a claim. Each warning names
// the field's path and line and says what to do instead.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "test/policy/config/lint_test_support.h"

using namespace gpu_admission;
using namespace lint_test;

namespace {

// Line 1 is apiVersion; the first exception (`spec.exceptions[0]`) is on line 14.
const std::string kHead = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: lint-exceptions}
spec:
  pools:
    - name: a100
      nodeSelector: {gpu.example.com/pool: a100}
  tenants:
    - name: alpha
      namespaces: ["alpha-*"]
      pools: [a100]
      defaultPool: a100
  exceptions:
)";

// The policy with `exceptions` (list items, indented 4) appended.
Linted lint(const std::string& exceptions, const std::string& head = kHead) {
  return lint_text(head + exceptions);
}

std::string exception(const std::string& rules, const std::string& selectors, const std::string& name = "ex") {
  return "    - {name: " + name + ", reason: r, rules: [" + rules + "], " + selectors + "}\n";
}

const std::vector<std::string> kLabelSensitive = {"privileged",  "host-namespaces", "gpu-device-access",
                                                  "mps-adversarial", "gpu-sharing",  "gpu-cap",
                                                  "tenant-pool", "mig-profile",     "gpu-tolerations"};

}  // namespace

TEST_CASE("lint: a scoped exception gets no warnings", "[lint][exceptions]") {
  Linted l = lint(exception("privileged, gpu-cap", R"(namespaces: [alpha-debug], tenants: [alpha])") +
                  exception("gpu-cap", "tenants: [alpha]", "ex2") +
                  exception("privileged", R"(namespaces: ["alpha-*"])", "ex3"));
  INFO(l.load.report());
  CHECK(l.warnings.empty());
}

TEST_CASE("lint: an exception that selects by podLabels for a security or GPU rule", "[lint][exceptions]") {
  // Every security and GPU rule, whatever else the exception selects by: the tenant writes the labels.
  const std::vector<std::string> scopes = {"", R"(namespaces: ["*"], )", "namespaces: [alpha-debug], ",
                                           "tenants: [alpha], ", R"(usernames: ["system:serviceaccount:ci:x"], )"};
  for (const auto& rule : kLabelSensitive) {
    for (const auto& scope : scopes) {
      INFO(rule << " with " << scope);
      Linted l = lint(exception(rule, scope + "podLabels: {debug: \"true\"}"));
      INFO(l.load.report());
      CHECK(has(l, "spec.exceptions[0].podLabels", "exception \"ex\" selects by podLabels for " + rule));
      CHECK(has(l, "spec.exceptions[0].podLabels", "a pod's labels are the tenant's to write"));
      CHECK(has(l, "spec.exceptions[0].podLabels", "select by namespaces or tenants instead"));
      CHECK(at(l, "spec.exceptions[0].podLabels").size() == 1);
    }
  }
  // The rules are named in the exception's order; the one that is neither (tenant-label) is not.
  Linted mixed = lint(exception("tenant-label, gpu-cap, privileged", "tenants: [alpha], podLabels: {a: b}"));
  INFO(mixed.load.report());
  CHECK(has(mixed, "spec.exceptions[0].podLabels", "for gpu-cap, privileged: "));
  CHECK(has(mixed, "spec.exceptions[0].podLabels", "any pod its other selectors match can claim it"));
  Linted unscoped = lint(exception("privileged", "podLabels: {a: b}"));
  CHECK(has(unscoped, "spec.exceptions[0].podLabels", "any pod of any tenant can claim it"));
  CHECK(unscoped.load.report().find("lint.yaml:14:") != std::string::npos);  // the podLabels' line
  Linted label_rule = lint(exception("tenant-label", "tenants: [alpha], podLabels: {a: b}"));
  INFO(label_rule.load.report());
  CHECK(label_rule.warnings.empty());
}

TEST_CASE("lint: an exception's username glob whose * spans a service-account namespace", "[lint][exceptions]") {
  // Besides the glob's warning, only the one every usernames exception gets (not at allocation).
  for (const std::string pattern : {"system:serviceaccount:*:argo", "system:serviceaccount:team-*:x", "system:*", "*"}) {
    INFO("pattern " << pattern);
    Linted l = lint(exception("privileged", R"(tenants: [alpha], usernames: ["system:serviceaccount:ci:x", ")" +
                                                pattern + "\"]"));
    INFO(l.load.report());
    CHECK(has(l, "spec.exceptions[0].usernames[1]", "has a * in the service-account namespace"));
    CHECK(has(l, "spec.exceptions[0].usernames[1]", "any tenant can claim exception \"ex\"; name the namespace"));
    CHECK(at(l, "spec.exceptions[0].usernames[0]").empty());
    CHECK(has(l, "spec.exceptions[0].usernames", "at allocation the scheduler"));
    CHECK(l.warnings.size() == 2);
  }
  for (const std::string pattern : {"system:serviceaccount:ci:*", "*@example.com", "alice"}) {
    INFO("pattern " << pattern);
    Linted l = lint(exception("privileged", "tenants: [alpha], usernames: [\"" + pattern + "\"]"));
    INFO(l.load.report());
    CHECK(at(l, "spec.exceptions[0].usernames[0]").empty());
    CHECK(l.warnings.size() == 1);  // at allocation only
  }
}

TEST_CASE("lint: an exception that covers every namespace", "[lint][exceptions]") {
  SECTION("neither namespaces nor tenants") {
    for (const std::string selectors : {"", R"(usernames: ["system:serviceaccount:ci:x"])"}) {
      INFO("selectors " << selectors);
      Linted l = lint(exception("privileged", selectors));
      INFO(l.load.report());
      CHECK(has(l, "spec.exceptions[0]", "exception \"ex\" has neither namespaces nor tenants"));
      CHECK(has(l, "spec.exceptions[0]", "select by namespaces or tenants"));
      CHECK(at(l, "spec.exceptions[0]").size() == 1);
      CHECK(l.warnings.size() == (selectors.empty() ? 1 : 2));  // usernames: also not at allocation
      CHECK(l.load.report().find("lint.yaml:14:") != std::string::npos);
    }
  }
  SECTION("a namespace glob of * alone, and no tenants") {
    for (const std::string glob : {"*", "**"}) {
      INFO("glob " << glob);
      Linted l = lint(exception("privileged", "namespaces: [alpha-debug, \"" + glob + "\"]"));
      INFO(l.load.report());
      CHECK(has(l, "spec.exceptions[0].namespaces[1]", "\"" + glob + "\" matches every namespace"));
      CHECK(has(l, "spec.exceptions[0].namespaces[1]", "name the namespaces, or select by tenants"));
      CHECK(l.warnings.size() == 1);
    }
  }
  SECTION("tenants bound it, and a glob with a literal part does not match everything") {
    CHECK(lint(exception("privileged", R"(namespaces: ["*"], tenants: [alpha])")).warnings.empty());
    CHECK(lint(exception("privileged", R"(namespaces: ["*-debug"])")).warnings.empty());
    CHECK(lint(exception("privileged", "tenants: [alpha]")).warnings.empty());
  }
}

TEST_CASE("lint: username exceptions and exemptions do not apply at allocation", "[lint][exceptions]") {
  SECTION("an exception names its rules") {
    Linted l = lint(exception("privileged, gpu-cap, tenant-label, tenant-pool",
                              R"(tenants: [alpha], usernames: ["system:serviceaccount:ci:x"])"));
    INFO(l.load.report());
    CHECK(has(l, "spec.exceptions[0].usernames",
              "exception \"ex\" turns off privileged, gpu-cap, tenant-label, tenant-pool by username"));
    CHECK(has(l, "spec.exceptions[0].usernames", "at allocation the scheduler, not the user, writes the claim status"));
    CHECK(has(l, "spec.exceptions[0].usernames", "never gets its devices; select by namespaces or tenants instead"));
    CHECK(l.warnings.size() == 1);
    CHECK(l.load.report().find("lint.yaml:14:") != std::string::npos);
  }
  SECTION("every rule: an allocation judges the pod in full") {
    for (const std::string rule : {"privileged", "host-namespaces", "gpu-device-access", "gpu-cap", "mps-adversarial",
                                   "gpu-tolerations", "tenant-pool", "tenant-label", "mig-profile", "gpu-sharing"}) {
      INFO(rule);
      Linted l = lint(exception(rule, "tenants: [alpha], usernames: [alice]"));
      CHECK(has(l, "spec.exceptions[0].usernames", "turns off " + rule + " by username"));
    }
  }
  SECTION("no usernames: nothing to say") {
    CHECK(lint(exception("privileged, host-namespaces, tenant-label", "tenants: [alpha]")).warnings.empty());
  }
  SECTION("any username exemption") {
    std::string head = kHead;
    head.replace(head.find("spec:\n"), 6, "spec:\n  exemptions:\n    usernames: [alice@example.com]\n");
    Linted l = lint(exception("gpu-cap", "tenants: [alpha]"), head);
    INFO(l.load.report());
    CHECK(has(l, "spec.exemptions.usernames", "a username exemption does not apply there"));
    CHECK(has(l, "spec.exemptions.usernames", "a pod with DRA claims it admitted never gets its devices"));
    CHECK(has(l, "spec.exemptions.usernames", "exempt namespaces instead"));
    CHECK(l.warnings.size() == 1);
    CHECK(l.load.report().find("lint.yaml:6:") != std::string::npos);
    head.replace(head.find("[alice@example.com]"), 19, "[]");
    CHECK(lint(exception("gpu-cap", "tenants: [alpha]"), head).warnings.empty());
  }
}
