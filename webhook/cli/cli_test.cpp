// `gpu-admission test SUITE.yaml|DIR...`: run policy test suites, for CI pipelines. Flags,
// finding and loading the suites, selecting cases (--run), and the three reports. A suite
// that cannot be loaded (or whose policy is invalid) is never a silent pass: an error on
// stderr, an ERROR line / `error` / JUnit <error>, and exit code 2. The text report escapes what
// objects and suites say (webhook/io/terminal_text.h).
#include <cstdio>
#include <regex>

#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/junit.h"
#include "webhook/cli/suite_files.h"
#include "webhook/cli/test_suite.h"
#include "webhook/io/terminal_text.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kTestHelp = R"(Usage: gpu-admission test SUITE.yaml|DIR... [--output text|json|junit] [--run REGEX]

Runs TestSuite files: each case evaluates an object (a file, or inline) in a namespace and
compares the decision with its expectations (allowed; the exact denied / warned / audited
rule IDs; message patterns; labels, nodeSelector, container limits and JSON pointers of the
object after mutation). Paths are relative to the suite. A directory runs every TestSuite file
under it (recursively: *.yaml and *.yml whose kind is TestSuite, in path order; other files
are left alone); a directory without one is an error. A failed case prints what was expected,
what came instead, and the findings (action, rule, message) of its decision.

Flags:
  -o, --output FORMAT   text (default), json, or junit (JUnit XML on stdout, nothing else)
      --run REGEX       run only the cases whose name matches REGEX (ECMAScript, searched);
                        a REGEX that selects no case is an error

Exit codes: 0 every case passed, 1 some case failed, 2 unusable input (a suite, policy or
object file that cannot be read or is invalid; it is also reported as a JUnit <error>).
)";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "gpu-admission test: %s\n\n%s", message.c_str(), kTestHelp);
  return 2;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string finding_text(const CaseFinding& f) {
  return f.label + " [" + f.rule + "] " + f.message + " (at " + f.field + ")";
}

// Loads and runs every suite; a suite that cannot be loaded is a result with `error` set.
std::vector<SuiteResult> run_suites(const std::vector<std::string>& files, const std::regex* select,
                                    size_t& selected) {
  std::vector<SuiteResult> results;
  for (const auto& path : files) {
    SuiteLoad load = load_test_suite(path);
    for (const auto& e : load.errors) std::fprintf(stderr, "%s\n", terminal_text(e).c_str());
    if (!load.suite) {
      SuiteResult failed;
      failed.file = path;
      failed.error = load.errors.empty() ? path + ": cannot load the suite\n" : joined(load.errors);
      std::fprintf(stderr, "%s: the suite cannot be loaded\n", path.c_str());
      results.push_back(std::move(failed));
      continue;
    }
    const TestSuite suite = select ? select_cases(*load.suite, *select) : std::move(*load.suite);
    selected += suite.cases.size();
    if (suite.cases.empty()) continue;  // --run selected none of its cases
    results.push_back(run_test_suite(suite));
    if (results.back().error)
      std::fprintf(stderr, "%s%s: the suite's policy is invalid\n", results.back().error->c_str(), path.c_str());
  }
  return results;
}

JUnitCase junit_case(const SuiteResult& s, const CaseResult& c) {
  JUnitCase jc;
  jc.name = c.name;
  jc.classname = s.file;
  if (c.passed) return jc;
  jc.failed = true;
  jc.failure_message = c.failures.empty() ? "failed" : c.failures.front();
  jc.failure_text = joined(c.failures) + "findings:" + (c.findings.empty() ? " none\n" : "\n");
  for (const auto& f : c.findings) jc.failure_text += "  " + finding_text(f) + "\n";
  return jc;
}

void print_junit(const std::vector<SuiteResult>& results) {
  std::vector<JUnitSuite> suites;
  for (const auto& s : results) {
    JUnitSuite js{s.file, {}, {}};
    if (!s.policy_source.empty()) js.properties.emplace_back("policy", s.policy_source);
    if (s.error) {
      JUnitCase jc;
      jc.name = "load " + s.file;
      jc.classname = s.file;
      jc.errored = true;
      jc.failure_message = "the suite cannot be run: " + s.error->substr(0, s.error->find('\n'));
      jc.failure_text = *s.error;
      js.cases.push_back(std::move(jc));
    }
    for (const auto& c : s.cases) js.cases.push_back(junit_case(s, c));
    suites.push_back(std::move(js));
  }
  std::fputs(junit_xml(suites).c_str(), stdout);
}

