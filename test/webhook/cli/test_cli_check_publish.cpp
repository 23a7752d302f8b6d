// End-to-end tests of `check` in pipelines that publish what it found: `--fail-on none` (exit 0
// whatever is found, 2 still for unusable input; a PolicyReport pipe under `set -o pipefail`),
// `--only-denied` with `--fail-on warn` (what fails the run is listed), and the policy judged
// with named in text, JSON and JUnit (and by `test` per suite).
#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"
#include "webhook/cli/yaml_test_support.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempDir;
using cli_test::TempFile;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/examples/policy.yaml";
const std::string kManifests = kSource + "/examples/manifests";

std::string m(const std::string& file) { return kManifests + "/" + file; }

// The examples: one clean, one denied (privileged), one warned (tenant-label), one audited (gpu-cap).
const std::string kClean = m("training-pod.yaml"), kDenied = m("privileged-pod.yaml"),
                  kWarned = m("tenant-label-deployment.yaml"), kAudited = m("over-cap-pod.yaml");
const std::string kCleanTitle = "Pod research-nlp/bert-finetune", kDeniedTitle = "Pod research/debug-shell",
                  kWarnedTitle = "Deployment ml-platform/label-hopper", kAuditedTitle = "Pod research/big-sweep";

std::vector<std::string> lines_of(const std::string& out) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    lines.push_back(out.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A shell pipeline's exit status under `set -o pipefail` (the binary is $GPA).
int pipeline_status(const std::string& pipeline) {
  const std::string command = "GPA='" + std::string(test_paths::binary()) + "' bash -c 'set -o pipefail; " + pipeline + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

std::vector<std::string> check_args(std::vector<std::string> flags, const std::vector<std::string>& files) {
  std::vector<std::string> args = {"check", "-p", kPolicy};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), files.begin(), files.end());
  return args;
}

}  // namespace

TEST_CASE("check --fail-on none: exit 0 whatever is found, 2 still for unusable input", "[cli][check][fail-on]") {
  SECTION("denied, warned and audited objects exit 0, and are reported as ever") {
    CliRun r = run_cli(check_args({"--fail-on", "none"}, {kClean, kDenied, kWarned, kAudited}));
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(has(r.out, kDeniedTitle + ": DENIED"));
    CHECK(lines_of(r.out).back() == "4 objects: 3 allowed, 1 denied; 1 warned, 1 audited; 0 skipped");
    CHECK(run_cli(check_args({"--fail-on=none", "-o", "json"}, {kDenied})).code == 0);
    CHECK(run_cli(check_args({"--fail-on", "none", "-o", "junit"}, {kDenied, kWarned})).code == 0);
    CHECK(run_cli(check_args({"--fail-on", "none", "--only-denied"}, {kDenied})).code == 0);
    // The same inputs without it: 1, so the flag is what makes the difference.
    CHECK(run_cli(check_args({}, {kDenied})).code == 1);
    CHECK(run_cli(check_args({"--fail-on", "deny"}, {kDenied})).code == 1);
  }
  SECTION("-o policyreport piped on under set -o pipefail succeeds, with the denials in the reports") {
    TempDir out;
    const std::string reports = (out.path / "reports.yaml").string();
    CHECK(pipeline_status("\"$GPA\" check -p " + kPolicy + " -o policyreport --fail-on none " + kManifests +
                          " | cat > " + reports) == 0);
    CHECK(pipeline_status("\"$GPA\" check -p " + kPolicy + " -o policyreport " + kManifests + " | cat > /dev/null") == 1);
    bool fail_result = false;
    for (const auto& doc : cli_test::load_yaml_docs(cli_test::slurp(reports))) {
      CHECK(doc["kind"] == "PolicyReport");
      for (const auto& res : doc["results"]) fail_result = fail_result || res["result"] == "fail";
    }
    CHECK(fail_result);
  }
  SECTION("unusable input is 2 whatever --fail-on says") {
    TempFile bad("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n");
    CliRun undecodable = run_cli(check_args({"--fail-on", "none"}, {bad.path.string(), kDenied}));
    INFO(describe(undecodable));
    CHECK(undecodable.code == 2);
    CHECK(run_cli(check_args({"--fail-on", "none"}, {kSource + "/no/such/file.yaml"})).code == 2);
    TempFile not_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n");
    CHECK(run_cli(check_args({"--fail-on", "none", "-o", "policyreport"}, {not_yaml.path.string()})).code == 2);
    TempFile policy("apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nspec: {nonsense: 1}\n");
    CHECK(run_cli({"check", "-p", policy.path.string(), "--fail-on", "none", kClean}).code == 2);
  }
  SECTION("other words are refused; the usage names the three") {
    CliRun bad = run_cli(check_args({"--fail-on", "never"}, {kClean}));
    CHECK(bad.code == 2);
    CHECK(has(bad.err, "--fail-on must be deny, warn or none (got \"never\")"));
    CliRun help = run_cli({"check", "--help"});
    CHECK(help.code == 0);
    CHECK(has(help.out, "[--fail-on deny|warn|none]"));
    CHECK(has(help.out, "none: exit 0"));
  }
}

