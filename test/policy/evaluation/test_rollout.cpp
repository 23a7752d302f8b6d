// A staged rollout on the policy engine: spec.enforcement caps every rule's action (the same
// findings either way; under audit the mutations are found but withheld), tenants[].rules
// override spec.rules per tenant, and spec.exceptions turn rules off for what all their
// selectors match until they expire, with the findings still reported as excepted. Also the
// notice mig-resources leaves when it turns whole GPUs into MIG slices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "policy/base/ids.h"
#include "policy/config/rollout_fields.h"
#include "policy/evaluation/decision.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using policy::Action;
using policy::RuleId;

namespace {

constexpr int64_t kNow = 1'790'000'000;  // 2026-09-21T...Z: every test's clock

std::string policy_text(const std::string& spec_extra, const std::string& tenant_extra = "") {
  return R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: rollout}
spec:
  mutations: {hide-gpus: false}
  defaults: {maxGpusPerPod: 2}
  pools:
    - name: mig
      nodeSelector: {pool: mig}
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
  tenants:
    - name: alpha
      namespaces: [team-alpha, "alpha-*"]
      pools: [mig]
      defaultPool: mig
)" + tenant_extra + R"(    - name: beta
      namespaces: [team-beta]
      pools: [mig]
      defaultPool: mig
)" + spec_extra;
}

webhook::PolicyLoad load(const std::string& text, std::optional<policy::Enforcement> enforcement = std::nullopt) {
  return webhook::load_policy_text(text, "rollout.yaml", {kNow, enforcement});
}

const policy::CompiledPolicy& compiled(const webhook::PolicyLoad& l) {
  INFO(l.report());
  REQUIRE(l.ok());
  return *l.policy;
}

