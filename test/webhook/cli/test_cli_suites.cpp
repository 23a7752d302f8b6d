// End-to-end tests of `gpu-admission test`: the real binary runs the examples suite,
// suites with wrong expectations, broken suites, and the JUnit / JSON outputs are read back.
#include <catch2/catch.hpp>

#include "webhook/cli/junit_test_support.h"
#include "webhook/cli/suites_test_support.h"
#include "webhook/cli/cli_test_support.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

// ------------------------------------------------------------------ suites written for these tests

// Expectations that are all wrong except one; each case's failure must name the field, the
// expected value and the value that came instead.
constexpr const char* kWrongSuite = R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: wrong allowed
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      allowed: false
  - name: wrong denied set
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect:
      allowed: false
      denied: [privileged, host-namespaces]
  - name: wrong label
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      labels: {gpu-admission.io/tenant: ml-platform}
  - name: wrong resources
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      resources: {trainer: {nvidia.com/gpu: "1"}}
  - name: this one is right
    namespace: research
    object: examples/manifests/wrong-pool-pod.yaml
    expect:
      allowed: false
      denied: [tenant-pool]
  - name: wrong nodeSelector
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      nodeSelector: {gpu.example.com/pool: h100-shared}
  - name: wrong warned set
    namespace: ml-platform
    object: examples/manifests/tenant-label-deployment.yaml
    expect:
      warned: []
  - name: wrong denied on an inline pod
    namespace: research
    inline:
      apiVersion: v1
      kind: Pod
      metadata: {name: p}
      spec:
        hostPID: true
        containers: [{name: main, image: busybox}]
    expect:
      denied: [privileged]
)";

// The text of stdout between the line naming `name` and the next case (or the summary).
std::string case_block(const std::string& out, const std::string& name, const std::vector<std::string>& all_names) {
  size_t at = out.find(name);
  if (at == std::string::npos) return {};
  size_t end = out.find("passed,", at);
  for (const auto& other : all_names) {
    if (other == name) continue;
    size_t o = out.find(other, at + name.size());
    if (o != std::string::npos && o < end) end = o;
  }
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The cases of kWrongSuite, in order.
const std::vector<std::string> kWrongCases = {"wrong allowed",     "wrong denied set",   "wrong label",
                                              "wrong resources",   "this one is right",  "wrong nodeSelector",
                                              "wrong warned set",  "wrong denied on an inline pod"};

// kWrongSuite as a file beside a copy of the examples.
struct WrongSuite {
  TempDir dir;
  std::string suite;
  WrongSuite() {
    copy_examples(dir);
    suite = dir.file("wrong.yaml", kWrongSuite);
  }
};

}  // namespace

TEST_CASE("test: the examples suite passes", "[cli][test]") {
  CliRun r = run_cli({"test", kExamples + "/suite.yaml"});
  INFO(describe(r));
  REQUIRE(r.code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex(R"((\d+) passed, 0 failed)")));
  CHECK(std::stoi(m[1]) >= 20);
  // Every rule and every mutation of the examples is exercised by the suite.
  const std::string suite = slurp(kExamples + "/suite.yaml");
  for (const char* rule : {"privileged", "host-namespaces", "gpu-device-access", "mps-adversarial",
                           "gpu-tolerations", "tenant-pool", "tenant-label", "mig-profile", "gpu-sharing"})
    CHECK(suite.find(rule) != std::string::npos);
  CHECK(suite.find("nvidia.com/mig-1g.10gb") != std::string::npos);   // mig-resources (mixed)
  CHECK(suite.find("A100-SXM4-40GB-MIG-3g.20gb") != std::string::npos);  // mig-resources (single)
  CHECK(suite.find("gpu-admission.io/tenant: research") != std::string::npos);  // tenant-labels
  CHECK(suite.find("nodeSelector: {gpu.example.com/pool: a100-secure}") != std::string::npos);  // pool-selector
}