void print_json(const std::vector<SuiteResult>& results, size_t passed, size_t failed, size_t errors) {
  Json doc = {{"suites", Json::array()}, {"passed", passed}, {"failed", failed}, {"errors", errors}};
  for (const auto& s : results) {
    Json cases = Json::array();
    for (const auto& c : s.cases) {
      Json findings = Json::array();
      for (const auto& f : c.findings)
        findings.push_back({{"rule", f.rule}, {"action", f.label}, {"message", f.message}, {"field", f.field}});
      cases.push_back({{"name", c.name}, {"passed", c.passed}, {"failures", c.failures}, {"findings", findings}});
    }
    Json suite = {{"file", s.file}, {"policy", s.policy_source}, {"cases", cases}};
    if (s.error) suite["error"] = *s.error;
    doc["suites"].push_back(std::move(suite));
  }
  std::printf("%s\n", to_json_text(doc, 2).c_str());
}

void print_text(const std::vector<SuiteResult>& results, size_t passed, size_t failed, size_t errors) {
  for (const auto& s : results) {
    if (s.error) {
      std::printf("%s: ERROR: the suite cannot be run (%s)\n", terminal_text(s.file).c_str(),
                  terminal_text(s.error->substr(0, s.error->find('\n'))).c_str());
      continue;
    }
    std::printf("%s (policy: %s)\n", terminal_text(s.file).c_str(), terminal_text(s.policy_source).c_str());
    for (const auto& c : s.cases) {
      std::printf("  %s  %s\n", c.passed ? "PASS" : "FAIL", terminal_text(c.name).c_str());
      if (c.passed) continue;
      for (const auto& f : c.failures) std::printf("        %s\n", terminal_text(f).c_str());
      std::printf("        findings:%s\n", c.findings.empty() ? " none" : "");
      for (const auto& f : c.findings) std::printf("          %s\n", terminal_text(finding_text(f)).c_str());
    }
  }
  std::printf("%zu passed, %zu failed", passed, failed);
  if (errors) std::printf(", %zu suite%s could not be run", errors, errors == 1 ? "" : "s");
  std::printf("\n");
}

}  // namespace

int run_test(const Args& args) {
  ParsedArgs parsed = parse_args(args, {{"--output", "-o"}, {"--run", ""}, {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kTestHelp, stdout);
    return 0;
  }
  if (parsed.error) return usage_error(*parsed.error);
  const std::string output = parsed.get("--output", "text");
  if (output != "text" && output != "json" && output != "junit")
    return usage_error("--output must be text, json or junit (got \"" + output + "\")");
  if (parsed.positional.empty()) return usage_error("no suite files given");
  std::optional<std::regex> select;
  if (parsed.has("--run")) {
    try {
      select.emplace(parsed.get("--run"), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return usage_error("--run: invalid regular expression /" + parsed.get("--run") + "/: " + e.what());
    }
  }

  SuiteFiles files = find_suite_files(parsed.positional);
  for (const auto& e : files.errors) std::fprintf(stderr, "gpu-admission test: %s\n", e.c_str());
  size_t selected = 0;
  std::vector<SuiteResult> results = run_suites(files.files, select ? &*select : nullptr, selected);

  size_t passed = 0, failed = 0, errors = 0;
  for (const auto& s : results) {
    errors += s.error.has_value();
    for (const auto& c : s.cases) (c.passed ? passed : failed)++;
  }
  const bool none_selected = select && selected == 0 && errors == 0 && files.errors.empty();
  if (none_selected) std::fprintf(stderr, "gpu-admission test: --run /%s/ selects no case\n", parsed.get("--run").c_str());

  if (output == "junit") print_junit(results);
  else if (output == "json") print_json(results, passed, failed, errors);
  else print_text(results, passed, failed, errors);
  if (errors || !files.errors.empty() || none_selected) return 2;
  return failed ? 1 : 0;
}

}  // namespace gpu_admission::webhook
