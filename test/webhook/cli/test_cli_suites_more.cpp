// End-to-end tests of the newer `test` features: `audited`, `messages` and `patched`
// expectations, the findings a failed case prints, directories of suites, several paths,
// --run, a case whose namespace contradicts its object's, and suites that cannot be loaded
// (exit 2, a JUnit <error>).
#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"

#include <nlohmann/json.hpp>
#include <string>
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempDir;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/examples/policy.yaml";
const std::string kManifests = kSource + "/examples/manifests";

// A suite header on the examples policy (absolute paths work from anywhere).
std::string suite(const std::string& cases) {
  return "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\npolicy: " + kPolicy + "\ncases:\n" + cases;
}

std::string object_case(const std::string& name, const std::string& ns, const std::string& file,
                        const std::string& expect) {
  return "  - name: " + name + "\n    namespace: " + ns + "\n    object: " + kManifests + "/" + file +
         "\n    expect:\n" + expect;
}

const std::string kPassingExpectations =
    object_case("over the cap is audited", "research", "over-cap-pod.yaml",
                "      allowed: true\n      audited: [gpu-cap]\n      denied: []\n"
                "      messages: ['1 2/7 GPUs', '^pod requests', 'allows \\d+ per pod']\n") +
    object_case("the training pod is patched", "research-nlp", "training-pod.yaml",
                "      audited: []\n      patched:\n"
                "        /spec/nodeSelector: {gpu.example.com/pool: a100-secure}\n"
                "        /spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb: \"1\"\n"
                "        /metadata/labels/gpu-admission.io~1tenant: research\n"
                "        /metadata/name: bert-finetune\n");

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("test: audited, messages and patched expectations hold", "[cli][test][expect]") {
  TempDir dir;
  CliRun r = run_cli({"test", dir.file("s.yaml", suite(kPassingExpectations))});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("2 passed, 0 failed") != std::string::npos);
}

TEST_CASE("test: audited, messages and patched failures say expected and got, with the findings",
          "[cli][test][expect]") {
  TempDir dir;
  const std::string file = dir.file(
      "s.yaml",
      suite(object_case("wrong audited", "research", "over-cap-pod.yaml", "      audited: [tenant-label]\n") +
            object_case("no such message", "research", "over-cap-pod.yaml", "      messages: ['privileged', 'GPUs']\n") +
            object_case("wrong patched value", "research-nlp", "training-pod.yaml",
                        "      patched: {/spec/nodeSelector/gpu.example.com~1pool: h100-shared}\n") +
            object_case("a pointer that does not resolve", "research-nlp", "training-pod.yaml",
                        "      patched: {/spec/nodeSelector/zone: a, /spec/containers/5/name: x}\n")));
  SECTION("text") {
    CliRun r = run_cli({"test", file});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    CHECK(r.out.find("0 passed, 4 failed") != std::string::npos);
    CHECK(r.out.find("audited: expected [tenant-label], got [gpu-cap]") != std::string::npos);
    CHECK(r.out.find("messages: expected a finding whose message matches /privileged/") != std::string::npos);
    CHECK(r.out.find("/GPUs/") == std::string::npos);  // that one matched
    CHECK(r.out.find("patched[/spec/nodeSelector/gpu.example.com~1pool]: expected \"h100-shared\", got \"a100-secure\"") !=
          std::string::npos);
    CHECK(r.out.find("patched[/spec/nodeSelector/zone]: expected \"a\", got nothing: /spec/nodeSelector holds "
                     "{\"gpu.example.com/pool\":\"a100-secure\"}") != std::string::npos);
    CHECK(r.out.find("patched[/spec/containers/5/name]: expected \"x\", got nothing: /spec/containers holds a list of 1: [") !=
          std::string::npos);
    // Each failed case lists its decision's findings: action, rule, message.
    CHECK(count_of(r.out, "findings:") == 4);
    CHECK(count_of(r.out, "audit [gpu-cap] pod requests 1 2/7 GPUs") == 2);
    CHECK(count_of(r.out, "findings: none") == 2);
  }
  SECTION("json and junit") {
    CliRun j = run_cli({"test", "-o", "json", file});
    INFO(describe(j));
    json doc = json::parse(j.out);
    const json& first = doc["suites"][0]["cases"][0];
    REQUIRE(first["findings"].size() == 1);
    CHECK(first["findings"][0] == json{{"rule", "gpu-cap"}, {"action", "audit"},
                                       {"message", "pod requests 1 2/7 GPUs; tenant \"research\" allows 1 per pod"},
                                       {"field", first["findings"][0]["field"]}});
    CliRun x = run_cli({"test", "-o", "junit", file});
    CHECK(x.out.find("findings:\n  audit [gpu-cap] pod requests") != std::string::npos);
  }
}