TEST_CASE("test: the examples policy lints clean", "[cli][test]") {
  CliRun r = run_cli({"policy", "lint", kExamples + "/policy.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
}

TEST_CASE("test: wrong expectations fail case by case, saying expected and got", "[cli][test]") {
  WrongSuite wrong;
  const std::string& suite = wrong.suite;
  const std::vector<std::string>& names = kWrongCases;

  SECTION("text") {
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    CHECK(r.out.find("1 passed, 7 failed") != std::string::npos);
    for (const auto& name : names) {
      if (name == "this one is right") continue;
      std::string block = case_block(r.out, name, names);
      INFO("case: " << name << "\n" << block);
      CHECK(block.find("expected") != std::string::npos);
      CHECK(block.find("got") != std::string::npos);
    }
    std::string right = case_block(r.out, "this one is right", names);
    CHECK(right.find("expected") == std::string::npos);
    // The values themselves are shown.
    std::string allowed = case_block(r.out, "wrong allowed", names);
    CHECK(allowed.find("false") != std::string::npos);
    CHECK(allowed.find("true") != std::string::npos);
    std::string denied = case_block(r.out, "wrong denied set", names);
    CHECK(denied.find("host-namespaces") != std::string::npos);
    CHECK(denied.find("privileged") != std::string::npos);
    std::string label = case_block(r.out, "wrong label", names);
    CHECK(label.find("ml-platform") != std::string::npos);
    CHECK(label.find("research") != std::string::npos);
    std::string resources = case_block(r.out, "wrong resources", names);
    CHECK(resources.find("nvidia.com/gpu") != std::string::npos);
    std::string selector = case_block(r.out, "wrong nodeSelector", names);
    CHECK(selector.find("h100-shared") != std::string::npos);
    CHECK(selector.find("a100-secure") != std::string::npos);
    std::string warned = case_block(r.out, "wrong warned set", names);
    CHECK(warned.find("tenant-label") != std::string::npos);
    std::string inline_block = case_block(r.out, "wrong denied on an inline pod", names);
    CHECK(inline_block.find("host-namespaces") != std::string::npos);
  }

  SECTION("json") {
    CliRun r = run_cli({"test", "-o", "json", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    nlohmann::json doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["suites"].size() == 1);
    const auto& cases = doc["suites"][0]["cases"];
    REQUIRE(cases.size() == names.size());
    CHECK(doc["passed"] == 1);
    CHECK(doc["failed"] == 7);
    for (size_t i = 0; i < names.size(); ++i) {
      INFO(cases[i].dump());
      CHECK(cases[i]["name"] == names[i]);
      const bool right = names[i] == "this one is right";
      CHECK(cases[i]["passed"] == right);
      CHECK(cases[i]["failures"].is_array());
      CHECK(cases[i]["failures"].empty() == right);
      for (const auto& f : cases[i]["failures"]) {
        CHECK(f.get<std::string>().find("expected") != std::string::npos);
        CHECK(f.get<std::string>().find("got") != std::string::npos);
      }
    }
  }
}

TEST_CASE("test: wrong expectations fail case by case in JUnit, one testcase a case", "[cli][test]") {
  WrongSuite wrong;
  const std::string& suite = wrong.suite;
  const std::vector<std::string>& names = kWrongCases;

  SECTION("junit") {
    CliRun r = run_cli({"test", "--output", "junit", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    check_junit(r.out, 8, 7, 1);
    XmlDoc doc = parse_xml(r.out);
    auto suites = junit_suites(doc);
    REQUIRE(suites.size() == 1);
    for (const auto& text : suites[0].failure_texts) {
      INFO(text);
      CHECK(text.find("expected") != std::string::npos);
      CHECK(text.find("got") != std::string::npos);
    }
    // The testcases carry the case names.
    std::vector<std::string> got;
    for (const auto* tc : elements_named(doc, "testcase")) got.push_back(tc->attrs.at("name"));
    CHECK(got == names);
  }
}

TEST_CASE("test: a case that only some expectations miss still fails, and each miss is listed", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("partly.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: right allowed, wrong label and resources
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      allowed: true
      denied: []
      labels: {cost-center: cc-9999}
      resources: {trainer: {nvidia.com/mig-1g.10gb: "2"}}
)");
  CliRun r = run_cli({"test", "-o", "json", suite});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  auto doc = nlohmann::json::parse(r.out);
  const auto& failures = doc["suites"][0]["cases"][0]["failures"];
  REQUIRE(failures.size() == 2);
  CHECK(failures.dump().find("cc-9999") != std::string::npos);
  CHECK(failures.dump().find("cc-1042") != std::string::npos);
  CHECK(failures.dump().find("nvidia.com/mig-1g.10gb") != std::string::npos);
}

TEST_CASE("test: -o junit is one well-formed document whose counts match", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string wrong = dir.file("wrong.yaml", kWrongSuite);

  SECTION("a passing suite") {
    CliRun text = run_cli({"test", kExamples + "/suite.yaml"});
    std::smatch m;
    REQUIRE(std::regex_search(text.out, m, std::regex(R"((\d+) passed, 0 failed)")));
    const size_t n = std::stoul(m[1]);
    CliRun r = run_cli({"test", "-o", "junit", kExamples + "/suite.yaml"});
    INFO(describe(r));
    REQUIRE(r.code == 0);
    check_junit(r.out, n, 0, 1);
  }

  SECTION("two suites, one failing: one testsuite each") {
    CliRun r = run_cli({"test", kExamples + "/suite.yaml", wrong, "--output=junit"});  // flags after the files
    INFO(describe(r));
    REQUIRE(r.code == 1);
    CliRun text = run_cli({"test", kExamples + "/suite.yaml"});
    std::smatch m;
    REQUIRE(std::regex_search(text.out, m, std::regex(R"((\d+) passed, 0 failed)")));
    const size_t n = std::stoul(m[1]);
    check_junit(r.out, n + 8, 7, 2);
    auto suites = junit_suites(parse_xml(r.out));
    REQUIRE(suites.size() == 2);
    CHECK(suites[0].testcases == n);
    CHECK(suites[0].failures == 0);
    CHECK(suites[1].testcases == 8);
    CHECK(suites[1].failures == 7);
  }

  SECTION("names that need escaping stay well-formed") {
    const std::string suite = dir.file("escape.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: "<privileged> & \"quoted\" 'pods' are denied"
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: true}
)");
    CliRun r = run_cli({"test", "-o", "junit", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    check_junit(r.out, 1, 1, 1);
    XmlDoc doc = parse_xml(r.out);
    CHECK(elements_named(doc, "testcase").at(0)->attrs.at("name") == "<privileged> & \"quoted\" 'pods' are denied");
  }
}

TEST_CASE("test: -o json has the suites, cases and totals", "[cli][test]") {
  CliRun r = run_cli({"test", "-o", "json", kExamples + "/suite.yaml"});
  INFO(describe(r));
  REQUIRE(r.code == 0);
  nlohmann::json doc = nlohmann::json::parse(r.out);  // nothing but JSON on stdout
  REQUIRE(doc.is_object());
  REQUIRE(doc["suites"].is_array());
  REQUIRE(doc["suites"].size() == 1);
  const auto& s = doc["suites"][0];
  CHECK(s["file"].get<std::string>().find("suite.yaml") != std::string::npos);
  REQUIRE(s["cases"].is_array());
  CHECK(doc["passed"] == s["cases"].size());
  CHECK(doc["failed"] == 0);
  const std::string suite_text = slurp(kExamples + "/suite.yaml");
  CHECK(s["cases"].size() == count_of(suite_text, "\n  - name: "));
  for (const auto& c : s["cases"]) {
    CHECK(c["name"].is_string());
    CHECK(c["passed"] == true);
    CHECK(c["failures"] == nlohmann::json::array());
  }
}

TEST_CASE("test: bad flags and no suites exit 2", "[cli][test]") {
  CHECK(run_cli({"test"}).code == 2);
  CHECK(run_cli({"test", "-o", "xml", kExamples + "/suite.yaml"}).code == 2);
  CHECK(run_cli({"test", "--no-such-flag", kExamples + "/suite.yaml"}).code == 2);
  CHECK(run_cli({"test", "/no/such/suite.yaml"}).code == 2);
}

TEST_CASE("test: the XML check used above rejects broken documents", "[cli][test]") {
  CHECK(parse_xml("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/><c>t &amp; u</c></a>\n").ok);
  CHECK(!parse_xml("<a><b></a></b>").ok);               // crossed tags
  CHECK(!parse_xml("<a><b></a>").ok);                   // unclosed
  CHECK(!parse_xml("<a></a><a></a>").ok);               // two roots
  CHECK(!parse_xml("junk<a></a>").ok);                  // text outside the root
  CHECK(!parse_xml("<a x=1></a>").ok);                  // unquoted attribute
  CHECK(!parse_xml("<a x=\"<\"></a>").ok);              // raw < in an attribute
  CHECK(!parse_xml("<a>fish & chips</a>").ok);          // raw &
  CHECK(!parse_xml("<a x=\"1\"x=\"2\"></a>").ok);        // no space between attributes
  CHECK(!parse_xml("<a x=\"1\" x=\"2\"></a>").ok);       // duplicate attribute
  CHECK(!parse_xml("<a>\n").ok);
  CHECK(!parse_xml("").ok);
  CHECK(!parse_xml("\n<?xml version=\"1.0\"?><a/>").ok);  // declaration not first
}