TEST_CASE("check --only-denied --fail-on warn lists the warned objects too", "[cli][check][fail-on]") {
  const std::vector<std::string> all = {kClean, kDenied, kWarned, kAudited};
  SECTION("text: what fails the run is listed; clean and audit-only objects are not") {
    CliRun r = run_cli(check_args({"--only-denied", "--fail-on", "warn"}, all));
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(has(r.out, kDeniedTitle + ": DENIED"));
    CHECK(has(r.out, kWarnedTitle + ": ALLOWED"));
    CHECK(has(r.out, "warn  [tenant-label]"));
    CHECK(!has(r.out, kCleanTitle));
    CHECK(!has(r.out, kAuditedTitle));
    CHECK(lines_of(r.out).back() == "4 objects: 3 allowed, 1 denied; 1 warned, 1 audited; 0 skipped");
  }
  SECTION("only a warned object: exit 1 with the object to read, not just the summary") {
    CliRun r = run_cli(check_args({"--only-denied", "--fail-on=warn"}, {kWarned, kClean}));
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(has(r.out, kWarnedTitle + ": ALLOWED"));
    CHECK(has(r.out, "[tenant-label]"));
    CHECK(!has(r.out, kCleanTitle));
  }
  SECTION("with --fail-on deny (the default) or none, denied objects only") {
    for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
             {"--only-denied"}, {"--only-denied", "--fail-on", "deny"}, {"--only-denied", "--fail-on", "none"}}) {
      CliRun r = run_cli(check_args(flags, all));
      INFO(describe(r));
      CHECK(has(r.out, kDeniedTitle + ": DENIED"));
      CHECK(!has(r.out, kWarnedTitle));
      CHECK(!has(r.out, kAuditedTitle));
    }
    CliRun warned_only = run_cli(check_args({"--only-denied"}, {kWarned}));
    CHECK(warned_only.code == 0);
    CHECK(!has(warned_only.out, kWarnedTitle));
  }
  SECTION("json, junit and policyreport keep the same objects") {
    json doc = json::parse(run_cli(check_args({"--only-denied", "--fail-on", "warn", "-o", "json"}, all)).out);
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["name"] == "debug-shell");
    CHECK(doc["results"][1]["name"] == "label-hopper");
    CHECK(doc["summary"]["objects"] == 4);

    CliRun x = run_cli(check_args({"--only-denied", "--fail-on", "warn", "-o", "junit"}, all));
    INFO(x.out);
    CHECK(x.code == 1);
    CHECK(has(x.out, "tests=\"2\" failures=\"1\""));
    CHECK(has(x.out, "<testcase name=\"" + kWarnedTitle));
    CHECK(has(x.out, "<system-out>warn [tenant-label] "));
    CHECK(!has(x.out, kAuditedTitle));
    CHECK(!has(x.out, kCleanTitle));

    auto rules = [&](const std::vector<std::string>& flags) {
      std::vector<std::string> out;
      for (const auto& report : cli_test::load_yaml_docs(run_cli(check_args(flags, all)).out))
        for (const auto& res : report["results"]) out.push_back(res["rule"].get<std::string>() + ":" + res["result"].get<std::string>());
      std::sort(out.begin(), out.end());
      return out;
    };
    const auto warn_too = rules({"--only-denied", "--fail-on", "warn", "-o", "policyreport"});
    CHECK(std::count(warn_too.begin(), warn_too.end(), "tenant-label:warn") == 1);
    CHECK(std::count(warn_too.begin(), warn_too.end(), "gpu-cap:warn") == 0);  // audit findings fail nothing
    CHECK(std::count(warn_too.begin(), warn_too.end(), "privileged:fail") == 1);
    const auto fails = rules({"--only-denied", "-o", "policyreport"});
    CHECK(std::count(fails.begin(), fails.end(), "tenant-label:warn") == 0);
    CHECK(std::count(fails.begin(), fails.end(), "privileged:fail") == 1);
  }
}

