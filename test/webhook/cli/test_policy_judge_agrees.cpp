// The policy engine's tests (test/policy) judge objects through policy/ alone, with
// test/policy/policy_judge.h; `check` judges them through the webhook's decision phase
// (evaluate_offline, decide_review). Both must say the same of every object, or the engine's tests
// would test another path than users run: every rule fixture (test/fixtures), every object of
// test/data and of the shared GPU and DRA corpora, with the claims and PodGroups of its file,
// mutated and not, is judged both ways and compared in full (status, decision, findings, patch, mutated object, each template's result).
// AdmissionReviews are check's alone (test_rule_fixtures.cpp, test_cli_one_path.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "policy/base/ids.h"
#include "test/policy/policy_judge.h"
#include "test_paths.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_groups.h"
#include "webhook/cli/offline.h"
#include "webhook/io/manifests.h"
#include "webhook/io/policy_file.h"

namespace fs = std::filesystem;
using namespace gpu_admission;

namespace {

const fs::path kRoot = fs::path(test_paths::source_dir());

const policy::CompiledPolicy& fixture_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_file((kRoot / "test" / "fixtures" / "policy.yaml").string());
  if (!load.ok()) FAIL("test/fixtures/policy.yaml does not load:\n" << load.report());
  return *load.policy;
}

// Every manifest under `dir` (recursively), sorted.
std::vector<fs::path> manifests_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string finding_text(const policy::Finding& f) {
  return std::string(policy::name_of(f.rule)) + " " + std::string(policy::name_of(f.action)) + "/" +
         std::string(policy::name_of(f.enforced)) + " " + f.field + ": " + f.message +
         (f.excepted() ? " (excepted by " + std::string(f.exception) + ")" : "");
}

// What a decision says, as text: two decisions agree when their texts do.
std::string decision_text(const policy::Decision& d) {
  std::string out = std::string(d.allowed ? "allowed" : "denied") + (d.exempt ? " exempt" : "") + ", tenant " +
                    (d.tenant ? d.tenant->name : "-") + ", pool " + (d.pool ? d.pool->name : "-") + ", slices " +
                    std::to_string(d.gpu_slices) + "/" + std::to_string(d.slices_per_gpu) + ", gpus " + d.gpu_sources;
  for (const auto& f : d.findings) out += "\n  " + finding_text(f);
  return out;
}

int status_of(policy_test::Judged::Status s) { return static_cast<int>(s); }
int status_of(webhook::OfflineResult::Status s) { return static_cast<int>(s); }

void compare(const webhook::OfflineResult& check, const policy_test::Judged& engine) {
  INFO("check: " << check.note << "\nengine: " << engine.note);
  REQUIRE(status_of(check.status) == status_of(engine.status));
  if (check.status == webhook::OfflineResult::Status::Error) CHECK(check.note == engine.note);
  if (check.status != webhook::OfflineResult::Status::Evaluated) return;
  CHECK(decision_text(check.decision) == decision_text(engine.decision));
  CHECK(check.patch == engine.patch);
  CHECK(check.mutated == engine.mutated);
  REQUIRE(check.templates.size() == engine.templates.size());
  for (size_t i = 0; i < check.templates.size(); ++i) {
    INFO("template " << check.templates[i].template_path);
    CHECK(check.templates[i].template_path == engine.templates[i].template_path);
    CHECK(decision_text(check.templates[i].decision) == decision_text(engine.templates[i].decision));
    CHECK(check.templates[i].patch == engine.templates[i].patch);
  }
}

// Judges every object of `file` both ways, with the file's claims and PodGroups as facts; returns
// how many were evaluated.
size_t judge_file_both_ways(const policy::CompiledPolicy& policy, const fs::path& file) {
  const webhook::ManifestRead read = webhook::read_manifest_file(file.string());
  if (read.error) return 0;  // inputs that do not read are the CLI tests' business
  webhook::InputClaims check_claims;
  webhook::InputGroups check_groups;
  policy_test::TestClaims engine_claims;
  policy_test::TestGroups engine_groups;
  for (const auto& m : read.objects) {
    if (m.from_review) continue;
    CHECK(check_claims.add(m.object, "default") == engine_claims.add(m.object, "default"));
    CHECK(check_groups.add(m.object, "default") == engine_groups.add(m.object, "default"));
  }
  policy::ExternalFacts check_facts{&check_claims, nullptr};
  check_facts.groups = &check_groups;
  policy::ExternalFacts engine_facts{&engine_claims, nullptr};
  engine_facts.groups = &engine_groups;
  size_t evaluated = 0;
  for (const auto& m : read.objects) {
    if (m.from_review) continue;
    for (const bool mutate : {true, false}) {
      INFO(m.source << (mutate ? "" : " (not mutated)"));
      const auto check = webhook::evaluate_offline(policy, m, "default", mutate, check_facts);
      compare(check, policy_test::judge(policy, m.object, "default", mutate, engine_facts));
      evaluated += check.status == webhook::OfflineResult::Status::Evaluated;
    }
  }
  return evaluated;
}

}  // namespace

TEST_CASE("policy_judge judges every rule fixture as check does", "[fixtures][policy-judge]") {
  size_t evaluated = 0;
  for (const fs::path& file : manifests_under(kRoot / "test" / "fixtures")) {
    if (file.filename() == "policy.yaml") continue;
    evaluated += judge_file_both_ways(fixture_policy(), file);
  }
  CHECK(evaluated > 300);
}

TEST_CASE("policy_judge judges every object of test/data as check does", "[policy-judge]") {
  size_t evaluated = 0;
  for (const fs::path& file : manifests_under(kRoot / "test" / "data")) evaluated += judge_file_both_ways(fixture_policy(), file);
  CHECK(evaluated > 10);
}

TEST_CASE("policy_judge judges the real GPU and DRA manifests of the shared corpora as check does", "[policy-judge]") {
  size_t evaluated = 0;
  for (const char* name : {"gpu-manifests", "dra-specs"}) {
    const std::string corpus = test_paths::corpus(name);
    if (corpus.empty()) return;
    for (const fs::path& file : manifests_under(corpus)) evaluated += judge_file_both_ways(fixture_policy(), file);
  }
  CHECK(evaluated > 100);
}
