// `gpu-admission test SUITE.yaml...`: run policy test suites, for CI pipelines.
#include <cstdio>

#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/junit.h"
#include "webhook/cli/test_suite.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kTestHelp = R"(Usage: gpu-admission test SUITE.yaml... [--output text|json|junit]

Runs TestSuite files: each case evaluates an object (a file, or inline) in a namespace and
compares the decision with its expectations (allowed, the exact denied / warned rule IDs,
labels, nodeSelector and container limits after mutation). Paths are relative to the suite.

Flags:
  -o, --output FORMAT   text (default), json, or junit (JUnit XML on stdout, nothing else)

Exit codes: 0 every case passed, 1 some case failed, 2 unusable input (a suite, policy or
object file that cannot be read or is invalid).
)";

}  // namespace

int run_test(const Args& args) {
  ParsedArgs parsed = parse_args(args, {{"--output", "-o"}, {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kTestHelp, stdout);
    return 0;
  }
  if (parsed.error) {
    std::fprintf(stderr, "gpu-admission test: %s\n\n%s", parsed.error->c_str(), kTestHelp);
    return 2;
  }
  const std::string output = parsed.get("--output", "text");
  if (output != "text" && output != "json" && output != "junit") {
    std::fprintf(stderr, "gpu-admission test: --output must be text, json or junit (got \"%s\")\n", output.c_str());
    return 2;
  }
  if (parsed.positional.empty()) {
    std::fprintf(stderr, "gpu-admission test: no suite files given\n\n%s", kTestHelp);
    return 2;
  }

  std::vector<SuiteResult> results;
  bool unusable = false;
  for (const auto& path : parsed.positional) {
    SuiteLoad load = load_test_suite(path);
    for (const auto& e : load.errors) std::fprintf(stderr, "%s\n", e.c_str());
    if (!load.suite) {
      unusable = true;
      continue;
    }
    results.push_back(run_test_suite(*load.suite));
    if (results.back().error) {
      std::fprintf(stderr, "%s", results.back().error->c_str());
      std::fprintf(stderr, "%s: the suite's policy is invalid\n", path.c_str());
      unusable = true;
    }
  }

  size_t passed = 0, failed = 0;
  for (const auto& s : results)
    for (const auto& c : s.cases) (c.passed ? passed : failed)++;

  if (output == "junit") {
    std::vector<JUnitSuite> suites;
    for (const auto& s : results) {
      JUnitSuite js{s.file, {}};
      for (const auto& c : s.cases) {
        JUnitCase jc{c.name, s.file, !c.passed, false, {}, {}};
        if (!c.passed) {
          jc.failure_message = c.failures.front();
          for (const auto& f : c.failures) jc.failure_text += f + "\n";
        }
        js.cases.push_back(std::move(jc));
      }
      suites.push_back(std::move(js));
    }
    std::fputs(junit_xml(suites).c_str(), stdout);
  } else if (output == "json") {
    Json doc = {{"suites", Json::array()}, {"passed", passed}, {"failed", failed}};
    for (const auto& s : results) {
      Json cases = Json::array();
      for (const auto& c : s.cases) cases.push_back({{"name", c.name}, {"passed", c.passed}, {"failures", c.failures}});
      doc["suites"].push_back({{"file", s.file}, {"policy", s.policy_source}, {"cases", cases}});
    }
    std::printf("%s\n", to_json_text(doc, 2).c_str());
  } else {
    for (const auto& s : results) {
      std::printf("%s (policy: %s)\n", s.file.c_str(), s.policy_source.c_str());
      for (const auto& c : s.cases) {
        std::printf("  %s  %s\n", c.passed ? "PASS" : "FAIL", c.name.c_str());
        for (const auto& f : c.failures) std::printf("        %s\n", f.c_str());
      }
    }
    std::printf("%zu passed, %zu failed\n", passed, failed);
  }
  if (unusable) return 2;
  return failed ? 1 : 0;
}

}  // namespace gpu_admission::webhook
