// Pod Security Admission style fixtures: test/fixtures/<rule-id>/{pass,fail}/*.yaml, one object
// per file (after the ResourceClaims, ResourceClaimTemplates and PodGroups it refers to, when it
// needs them), judged as `check` judges them (evaluate_offline: the AdmissionReviews among them,
// UPDATEs too, go through the webhook's decide_review) against test/fixtures/policy.yaml. A fail
// fixture must be denied by its folder's rule (with a field and a message); a pass fixture must
// not be reported by it (other rules may fire). The namespace of each object selects its tenant.
// ResourceClaims, ResourceClaimTemplates and PodGroups before the object are the claims and groups
// it refers to (as among the inputs of `check`); the last object of the file is the one judged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "policy/evaluation/decision.h"
#include "policy/base/ids.h"
#include "policy/evaluation/rules/rule.h"
#include "webhook/io/manifests.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_groups.h"
#include "webhook/cli/offline.h"
#include "webhook/io/policy_file.h"
#include "test_paths.h"

namespace fs = std::filesystem;
using namespace gpu_admission;

namespace {

const fs::path& fixtures_dir() {
  static const fs::path dir = fs::path(test_paths::source_dir()) / "test" / "fixtures";
  return dir;
}

const webhook::PolicyLoad& fixture_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_file((fixtures_dir() / "policy.yaml").string());
  return load;
}

// The *.yaml / *.yml files directly in `dir`, sorted; empty when `dir` does not exist.
std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto ext = entry.path().extension();
    if (ext == ".yaml" || ext == ".yml") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string describe(const policy::Decision& d) {
  std::string out = d.allowed ? "allowed" : "denied";
  out += d.exempt ? " (exempt)" : "";
  out += ", tenant " + (d.tenant ? d.tenant->name : std::string("-"));
  out += ", pool " + (d.pool ? d.pool->name : std::string("-"));
  out += ", gpu slices " + std::to_string(d.gpu_slices) + "/" + std::to_string(d.slices_per_gpu);
  if (d.findings.empty()) out += "\n  (no findings)";
  for (const auto& f : d.findings) {
    out += "\n  [" + std::string(policy::name_of(f.rule)) + " " + std::string(policy::name_of(f.action)) + "] " +
           f.field + ": " + f.message;
  }
  if (!d.patch.empty()) out += "\n  patch: " + policy::patch_to_json(d.patch);
  return out;
}

struct Outcome {
  bool ok = false;       // read and evaluated
  std::string problem;   // why not
  webhook::OfflineResult result;
};

Outcome evaluate_fixture(const fs::path& file) {
  Outcome o;
  webhook::ManifestRead read = webhook::read_manifest_file(file.string());
  if (read.error) {
    o.problem = "cannot read: " + *read.error;
    return o;
  }
  if (read.objects.empty()) {
    o.problem = "expected an object, found none";
    return o;
  }
  webhook::InputClaims inputs;
  webhook::InputGroups groups;
  for (size_t i = 0; i + 1 < read.objects.size(); ++i) {
    if (!inputs.add(read.objects[i].object, "") && !groups.add(read.objects[i].object, "")) {
      o.problem = "only ResourceClaims, ResourceClaimTemplates and PodGroups (of a served version) may come before "
                  "the judged object; " + read.objects[i].source + " is not one";
      return o;
    }
  }
  policy::ExternalFacts facts{&inputs, nullptr};
  facts.groups = &groups;
  o.result = webhook::evaluate_offline(*fixture_policy().policy, read.objects.back(), "", true, facts);
  if (o.result.status != webhook::OfflineResult::Status::Evaluated) {
    o.problem = "not evaluated: " + o.result.note;
    return o;
  }
  if (o.result.namespace_name.empty()) {
    o.problem = "the fixture must set metadata.namespace (it selects the tenant)";
    return o;
  }
  o.ok = true;
  return o;
}

}  // namespace

TEST_CASE("fixture policy loads", "[fixtures]") {
  const auto& load = fixture_policy();
  INFO(load.report());
  REQUIRE(load.ok());
  const auto& p = *load.policy;
  CHECK(p.pools().size() == 8);
  CHECK(p.tenants().size() == 3);
  for (auto rule : policy::kRuleNames) {
    INFO(rule);
    CHECK(p.action(*policy::enum_from_name<policy::RuleId>(policy::kRuleNames, rule)) == policy::Action::Deny);
  }
  // The adversarial MPS pool is deliberate (it is what mps-adversarial's first trigger needs);
  // lint says so, and that must stay a warning, not an error.
  // So is the adversarial time-slicing pool (gpu-sharing's).
  bool mps_warning = false, time_slicing_warning = false;
  for (const auto& issue : load.issues) {
    if (issue.severity != policy::Issue::Severity::Warning) continue;
    if (issue.path == "spec.pools[1].sharing") mps_warning = true;
    if (issue.path == "spec.pools[5].sharing") time_slicing_warning = true;
  }
  CHECK(mps_warning);
  CHECK(time_slicing_warning);
}

