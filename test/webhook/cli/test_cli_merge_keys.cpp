// `gpu-admission check` reads YAML merge keys (`<<`) as kubectl does: a privileged
// flag that arrives through a merge is denied, a key written after `<<` wins, and a key written
// before `<<` that the merge would change (kubectl's go-yaml v2 takes the merged value, YAML 1.1
// the written one) makes the input unusable, with its file:line:col.
#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempFile;

const std::string kPolicy = std::string(test_paths::source_dir()) + "/examples/policy.yaml";

// A CPU pod in namespace `research`; `security` is the container's securityContext block (indented
// by 8), `before` goes before the Pod's fields.
std::string pod(const std::string& security, const std::string& before = "") {
  return before +
         "apiVersion: v1\n"
         "kind: Pod\n"
         "metadata:\n"
         "  name: merged\n"
         "  namespace: research\n"
         "spec:\n"
         "  containers:\n"
         "    - name: main\n"
         "      image: busybox:1.36\n"
         "      securityContext:\n" +
         security;
}

nlohmann::json check_json(const TempFile& file, int expected_code) {
  CliRun r = run_cli({"check", "--policy", kPolicy, "-o", "json", file.path.string()});
  INFO(describe(r));
  REQUIRE(r.code == expected_code);
  nlohmann::json doc;
  REQUIRE_NOTHROW(doc = nlohmann::json::parse(r.out));
  REQUIRE(doc["results"].size() == 1);
  return doc["results"][0];
}

bool has_violation(const nlohmann::json& result, const std::string& rule, const std::string& field) {
  for (const auto& v : result["violations"])
    if (v["rule"] == rule && v["field"] == field) return true;
  return false;
}

}  // namespace

TEST_CASE("check: privileged through a merge key is denied", "[cli][check][merge]") {
  const std::string field = "spec.containers[0].securityContext.privileged";
  SECTION("an alias of a mapping") {
    TempFile file(pod("        <<: *base\n", "base: &base {privileged: true}\n"));
    nlohmann::json result = check_json(file, 1);
    CHECK(result["allowed"] == false);
    CHECK(has_violation(result, "privileged", field));
    CHECK(result["object"]["spec"]["containers"][0]["securityContext"] == nlohmann::json::parse(R"({"privileged": true})"));
  }
  SECTION("a list of aliases, the first one winning") {
    TempFile file(pod("        <<: [*root, *safe]\n",
                      "x-root: &root {privileged: true}\nx-safe: &safe {privileged: false, runAsNonRoot: true}\n"));
    nlohmann::json result = check_json(file, 1);
    CHECK(has_violation(result, "privileged", field));
  }
  SECTION("an inline mapping") {
    TempFile file(pod("        <<: {privileged: true}\n        runAsNonRoot: false\n"));
    CHECK(has_violation(check_json(file, 1), "privileged", field));
  }
  SECTION("a merged mapping that merges in turn") {
    TempFile file(pod("        <<: *outer\n", "x-inner: &inner {privileged: true}\nx-outer: &outer {<<: *inner}\n"));
    CHECK(has_violation(check_json(file, 1), "privileged", field));
  }
  SECTION("text output names the rule") {
    TempFile file(pod("        <<: *base\n", "base: &base {privileged: true}\n"));
    CliRun r = run_cli({"check", "--policy", kPolicy, file.path.string()});
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(r.out.find("DENIED") != std::string::npos);
    CHECK(r.out.find("[privileged]") != std::string::npos);
  }
}

TEST_CASE("check: a key written after << wins over the merged one", "[cli][check][merge]") {
  TempFile file(pod("        <<: *base\n        privileged: false\n", "base: &base {privileged: true}\n"));
  nlohmann::json result = check_json(file, 0);
  CHECK(result["allowed"] == true);
  CHECK(result["object"]["spec"]["containers"][0]["securityContext"]["privileged"] == false);
}

TEST_CASE("check: a key written before << that the merge changes is unusable input", "[cli][check][merge]") {
  // kubectl (go-yaml v2) would apply this pod privileged; YAML 1.1 readers would not.
  TempFile file(pod("        privileged: false\n        <<: *base\n", "base: &base {privileged: true}\n"));
  CliRun r = run_cli({"check", "--policy", kPolicy, file.path.string()});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find(file.path.string() + ":13:13:") != std::string::npos);
  CHECK(r.err.find("written before \"<<\"") != std::string::npos);
}

TEST_CASE("check: a merge key whose value is not a mapping is unusable input", "[cli][check][merge]") {
  TempFile file(pod("        <<: [*base, true]\n", "base: &base {privileged: true}\n"));
  CliRun r = run_cli({"check", "--policy", kPolicy, file.path.string()});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find(file.path.string() + ":12:21: invalid YAML: merge key value must be a mapping or a sequence of mappings") !=
        std::string::npos);
}
