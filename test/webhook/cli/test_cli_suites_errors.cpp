// End-to-end tests of `gpu-admission test` on suites it cannot run: a missing object or policy
// file, an invalid suite (naming the line), and paths relative to the suite file whatever the
// working directory.
#include <catch2/catch.hpp>

#include "webhook/cli/suites_test_support.h"

#include <regex>
#include <string>
#include <vector>

TEST_CASE("test: a missing object file exits 2 and names the file", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("missing.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: fine
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
  - name: the file is not there
    namespace: research
    object: pods/no-such-pod.yaml
    expect: {allowed: true}
)");
  CliRun r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("no-such-pod.yaml") != std::string::npos);
  CHECK(r.err.find("missing.yaml:11") != std::string::npos);  // the line of the case's `object:`
}

TEST_CASE("test: a missing policy file exits 2 and names the file", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("nopolicy.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: no-such-policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
)");
  CliRun r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("no-such-policy.yaml") != std::string::npos);
}

TEST_CASE("test: an invalid suite exits 2 naming the line", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);

  SECTION("unknown field") {
    const std::string suite = dir.file("unknown-field.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false, deniedd: [privileged]}
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-field.yaml:8:") != std::string::npos);
    CHECK(r.err.find("deniedd") != std::string::npos);
  }

  SECTION("unknown field in a case") {
    const std::string suite = dir.file("unknown-case-field.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    objects: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-case-field.yaml:7:") != std::string::npos);
    CHECK(r.err.find("objects") != std::string::npos);
  }

  SECTION("unknown rule ID") {
    const std::string suite = dir.file("unknown-rule.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect:
      allowed: false
      denied:
        - privileged
        - privileged-container
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-rule.yaml:12:") != std::string::npos);
    CHECK(r.err.find("privileged-container") != std::string::npos);
  }

  SECTION("invalid YAML") {
    const std::string suite = dir.file("broken.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\ncases:\n  - name: [unclosed\n");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("broken.yaml:") != std::string::npos);
  }

  SECTION("a usable suite beside an unusable one still exits 2") {
    const std::string bad = dir.file("bad.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\ncases: []\n");
    CliRun r = run_cli({"test", dir.path.string() + "/examples/suite.yaml", bad});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("bad.yaml") != std::string::npos);
  }
}

TEST_CASE("test: paths are relative to the suite file, whatever the working directory", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  fs::create_directories(dir.path / "elsewhere" / "deeper");

  struct Run {
    std::string cwd;
    std::string suite;
  };
  const std::vector<Run> runs = {
      {"/", kExamples + "/suite.yaml"},                             // absolute path, unrelated cwd
      {kSource, "examples/suite.yaml"},                             // from the repository root
      {kExamples, "suite.yaml"},                                    // from the suite's own folder
      {(dir.path / "elsewhere" / "deeper").string(), "../../examples/suite.yaml"},  // a copy, via ..
      {(dir.path / "examples" / "manifests").string(), "../suite.yaml"},
  };
  std::string first_summary;
  for (const auto& run : runs) {
    CliRun r = run_cli({"test", run.suite}, run.cwd);
    INFO("cwd " << run.cwd << ", suite " << run.suite << "\n" << describe(r));
    CHECK(r.code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex(R"(\d+ passed, 0 failed)")));
    if (first_summary.empty()) first_summary = m[0];
    CHECK(m[0] == first_summary);
  }
}