TEST_CASE("check names the policy it judged with", "[cli][check][policy-name]") {
  SECTION("text: the line before the summary, which stays the last line") {
    CliRun r = run_cli(check_args({}, {kClean}));
    INFO(describe(r));
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 2);
    CHECK(lines[lines.size() - 2] == "policy: " + kPolicy);
    CHECK(lines.back() == "1 object: 1 allowed, 0 denied; 0 warned, 0 audited; 0 skipped");
    CHECK(lines_of(run_cli(check_args({"--only-denied"}, {kClean})).out).front() == "policy: " + kPolicy);
  }
  SECTION("the path as given, relative to where check runs") {
    CliRun r = run_cli({"check", "--policy", "examples/policy.yaml", "examples/manifests/training-pod.yaml"}, kSource);
    INFO(describe(r));
    CHECK(has(r.out, "\npolicy: examples/policy.yaml\n1 object: "));
  }
  SECTION("without --policy: the built-in default") {
    CliRun r = run_cli({"check", kClean});
    INFO(describe(r));
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 2);
    CHECK(lines[lines.size() - 2] == "policy: built-in default");
    CHECK(json::parse(run_cli({"check", "-o", "json", kClean}).out)["policy"] == "built-in default");
  }
  SECTION("a ConfigMap names its key; standard input is named so") {
    const std::string cm = kSource + "/deploy/policy-configmap.yaml";
    CliRun r = run_cli({"check", "-p", cm, kClean});
    INFO(describe(r));
    CHECK(has(r.out, "\npolicy: " + cm + " (ConfigMap gpu-admission-policy, key policy.yaml)\n"));
    CliRun in = run_cli({"check", "-p", "-", kClean}, "", kPolicy);
    INFO(describe(in));
    CHECK(has(in.out, "\npolicy: standard input\n"));
  }
  SECTION("-o json: a top-level policy beside results") {
    json doc = json::parse(run_cli(check_args({"-o", "json"}, {kClean, kDenied})).out);
    CHECK(doc["policy"] == kPolicy);
    CHECK(doc["results"].size() == 2);
  }
  SECTION("-o junit: a property of the testsuite, before its testcases") {
    CliRun r = run_cli(check_args({"-o", "junit"}, {kClean}));
    INFO(r.out);
    const size_t property = r.out.find("<properties>\n      <property name=\"policy\" value=\"" + kPolicy + "\"/>\n    </properties>");
    REQUIRE(property != std::string::npos);
    CHECK(property > r.out.find("<testsuite name=\"gpu-admission check\""));
    CHECK(property < r.out.find("<testcase "));
    CHECK(has(run_cli({"check", "-o", "junit", kClean}).out, "<property name=\"policy\" value=\"built-in default\"/>"));
  }
  SECTION("a path with XML's special characters is escaped in JUnit and kept in JSON") {
    TempDir dir;
    const std::string odd = dir.file("a&b <policy>.yaml", cli_test::slurp(kPolicy));
    CliRun x = run_cli({"check", "-p", odd, "-o", "junit", kClean});
    INFO(x.out);
    CHECK(has(x.out, "a&amp;b &lt;policy&gt;.yaml\"/>"));
    CHECK(json::parse(run_cli({"check", "-p", odd, "-o", "json", kClean}).out)["policy"] == odd);
  }
}

TEST_CASE("test names each suite's policy in text, JSON and JUnit", "[cli][test][policy-name]") {
  const std::string own = kSource + "/examples/suite.yaml", builtin = kSource + "/examples/dra/suite.yaml";
  CliRun t = run_cli({"test", own, builtin});
  INFO(describe(t));
  CHECK(t.code == 0);
  CHECK(has(t.out, own + " (policy: " + kSource + "/examples/policy.yaml)"));
  CHECK(has(t.out, builtin + " (policy: built-in default)"));

  json doc = json::parse(run_cli({"test", "-o", "json", own, builtin}).out);
  REQUIRE(doc["suites"].size() == 2);
  CHECK(doc["suites"][0]["policy"] == kSource + "/examples/policy.yaml");
  CHECK(doc["suites"][1]["policy"] == "built-in default");

  CliRun x = run_cli({"test", "-o", "junit", own, builtin});
  CHECK(has(x.out, "<property name=\"policy\" value=\"" + kSource + "/examples/policy.yaml\"/>"));
  CHECK(has(x.out, "<property name=\"policy\" value=\"built-in default\"/>"));
}