TEST_CASE("every rule has pass and fail fixtures", "[fixtures]") {
  const fs::path& root = fixtures_dir();
  REQUIRE(fs::is_directory(root));
  std::set<std::string> known(policy::kRuleNames.begin(), policy::kRuleNames.end());
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    INFO("folder test/fixtures/" << entry.path().filename().string() << " is not a rule ID");
    CHECK(known.count(entry.path().filename().string()) == 1);
  }
  for (auto rule : policy::kRuleNames) {
    INFO("rule " << rule);
    fs::path dir = root / std::string(rule);
    CHECK(fs::is_directory(dir));
    CHECK(yaml_files(dir / "pass").size() >= 2);
    CHECK(yaml_files(dir / "fail").size() >= 3);
    for (const auto& entry : fs::directory_iterator(dir, fs::directory_options::skip_permission_denied)) {
      INFO("unexpected entry " << entry.path().string() << " (only pass/ and fail/)");
      std::string name = entry.path().filename().string();
      CHECK((name == "pass" || name == "fail"));
    }
  }
}

TEST_CASE("rule fixtures: fail fixtures are denied by their rule, pass fixtures are not reported by it",
          "[fixtures]") {
  REQUIRE(fixture_policy().ok());
  size_t evaluated = 0, files = 0;
  for (size_t r = 0; r < policy::kRuleCount; ++r) {
    const auto rule = static_cast<policy::RuleId>(r);
    const std::string rule_name(policy::name_of(rule));
    for (const bool expect_fail : {true, false}) {
      const fs::path dir = fixtures_dir() / rule_name / (expect_fail ? "fail" : "pass");
      for (const fs::path& file : yaml_files(dir)) {
        ++files;
        const std::string shown = "test/fixtures/" + rule_name + (expect_fail ? "/fail/" : "/pass/") +
                                  file.filename().string();
        INFO("fixture " << shown);
        const std::string comment = first_line(file);
        INFO("first line: " << comment);
        CHECK((comment.size() > 2 && comment.starts_with("# ")));

        Outcome o = evaluate_fixture(file);
        INFO(o.problem);
        CHECK(o.ok);
        if (!o.ok) continue;
        ++evaluated;
        const policy::Decision& d = o.result.decision;
        INFO("evaluation: " << describe(d));
        if (expect_fail) CHECK_FALSE(d.exempt);  // an exempt fixture would test nothing

        auto of_rule = [&](const policy::Finding& f) { return f.rule == rule; };
        if (expect_fail) {
          bool denied = std::any_of(d.findings.begin(), d.findings.end(), [&](const policy::Finding& f) {
            return of_rule(f) && f.action == policy::Action::Deny && !f.field.empty() && !f.message.empty();
          });
          INFO("expected a deny finding of " << rule_name << " with a field and a message");
          CHECK(denied);
          CHECK_FALSE(d.allowed);
        } else {
          INFO("expected no finding of " << rule_name);
          CHECK(std::none_of(d.findings.begin(), d.findings.end(), of_rule));
        }
      }
    }
  }
  INFO("fixtures found: " << files);
  REQUIRE(evaluated > 0);
  CHECK(evaluated == files);
}

