// Tenants chosen by their namespaces' labels: label selector semantics, the order in
// which tenants are tried (globs and selectors together, in policy order), unknown labels, and
// the loader's errors for malformed selectors.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "policy/config/label_selector.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: selectors}
spec:
  tenants:
    - name: by-label
      namespaceSelector:
        matchLabels: {tenant.example.com/name: alpha}
        matchExpressions:
          - {key: env, operator: NotIn, values: [sandbox]}
          - {key: frozen, operator: DoesNotExist}
    - name: by-glob
      namespaces: ["team-*"]
    - name: late-label
      namespaceSelector:
        matchExpressions:
          - {key: tier, operator: In, values: [gold, silver]}
          - {key: owner, operator: Exists}
)";

struct Labels : policy::NamespaceLabels {
  std::map<std::string, policy::LabelPairs, std::less<>> by_namespace;
  const policy::LabelPairs* labels_of(std::string_view ns) const override {
    auto it = by_namespace.find(ns);
    return it == by_namespace.end() ? nullptr : &it->second;
  }
};

std::string tenant_of(const policy::CompiledPolicy& p, const std::string& ns, const Labels* labels) {
  const policy::Tenant* t = p.tenant_for_namespace(ns, labels);
  return t ? t->name : "(none)";
}

}  // namespace

TEST_CASE("label selectors follow Kubernetes semantics", "[tenancy][selector]") {
  policy::LabelSelector s;
  CHECK(s.matches({}));  // an empty selector matches every namespace
  s.match_labels = {{"a", "1"}};
  CHECK(s.matches({{"a", "1"}, {"b", "2"}}));
  CHECK_FALSE(s.matches({{"a", "2"}}));
  CHECK_FALSE(s.matches({}));
  using Op = policy::LabelRequirement::Op;
  s.match_expressions = {{"b", Op::In, {"2", "3"}}};
  CHECK(s.matches({{"a", "1"}, {"b", "3"}}));
  CHECK_FALSE(s.matches({{"a", "1"}}));  // In needs the key
  s.match_expressions = {{"b", Op::NotIn, {"2"}}};
  CHECK(s.matches({{"a", "1"}}));  // NotIn holds when the key is absent
  CHECK_FALSE(s.matches({{"a", "1"}, {"b", "2"}}));
  s.match_expressions = {{"b", Op::Exists, {}}};
  CHECK(s.matches({{"a", "1"}, {"b", ""}}));
  CHECK_FALSE(s.matches({{"a", "1"}}));
  s.match_expressions = {{"b", Op::DoesNotExist, {}}};
  CHECK(s.matches({{"a", "1"}}));
  CHECK_FALSE(s.matches({{"a", "1"}, {"b", "x"}}));
}