// A pod in `ns` with a privileged container asking for `gpus` whole GPUs, labelled `labels`. In
// the MIG pool they become 1g.10gb slices: 20 of them are over the cap of 2 GPUs, 1 is not.
Json pod(const std::string& ns, int gpus, Json labels = Json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", ns}, {"labels", labels}}},
          {"spec",
           {{"containers", Json::array({{{"name", "main"},
                                         {"image", "cuda"},
                                         {"securityContext", {{"privileged", true}}},
                                         {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}}};
}

policy_test::Judged judge(const policy::CompiledPolicy& p, const Json& object, int64_t now = kNow,
                             bool mutate = true) {
  policy::ExternalFacts facts;
  facts.now = now;
  policy_test::Judged r = policy_test::judge(p, object, "", mutate, facts);
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  return r;
}

const policy::Finding* finding(const policy::Decision& d, RuleId rule) {
  auto it = std::find_if(d.findings.begin(), d.findings.end(), [&](const policy::Finding& f) { return f.rule == rule; });
  return it == d.findings.end() ? nullptr : &*it;
}

// (rule, action, excepted) of every finding, sorted: "the same findings" compared across modes.
std::vector<std::string> shape(const policy::Decision& d) {
  std::vector<std::string> out;
  for (const auto& f : d.findings) out.push_back(std::string(policy::name_of(f.rule)) + " " + f.field);
  std::sort(out.begin(), out.end());
  return out;
}

bool has_issue(const webhook::PolicyLoad& l, const std::string& path, const std::string& text) {
  return std::any_of(l.issues.begin(), l.issues.end(), [&](const policy::Issue& i) {
    return i.path == path && i.message.find(text) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("rollout: RFC 3339 times", "[rollout]") {
  CHECK(policy::parse_rfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(policy::parse_rfc3339("2026-12-31T23:59:59Z") == 1798761599);
  CHECK(policy::parse_rfc3339("2026-12-31T18:59:59-05:00") == 1798761599);
  CHECK(policy::parse_rfc3339("2027-01-01T00:59:59.999+01:00") == 1798761599);
  CHECK(policy::parse_rfc3339("2024-02-29t12:00:00z").has_value());
  for (const char* bad : {"2026-12-31", "2026-12-31T23:59:59", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-12-31T24:00:00Z", "2026-12-31 23:59:59Z", "2026-12-31T23:59:59Zx",
                          "2026-12-31T23:59:59.Z", "2026-12-31T23:59:59+0100", "tomorrow", ""})
    CHECK_FALSE(policy::parse_rfc3339(bad).has_value());
}

TEST_CASE("rollout: the loader checks enforcement, tenant rules and exceptions", "[rollout]") {
  auto bad_mode = load(policy_text("  enforcement: dryrun\n"));
  CHECK_FALSE(bad_mode.ok());
  CHECK(has_issue(bad_mode, "spec.enforcement", "expected enforce | warn | audit"));

  auto bad_tenant_rule = load(policy_text("", "      rules: {gpu-cap: audit, gpu-kap: off, privileged: maybe}\n"));
  CHECK(has_issue(bad_tenant_rule, "spec.tenants[0].rules.gpu-kap", "unknown rule"));
  CHECK(has_issue(bad_tenant_rule, "spec.tenants[0].rules.privileged", "invalid value \"maybe\""));

  auto bad_exceptions = load(policy_text(R"(  exceptions:
    - {name: a, rules: [privileged]}
    - {name: b, reason: r, rules: [], expires: "2026-12-31"}
    - {name: c, reason: r, rules: [privileged, nope], tenants: [gamma], extra: 1}
    - {name: c, reason: r, rules: [gpu-cap]}
)"));
  CHECK_FALSE(bad_exceptions.ok());
  CHECK(has_issue(bad_exceptions, "spec.exceptions[0]", "missing required field \"reason\""));
  CHECK(has_issue(bad_exceptions, "spec.exceptions[1].rules", "at least one rule"));
  CHECK(has_issue(bad_exceptions, "spec.exceptions[1].expires", "not an RFC 3339 time"));
  CHECK(has_issue(bad_exceptions, "spec.exceptions[2].rules[1]", "unknown rule \"nope\""));
  CHECK(has_issue(bad_exceptions, "spec.exceptions[2].extra", "unknown field"));

  auto bad_names = load(policy_text(R"(  exceptions:
    - {name: c, reason: r, rules: [privileged], tenants: [gamma]}
    - {name: c, reason: r, rules: [gpu-cap]}
)"));
  CHECK(has_issue(bad_names, "spec.exceptions[0].tenants[0]", "unknown tenant \"gamma\""));
  CHECK(has_issue(bad_names, "spec.exceptions[1].name", "listed twice"));
}

TEST_CASE("rollout: enforcement caps every action and finds the same findings", "[rollout]") {
  auto enforce = load(policy_text("  rules: {tenant-label: warn, gpu-tolerations: off}\n"));
  auto warn = load(policy_text("  enforcement: warn\n  rules: {tenant-label: warn, gpu-tolerations: off}\n"));
  auto audit = load(policy_text("  rules: {tenant-label: warn, gpu-tolerations: off}\n"), policy::Enforcement::Audit);
  const Json p = pod("team-alpha", 20);
  const auto e = judge(compiled(enforce), p);
  const auto w = judge(compiled(warn), p);
  const auto a = judge(compiled(audit), p);
  CHECK_FALSE(e.decision.allowed);
  CHECK(w.decision.allowed);
  CHECK(a.decision.allowed);
  CHECK(shape(e.decision) == shape(w.decision));
  CHECK(shape(e.decision) == shape(a.decision));
  REQUIRE(finding(e.decision, RuleId::Privileged));
  CHECK(finding(e.decision, RuleId::Privileged)->action == Action::Deny);
  CHECK(finding(w.decision, RuleId::Privileged)->action == Action::Warn);
  CHECK(finding(a.decision, RuleId::Privileged)->action == Action::Audit);
  for (const auto& f : a.decision.findings) CHECK(f.action == Action::Audit);
  CHECK(finding(e.decision, RuleId::GpuTolerations) == nullptr);  // off stays off under every mode
  CHECK(finding(a.decision, RuleId::GpuTolerations) == nullptr);

  // Under audit and warn the mutations are found and withheld: no patch, the same operations kept
  // aside; nothing about the object changes.
  CHECK_FALSE(e.decision.patch.empty());
  CHECK(e.decision.withheld_patch.empty());
  for (const auto* observed : {&a, &w}) {
    CHECK(observed->decision.patch.empty());
    CHECK(policy::patch_to_json(observed->decision.withheld_patch) == policy::patch_to_json(e.decision.patch));
    CHECK(observed->mutated == p);  // check's object after mutation: unchanged
  }
  // What enforcement would do with each finding is kept: deny, in every mode.
  for (const auto* d : {&e.decision, &w.decision, &a.decision})
    CHECK(finding(*d, RuleId::Privileged)->enforced == Action::Deny);
  CHECK(finding(w.decision, RuleId::Privileged)->would_deny());
  CHECK_FALSE(finding(e.decision, RuleId::Privileged)->would_deny());
}

TEST_CASE("rollout: tenants[].rules override spec.rules for that tenant only", "[rollout]") {
  auto l = load(policy_text("  rules: {privileged: off}\n", "      rules: {gpu-cap: audit, privileged: deny}\n"));
  const auto& p = compiled(l);
  const auto alpha = judge(p, pod("team-alpha", 20));
  const auto beta = judge(p, pod("team-beta", 20));
  REQUIRE(finding(alpha.decision, RuleId::GpuCap));
  CHECK(finding(alpha.decision, RuleId::GpuCap)->action == Action::Audit);
  REQUIRE(finding(alpha.decision, RuleId::Privileged));  // off globally, on for alpha
  CHECK(finding(alpha.decision, RuleId::Privileged)->action == Action::Deny);
  REQUIRE(finding(beta.decision, RuleId::GpuCap));
  CHECK(finding(beta.decision, RuleId::GpuCap)->action == Action::Deny);
  CHECK(finding(beta.decision, RuleId::Privileged) == nullptr);
  // Enforcement caps the tenant's actions too.
  auto audited = load(policy_text("  enforcement: audit\n", "      rules: {gpu-cap: deny}\n"));
  CHECK(finding(judge(compiled(audited), pod("team-alpha", 20)).decision, RuleId::GpuCap)->action == Action::Audit);
}

TEST_CASE("rollout: an exception turns its rules off for what every selector matches", "[rollout]") {
  auto l = load(policy_text(R"(  exceptions:
    - name: alpha-debug
      reason: "INC-42: driver debugging on alpha's nodes"
      rules: [privileged]
      namespaces: ["alpha-*"]
      tenants: [alpha]
      podLabels: {debug: "true"}
      expires: "2026-10-01T00:00:00Z"
)"));
  const auto& p = compiled(l);
  const Json debug_labels = {{"debug", "true"}};
  // Matched: the privileged finding is excepted (still reported), gpu-cap still denies.
  const auto matched = judge(p, pod("alpha-dev", 20, debug_labels));
  const auto* f = finding(matched.decision, RuleId::Privileged);
  REQUIRE(f);
  CHECK(f->exception == "alpha-debug");
  CHECK(f->action == Action::Deny);  // the action it would have had
  CHECK_FALSE(matched.decision.allowed);
  CHECK(finding(matched.decision, RuleId::GpuCap)->exception.empty());
  // Within the cap, only the excepted finding remains: allowed.
  CHECK(judge(p, pod("alpha-dev", 1, debug_labels)).decision.allowed);

  // Each selector must match: another namespace of the tenant, another label, another tenant.
  CHECK(finding(judge(p, pod("team-alpha", 1, debug_labels)).decision, RuleId::Privileged)->exception.empty());
  CHECK_FALSE(judge(p, pod("alpha-dev", 1, {{"debug", "false"}})).decision.allowed);
  CHECK_FALSE(judge(p, pod("alpha-dev", 1)).decision.allowed);
  CHECK_FALSE(judge(p, pod("team-beta", 1, debug_labels)).decision.allowed);

  // Expired: inert from `expires` on; an unknown time never applies an exception that expires.
  const int64_t expires = *policy::parse_rfc3339("2026-10-01T00:00:00Z");
  CHECK(judge(p, pod("alpha-dev", 1, debug_labels), expires - 1).decision.allowed);
  CHECK_FALSE(judge(p, pod("alpha-dev", 1, debug_labels), expires).decision.allowed);
  CHECK_FALSE(judge(p, pod("alpha-dev", 1, debug_labels), policy::kUnknownTime).decision.allowed);
}

TEST_CASE("rollout: exceptions by username, and for claims (which have no pod labels)", "[rollout]") {
  auto l = load(policy_text(R"(  exceptions:
    - {name: ci, reason: "CI runners", rules: [privileged], usernames: ["system:serviceaccount:ci:*"]}
    - {name: big-claims, reason: "benchmark week", rules: [gpu-cap], namespaces: [team-beta]}
    - {name: labelled, reason: "r", rules: [gpu-cap], podLabels: {big: "yes"}}
)"));
  const auto& p = compiled(l);
  // policy_test::judge has no user (as `check`): the username exception never matches there.
  CHECK_FALSE(judge(p, pod("team-alpha", 1)).decision.allowed);

  auto claim = [](const std::string& ns) {
    Json c = Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "c"},
      "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]}}})");
    c["metadata"]["namespace"] = ns;
    return c;
  };
  const auto beta_claim = judge(p, claim("team-beta"));
  REQUIRE(finding(beta_claim.decision, RuleId::GpuCap));
  CHECK(finding(beta_claim.decision, RuleId::GpuCap)->exception == "big-claims");
  CHECK(beta_claim.decision.allowed);
  const auto alpha_claim = judge(p, claim("team-alpha"));  // podLabels cannot match a claim
  CHECK_FALSE(alpha_claim.decision.allowed);
  CHECK(finding(alpha_claim.decision, RuleId::GpuCap)->exception.empty());
}

TEST_CASE("rollout: lint warns before exceptions expire and about podLabels exceptions", "[rollout]") {
  auto l = load(policy_text(R"(  exceptions:
    - {name: soon, reason: r, rules: [gpu-cap], namespaces: [team-alpha], expires: "2026-09-25T00:00:00Z"}
    - {name: gone, reason: r, rules: [gpu-cap], namespaces: [team-alpha], expires: "2026-09-01T00:00:00Z"}
    - {name: later, reason: r, rules: [gpu-cap], namespaces: [team-alpha], expires: "2027-01-01T00:00:00Z"}
    - {name: labels, reason: r, rules: [gpu-cap, privileged], podLabels: {debug: "true"}}
    - {name: scoped, reason: r, rules: [privileged], podLabels: {debug: "true"}, tenants: [alpha]}
    - {name: cap-labels, reason: r, rules: [gpu-cap], podLabels: {debug: "true"}}
)"));
  REQUIRE(l.ok());  // warnings never block
  CHECK(has_issue(l, "spec.exceptions[0].expires", "expires at 2026-09-25T00:00:00Z (in 3 days)"));
  CHECK(has_issue(l, "spec.exceptions[1].expires", "expired at 2026-09-01T00:00:00Z and does nothing"));
  CHECK_FALSE(has_issue(l, "spec.exceptions[2].expires", ""));
  // Tenants write their pods' labels: a podLabels exception to a security or GPU rule, scoped or not
  // (test/policy/config/test_policy_lint_exceptions.cpp has the rest).
  CHECK(has_issue(l, "spec.exceptions[3].podLabels", "selects by podLabels for gpu-cap, privileged"));
  CHECK(has_issue(l, "spec.exceptions[4].podLabels", "selects by podLabels for privileged"));
  CHECK(has_issue(l, "spec.exceptions[5].podLabels", "selects by podLabels for gpu-cap"));
}

TEST_CASE("rollout: mig-resources says what it converted", "[rollout]") {
  auto l = load(policy_text(""));
  Json p = pod("team-alpha", 2);
  p["spec"]["containers"][0].erase("securityContext");
  p["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", 2}};
  const auto r = judge(compiled(l), p);
  REQUIRE(r.decision.notices.size() == 1);
  CHECK(r.decision.notices[0] == "converted nvidia.com/gpu: 2 to nvidia.com/mig-1g.10gb: 2 in pool mig");
  // Nothing converted, nothing said: a pod that already asks for slices.
  Json slices = p;
  slices["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  CHECK(judge(compiled(l), slices).decision.notices.empty());
}