TEST_CASE("rule fixtures: field paths of workload fixtures name the pod template", "[fixtures]") {
  // Every finding of a workload fixture points into its template (or, for the namespace, at the
  // workload's own metadata), so messages lead users to the right place in their Deployment; a
  // claim's findings point into its devices, a TrainJob's into its pod override (a pod spec).
  REQUIRE(fixture_policy().ok());
  size_t workloads = 0;
  for (auto rule : policy::kRuleNames) {
    const fs::path dir = fixtures_dir() / std::string(rule) / "fail";
    for (const fs::path& file : yaml_files(dir)) {
      Outcome o = evaluate_fixture(file);
      if (!o.ok || o.result.kind == "Pod") continue;
      ++workloads;
      INFO("fixture test/fixtures/" << rule << "/fail/" << file.filename().string() << ": " << describe(o.result.decision));
      const std::string prefix = o.result.kind == "CronJob"                 ? "spec.jobTemplate.spec.template."
                                 : o.result.kind == "ResourceClaim"         ? "spec.devices."
                                 : o.result.kind == "ResourceClaimTemplate" ? "spec.spec.devices."
                                 : o.result.kind == "TrainJob"              ? "spec.podSpecOverrides[0]."  // v2.0
                                 : o.result.kind == "PodGroup"              ? "spec."
                                                                            : "spec.template.";
      for (const auto& f : o.result.decision.findings) {
        INFO("field " << f.field);
        // The namespace is the workload's own: a template has none.
        CHECK((f.field.starts_with(prefix) || f.field == "metadata.namespace"));
      }
    }
  }
  CHECK(workloads >= 5);
}

TEST_CASE("rule fixtures: a rule that judges claims on their own has claim fixtures", "[fixtures]") {
  // Its fail fixtures include a ResourceClaim or ResourceClaimTemplate it denies, and its pass
  // fixtures one it lets through: the claim check is exercised as the pod check is.
  REQUIRE(fixture_policy().ok());
  size_t claim_rules = 0;
  for (size_t r = 0; r < policy::kRuleCount; ++r) {
    if (!policy::rule_entries()[r]->claim) continue;
    ++claim_rules;
    const std::string rule_name(policy::kRuleNames[r]);
    INFO("rule " << rule_name << ": add test/fixtures/" << rule_name << "/{fail,pass}/claim-*.yaml");
    for (const bool expect_fail : {true, false}) {
      size_t claims = 0;
      for (const fs::path& file : yaml_files(fixtures_dir() / rule_name / (expect_fail ? "fail" : "pass"))) {
        Outcome o = evaluate_fixture(file);
        if (o.ok && (o.result.kind == "ResourceClaim" || o.result.kind == "ResourceClaimTemplate")) ++claims;
      }
      INFO((expect_fail ? "fail" : "pass") << " claim fixtures: " << claims);
      CHECK(claims >= 1);
    }
  }
  CHECK(claim_rules >= 2);
}

TEST_CASE("rule fixtures: a rule that judges PodGroups has PodGroup fixtures in every served version",
          "[fixtures][podgroup]") {
  // Its fail fixtures include a PodGroup it denies and a pod of a group it denies for the group's
  // claims; its pass fixtures a PodGroup it lets through; and scheduling.k8s.io v1alpha2,
  // v1alpha3 and v1beta1 all appear among its fixtures. A PodGroup's findings name its
  // spec.resourceClaims (or spec, for its pool's own sharing).
  REQUIRE(fixture_policy().ok());
  size_t group_rules = 0;
  for (size_t r = 0; r < policy::kRuleCount; ++r) {
    if (!policy::rule_entries()[r]->group) continue;
    ++group_rules;
    const std::string rule_name(policy::kRuleNames[r]);
    INFO("rule " << rule_name << ": add test/fixtures/" << rule_name << "/{fail,pass}/podgroup-*.yaml");
    std::set<std::string> versions;
    size_t failing_groups = 0, failing_pods = 0, passing_groups = 0;
    for (const bool expect_fail : {true, false}) {
      for (const fs::path& file : yaml_files(fixtures_dir() / rule_name / (expect_fail ? "fail" : "pass"))) {
        if (!file.filename().string().starts_with("podgroup-")) continue;
        const std::string text = [&] {
          std::ifstream in(file);
          return std::string(std::istreambuf_iterator<char>(in), {});
        }();
        for (const char* v : {"v1alpha2", "v1alpha3", "v1beta1"})
          if (text.find(std::string("scheduling.k8s.io/") + v) != std::string::npos) versions.insert(v);
        Outcome o = evaluate_fixture(file);
        if (!o.ok) continue;
        if (o.result.kind == "PodGroup") {
          ++(expect_fail ? failing_groups : passing_groups);
          for (const auto& f : o.result.decision.findings) {
            INFO("field " << f.field);
            CHECK(f.field.starts_with("spec"));
          }
        } else if (expect_fail && o.result.kind == "Pod") {
          ++failing_pods;
        }
      }
    }
    CHECK(failing_groups >= 1);
    CHECK(passing_groups >= 1);
    CHECK(failing_pods >= 1);
    CHECK(versions.size() == 3);
  }
  CHECK(group_rules == 5);
}