TEST_CASE("the first tenant in policy order whose globs or selector match owns the namespace", "[tenancy][selector]") {
  auto load = webhook::load_policy_text(kPolicy, "selectors.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  const auto& p = *load.policy;
  Labels labels;
  labels.by_namespace["ml-a"] = {{"tenant.example.com/name", "alpha"}};
  labels.by_namespace["ml-sandbox"] = {{"tenant.example.com/name", "alpha"}, {"env", "sandbox"}};
  labels.by_namespace["ml-frozen"] = {{"tenant.example.com/name", "alpha"}, {"frozen", "yes"}};
  labels.by_namespace["team-a"] = {{"tenant.example.com/name", "alpha"}};  // selector of an earlier tenant wins
  labels.by_namespace["team-b"] = {{"tier", "gold"}, {"owner", "x"}};     // glob of an earlier tenant wins
  labels.by_namespace["gold"] = {{"tier", "gold"}, {"owner", "x"}};
  labels.by_namespace["gold-no-owner"] = {{"tier", "gold"}};
  CHECK(tenant_of(p, "ml-a", &labels) == "by-label");
  CHECK(tenant_of(p, "ml-sandbox", &labels) == "(none)");
  CHECK(tenant_of(p, "ml-frozen", &labels) == "(none)");
  CHECK(tenant_of(p, "team-a", &labels) == "by-label");
  CHECK(tenant_of(p, "team-b", &labels) == "by-glob");
  CHECK(tenant_of(p, "gold", &labels) == "late-label");
  CHECK(tenant_of(p, "gold-no-owner", &labels) == "(none)");
  // Labels unknown (no cluster state, no Namespace object): no selector matches, globs still do.
  CHECK(tenant_of(p, "ml-a", nullptr) == "(none)");
  CHECK(tenant_of(p, "ml-unknown", &labels) == "(none)");
  CHECK(tenant_of(p, "team-z", nullptr) == "by-glob");
}

namespace {

// Labels that could not be read (the API server failed or was too slow) for every namespace.
struct Unreadable : policy::NamespaceLabels {
  const policy::LabelPairs* labels_of(std::string_view) const override { return nullptr; }
  policy::NamespaceLookup lookup(std::string_view) const override { return {nullptr, true}; }
};

std::string tenant_or_unknown(const policy::CompiledPolicy& p, const std::string& ns,
                              const policy::NamespaceLabels* labels) {
  bool unknown = false;
  const policy::Tenant* t = p.tenant_for_namespace(ns, labels, &unknown);
  if (unknown) return t ? "(unknown, yet " + t->name + ")" : "(unknown)";
  return t ? t->name : "(none)";
}

}  // namespace

TEST_CASE("labels that cannot be read make the tenant unknown where a selector tenant could own the namespace",
          "[tenancy][selector]") {
  auto load = webhook::load_policy_text(kPolicy, "selectors.yaml");
  REQUIRE(load.ok());
  const auto& p = *load.policy;
  Unreadable unreadable;
  // A selector tenant comes first, so nobody can tell whether it owns these namespaces: not "none",
  // and not the glob tenant listed after it either.
  CHECK(tenant_or_unknown(p, "ml-a", &unreadable) == "(unknown)");
  CHECK(tenant_or_unknown(p, "team-a", &unreadable) == "(unknown)");
  // Labels known, or not needed: as before.
  Labels labels;
  labels.by_namespace["ml-a"] = {{"tenant.example.com/name", "alpha"}};
  CHECK(tenant_or_unknown(p, "ml-a", &labels) == "by-label");
  CHECK(tenant_or_unknown(p, "ml-x", &labels) == "(none)");  // not found is none, not unknown
  CHECK(tenant_or_unknown(p, "ml-a", nullptr) == "(none)");
  // A glob tenant before every selector tenant decides without the labels.
  auto globs_first = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: globs-first}
spec:
  tenants:
    - {name: by-glob, namespaces: ["team-*"]}
    - {name: by-label, namespaceSelector: {matchLabels: {tenant: x}}}
)", "globs-first.yaml");
  REQUIRE(globs_first.ok());
  CHECK(tenant_or_unknown(*globs_first.policy, "team-a", &unreadable) == "by-glob");
  CHECK(tenant_or_unknown(*globs_first.policy, "other", &unreadable) == "(unknown)");
  // No selector tenant at all: labels never matter.
  auto no_selectors = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: globs}
spec:
  tenants: [{name: by-glob, namespaces: ["team-*"]}]
)", "globs.yaml");
  REQUIRE(no_selectors.ok());
  CHECK(tenant_or_unknown(*no_selectors.policy, "other", &unreadable) == "(none)");
}

TEST_CASE("malformed namespace selectors are errors naming the field", "[tenancy][selector]") {
  auto load_with = [](const std::string& selector) {
    std::string text = std::string(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: bad}
spec:
  tenants:
    - name: t
      namespaceSelector: )") + selector + "\n";
    return webhook::load_policy_text(text, "bad.yaml");
  };
  auto reports = [](const webhook::PolicyLoad& load, const std::string& needle) {
    INFO(load.report());
    return !load.ok() && load.report().find(needle) != std::string::npos;
  };
  CHECK(reports(load_with("{matchExpressions: [{key: a, operator: Equals, values: [x]}]}"),
                "spec.tenants[0].namespaceSelector.matchExpressions[0].operator"));
  CHECK(reports(load_with("{matchExpressions: [{key: a, operator: In}]}"), "operator In needs values"));
  CHECK(reports(load_with("{matchExpressions: [{key: a, operator: Exists, values: [x]}]}"),
                "must be empty for operator Exists"));
  CHECK(reports(load_with("{matchExpressions: [{operator: Exists}]}"), "missing required field \"key\""));
  CHECK(reports(load_with("{matchLabel: {a: b}}"), "unknown field \"matchLabel\""));
  CHECK(reports(load_with("{matchLabels: {a: 1}}"), "must be a string"));
  // A tenant needs namespaces or a selector.
  auto none = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: bad}
spec:
  tenants: [{name: t}]
)", "none.yaml");
  CHECK_FALSE(none.ok());
  CHECK(none.report().find("\"namespaces\" or \"namespaceSelector\"") != std::string::npos);
}