TEST_CASE("test: bad messages regexes and JSON pointers are suite errors naming the case", "[cli][test][expect]") {
  TempDir dir;
  CliRun r = run_cli({"test", dir.file("s.yaml", suite(object_case("bad regex case", "research", "over-cap-pod.yaml",
                                                                    "      messages: ['GPUs (']\n")))});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("s.yaml:9:") != std::string::npos);
  CHECK(r.err.find("cases[0].expect.messages[0]: case \"bad regex case\": invalid regular expression /GPUs (/") !=
        std::string::npos);
  CliRun p = run_cli({"test", dir.file("p.yaml", suite(object_case("bad pointer", "research", "over-cap-pod.yaml",
                                                                    "      patched: {spec/x: 1}\n")))});
  INFO(describe(p));
  CHECK(p.code == 2);
  CHECK(p.err.find("cases[0].expect.patched[\"spec/x\"]: not a JSON pointer") != std::string::npos);
}

TEST_CASE("test: a case's namespace must be its object's", "[cli][test][expect]") {
  TempDir dir;
  const std::string file = dir.file(
      "s.yaml", suite(object_case("in the wrong place", "ml-platform", "over-cap-pod.yaml", "      allowed: true\n") +
                      object_case("same namespace is fine", "research", "over-cap-pod.yaml", "      allowed: true\n")));
  CliRun r = run_cli({"test", file});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("cases[0].namespace: case \"in the wrong place\": namespace \"ml-platform\" differs from the "
                   "object's metadata.namespace \"research\"") != std::string::npos);
  CHECK(r.err.find("same namespace is fine") == std::string::npos);
}

TEST_CASE("test: directories, several paths and --run", "[cli][test][dir]") {
  TempDir dir;
  const std::string b = dir.file("suites/b/second.yml", suite(kPassingExpectations));
  const std::string a = dir.file("suites/a.yaml", suite(object_case("denied pod", "research", "privileged-pod.yaml",
                                                                     "      denied: [privileged]\n")));
  dir.file("suites/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
  dir.file("suites/notes.txt", "kind: TestSuite\n");
  dir.file("suites/broken-other.yaml", "a: [\n");  // not YAML, not a suite: left alone
  SECTION("every suite under the directory, in path order") {
    CliRun r = run_cli({"test", (dir.path / "suites").string()});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("3 passed, 0 failed") != std::string::npos);
    const size_t at_a = r.out.find(a + " (policy"), at_b = r.out.find(b + " (policy");
    CHECK(at_a != std::string::npos);
    CHECK(at_b != std::string::npos);
    CHECK(at_a < at_b);
  }
  SECTION("a directory and a file") {
    CliRun r = run_cli({"test", (dir.path / "suites/b").string(), a});
    CHECK(r.code == 0);
    CHECK(r.out.find("3 passed, 0 failed") != std::string::npos);
  }
  SECTION("a directory without suites is an error") {
    dir.file("empty/readme.yaml", "just: data\n");
    CliRun r = run_cli({"test", (dir.path / "empty").string(), a});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("empty: no TestSuite file under it") != std::string::npos);
  }
  SECTION("--run selects cases by name") {
    CliRun r = run_cli({"test", "--run", "^(denied|over)", (dir.path / "suites").string()});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("2 passed, 0 failed") != std::string::npos);
    CHECK(r.out.find("patched") == std::string::npos);
    CliRun only_b = run_cli({"test", "-o", "json", "--run", "patched", (dir.path / "suites").string()});
    json doc = json::parse(only_b.out);
    REQUIRE(doc["suites"].size() == 1);  // a suite with no selected case is left out
    CHECK(doc["passed"] == 1);
    CliRun none = run_cli({"test", "--run", "no such case", (dir.path / "suites").string()});
    CHECK(none.code == 2);
    CHECK(none.err.find("selects no case") != std::string::npos);
    CHECK(run_cli({"test", "--run", "(", a}).code == 2);
  }
}

TEST_CASE("test: a suite that cannot be loaded is an error, never an empty green report", "[cli][test][dir]") {
  TempDir dir;
  const std::string good = dir.file("suites/good.yaml", suite(kPassingExpectations));
  const std::string bad = dir.file("suites/bad.yaml",
                                   "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\ncases: [\n");  // not YAML
  const std::string no_policy = dir.file(
      "suites/no-policy.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\npolicy: missing.yaml\ncases:\n" +
                                   object_case("x", "research", "over-cap-pod.yaml", "      allowed: true\n"));
  SECTION("text: exit 2 and the file named") {
    CliRun r = run_cli({"test", bad});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find(bad) != std::string::npos);
    CHECK(r.out.find(bad + ": ERROR") != std::string::npos);
  }
  SECTION("junit: an <error> testcase for each, the good suite still runs") {
    CliRun r = run_cli({"test", "-o", "junit", (dir.path / "suites").string()});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.out.find("<testsuites name=\"gpu-admission\" tests=\"4\" failures=\"0\" errors=\"2\"") != std::string::npos);
    CHECK(count_of(r.out, "<error message=") == 2);
    CHECK(r.out.find("<testcase name=\"load " + bad + "\"") != std::string::npos);
    CHECK(r.out.find("missing.yaml") != std::string::npos);
  }
  SECTION("json: the suite's error") {
    CliRun r = run_cli({"test", "-o", "json", good, bad});
    json doc = json::parse(r.out);
    CHECK(r.code == 2);
    CHECK(doc["errors"] == 1);
    CHECK(doc["suites"][1]["error"].get<std::string>().find("bad.yaml") != std::string::npos);
  }
}
