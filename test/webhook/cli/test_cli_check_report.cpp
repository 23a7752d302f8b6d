// End-to-end tests of `check`'s report features: the summary line, skipped objects folded into
// it, colours (on a pseudo-terminal, NO_COLOR), --only-denied, --fail-on, the default-namespace
// note, warn and audit findings in JUnit, and -o policyreport read back as YAML.
#include <catch2/catch.hpp>

#include "webhook/cli/check_report.h"
#include "webhook/cli/cli_test_support.h"
#include "webhook/cli/yaml_test_support.h"

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempFile;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/examples/policy.yaml";
const std::string kManifests = kSource + "/examples/manifests";
const std::string kData = kSource + "/test/data/cli";

std::string m(const std::string& file) { return kManifests + "/" + file; }

std::string last_line(const std::string& out) {
  std::string text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// Runs gpu-admission on a pseudo-terminal (stdout is a terminal), with NO_COLOR set or not.
CliRun run_on_terminal(const std::vector<std::string>& args, bool no_color) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(test_paths::binary()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (no_color) setenv("NO_COLOR", "1", 1);
    else unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    execv(test_paths::binary(), argv.data());
    _exit(127);
  }
  CliRun r;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The <testcase ...>...</testcase> (or self-closed) element whose name starts with `name`.
std::string testcase_xml(const std::string& xml, const std::string& name) {
  size_t at = xml.find("<testcase name=\"" + name);
  if (at == std::string::npos) return {};
  size_t self_close = xml.find("/>", at), open_end = xml.find('>', at);
  if (self_close != std::string::npos && self_close + 1 == open_end) return xml.substr(at, open_end + 1 - at);
  size_t end = xml.find("</testcase>", at);
  return xml.substr(at, end == std::string::npos ? std::string::npos : end + 11 - at);
}

}  // namespace

TEST_CASE("check: the text output ends with the summary line", "[cli][check][summary]") {
  SECTION("the examples and a multi-document file: every count") {
    std::vector<std::string> args = {"check", "-p", kPolicy, kManifests, kData + "/multi.yaml"};
    CliRun r = run_cli(args);
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(last_line(r.out) == "18 objects: 9 allowed, 9 denied; 1 warned, 1 audited; 1 skipped");
    CHECK(r.out.find("Service") == std::string::npos);  // the skipped Service is only counted
  }
  SECTION("one object is singular; zero counts are printed") {
    CliRun r = run_cli({"check", "-p", kPolicy, m("training-pod.yaml")});
    INFO(describe(r));
    CHECK(last_line(r.out) == "1 object: 1 allowed, 0 denied; 0 warned, 0 audited; 0 skipped");
  }
  SECTION("a workload judged template by template counts once, denied when one template is") {
    CliRun r = run_cli({"check", "-p", kPolicy, kSource + "/examples/ml/pytorchjob.yaml"});
    INFO(describe(r));
    CHECK(r.out.find("[spec.pytorchReplicaSpecs.Master.template]: ALLOWED") != std::string::npos);
    CHECK(last_line(r.out) == "1 object: 0 allowed, 1 denied; 0 warned, 0 audited; 0 skipped");
  }
  SECTION("an object that cannot be judged adds an error count") {
    TempFile bad("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n");
    CliRun r = run_cli({"check", "-p", kPolicy, bad.path.string()});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(last_line(r.out) == "0 objects: 0 allowed, 0 denied; 0 warned, 0 audited; 0 skipped; 1 error");
  }
  SECTION("-o json carries the same counts, and the skipped objects") {
    CliRun r = run_cli({"check", "-p", kPolicy, "-o", "json", kManifests, kData + "/multi.yaml"});
    INFO(describe(r));
    json doc = json::parse(r.out);
    CHECK(doc["summary"] == json{{"objects", 18}, {"allowed", 9}, {"denied", 9}, {"warned", 1},
                                 {"audited", 1},  {"skipped", 1}, {"errors", 0}});
    REQUIRE(doc["skipped"].size() == 1);
    CHECK(doc["skipped"][0]["kind"] == "Service");
  }
}

TEST_CASE("check: --only-denied prints denied objects, the summary counts all", "[cli][check][summary]") {
  const std::vector<std::string> files = {m("training-pod.yaml"), m("privileged-pod.yaml"),
                                          m("tenant-label-deployment.yaml")};
  std::vector<std::string> args = {"check", "-p", kPolicy, "--only-denied"};
  args.insert(args.end(), files.begin(), files.end());
  CliRun r = run_cli(args);
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("DENIED") != std::string::npos);
  CHECK(r.out.find("ALLOWED") == std::string::npos);
  CHECK(last_line(r.out) == "3 objects: 2 allowed, 1 denied; 1 warned, 0 audited; 0 skipped");

  std::vector<std::string> json_args = {"check", "-p", kPolicy, "-o", "json", "--only-denied"};
  json_args.insert(json_args.end(), files.begin(), files.end());
  CliRun j = run_cli(json_args);
  json doc = json::parse(j.out);
  REQUIRE(doc["results"].size() == 1);
  CHECK(doc["results"][0]["allowed"] == false);
  CHECK(doc["summary"]["objects"] == 3);
}

TEST_CASE("check: --fail-on", "[cli][check][summary]") {
  const std::string warned = m("tenant-label-deployment.yaml"), audited = m("over-cap-pod.yaml");
  CHECK(run_cli({"check", "-p", kPolicy, warned}).code == 0);
  CHECK(run_cli({"check", "-p", kPolicy, "--fail-on", "deny", warned}).code == 0);
  CHECK(run_cli({"check", "-p", kPolicy, "--fail-on", "warn", warned}).code == 1);
  CHECK(run_cli({"check", "-p", kPolicy, "--fail-on=warn", "-o", "junit", warned}).code == 1);
  CHECK(run_cli({"check", "-p", kPolicy, "--fail-on", "warn", audited}).code == 0);  // audit never fails
  CHECK(run_cli({"check", "-p", kPolicy, "--fail-on", "warn", m("privileged-pod.yaml")}).code == 1);
  CliRun bad = run_cli({"check", "-p", kPolicy, "--fail-on", "audit", warned});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--fail-on must be deny, warn or none") != std::string::npos);
}

TEST_CASE("check: verdicts are coloured on a terminal only, and NO_COLOR is honoured", "[cli][check][colour]") {
  const std::vector<std::string> args = {"check", "-p", kPolicy, m("training-pod.yaml"), m("privileged-pod.yaml"),
                                         m("tenant-label-deployment.yaml")};
  SECTION("a terminal gets green, red and yellow") {
    CliRun r = run_on_terminal(args, false);
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(r.out.find("\033[32mALLOWED\033[0m") != std::string::npos);
    CHECK(r.out.find("\033[31mDENIED\033[0m") != std::string::npos);
    CHECK(r.out.find("\033[31mdeny ") != std::string::npos);
    CHECK(r.out.find("\033[33mwarn ") != std::string::npos);
  }
  SECTION("NO_COLOR on a terminal: no escape codes") {
    CliRun r = run_on_terminal(args, true);
    INFO(r.out);
    CHECK(r.out.find("DENIED") != std::string::npos);
    CHECK(r.out.find('\033') == std::string::npos);
  }
  SECTION("a pipe or file: no escape codes; --color always forces them") {
    CliRun r = run_cli(args);
    CHECK(r.out.find('\033') == std::string::npos);
    std::vector<std::string> always = args;
    always.insert(always.begin() + 1, "--color=always");
    CHECK(run_cli(always).out.find("\033[31mDENIED") != std::string::npos);
    always[1] = "--color=sometimes";
    CHECK(run_cli(always).code == 2);
  }
  SECTION("the decision, without a terminal") {
    using gpu_admission::webhook::colour_wanted;
    CHECK(colour_wanted("auto", true, nullptr, "xterm") == true);
    CHECK(colour_wanted("auto", false, nullptr, "xterm") == false);
    CHECK(colour_wanted("auto", true, "", "xterm") == false);  // set, even empty
    CHECK(colour_wanted("auto", true, nullptr, "dumb") == false);
    CHECK(colour_wanted("always", false, "1", "dumb") == true);
    CHECK(colour_wanted("never", true, nullptr, nullptr) == false);
    CHECK(!colour_wanted("yes", true, nullptr, nullptr).has_value());
  }
}

TEST_CASE("check: an object without a namespace says which one it was judged in", "[cli][check][summary]") {
  TempFile pod("apiVersion: v1\nkind: Pod\nmetadata: {name: loose}\nspec: {containers: [{name: c, image: x}]}\n");
  CliRun r = run_cli({"check", "-p", kPolicy, "-n", "research", pod.path.string(), m("training-pod.yaml")});
  INFO(describe(r));
  CHECK(r.out.find("note: the object names no namespace: judged in namespace \"research\"") != std::string::npos);
  CHECK(r.out.find("judged in namespace \"default\"") == std::string::npos);
  // Only once: the pod with its own namespace gets no note.
  CHECK(r.out.find("note:") == r.out.rfind("note:"));
  CliRun d = run_cli({"check", "-p", kPolicy, pod.path.string()});
  CHECK(d.out.find("judged in namespace \"default\"") != std::string::npos);
  json doc = json::parse(run_cli({"check", "-p", kPolicy, "-o", "json", pod.path.string(), m("training-pod.yaml")}).out);
  CHECK(doc["results"][0]["namespaceDefaulted"] == true);
  CHECK(doc["results"][1]["namespaceDefaulted"] == false);
}

TEST_CASE("check: -o junit carries warn and audit findings as system-out", "[cli][check][junit]") {
  CliRun r = run_cli({"check", "-p", kPolicy, "-o", "junit", m("tenant-label-deployment.yaml"), m("over-cap-pod.yaml"),
                      m("privileged-pod.yaml"), m("training-pod.yaml")});
  INFO(describe(r));
  CHECK(r.code == 1);
  const std::string warned = testcase_xml(r.out, "Deployment ml-platform/label-hopper");
  INFO(warned);
  CHECK(warned.find("<system-out>warn [tenant-label] ") != std::string::npos);
  CHECK(warned.find("<failure") == std::string::npos);
  const std::string audited = testcase_xml(r.out, "Pod research/big-sweep");
  CHECK(audited.find("<system-out>audit [gpu-cap] pod requests 1 2/7 GPUs") != std::string::npos);
  const std::string denied = testcase_xml(r.out, "Pod research/debug-shell");
  CHECK(denied.find("<failure") != std::string::npos);
  CHECK(denied.find("<system-out>") == std::string::npos);
  const std::string clean = testcase_xml(r.out, "Pod research-nlp/bert-finetune");
  CHECK(clean.find("/>") != std::string::npos);
  CHECK(clean.find("system-out") == std::string::npos);
}

TEST_CASE("check: -o policyreport, one PolicyReport per namespace", "[cli][check][policyreport]") {
  CliRun r = run_cli({"check", "-p", kPolicy, "-o", "policyreport", kManifests});
  INFO(describe(r));
  CHECK(r.code == 1);
  std::vector<json> docs = cli_test::load_yaml_docs(r.out);
  std::map<std::string, json> by_ns;
  for (const auto& d : docs) {
    CHECK(d["apiVersion"] == "wgpolicyk8s.io/v1alpha2");
    CHECK(d["kind"] == "PolicyReport");
    CHECK(d["metadata"]["name"] == "gpu-admission");
    CHECK(by_ns.count(d["metadata"]["namespace"]) == 0);
    by_ns[d["metadata"]["namespace"]] = d;
    size_t fails = 0, warns = 0;
    for (const auto& res : d["results"]) (res["result"] == "fail" ? fails : warns)++;
    CHECK(d["summary"]["fail"] == fails);  // nothing cut: the results are the summary's
    CHECK(d["summary"]["warn"] == warns);
  }
  REQUIRE(by_ns.count("research"));
  REQUIRE(by_ns.count("ml-platform"));
  REQUIRE(by_ns.count("gpu-operator"));
  CHECK(by_ns["gpu-operator"]["summary"]["skip"] == 1);  // the exempt DaemonSet
  CHECK(by_ns["gpu-operator"]["results"].empty());

  const json& ml = by_ns["ml-platform"];
  bool host_ns = false, label_warn = false;
  for (const auto& res : ml["results"]) {
    CHECK(res["policy"] == "gpu-admission");
    REQUIRE(res["resources"].size() == 1);
    CHECK(res["resources"][0]["namespace"] == "ml-platform");
    CHECK(res["properties"].contains("field"));
    if (res["rule"] == "host-namespaces") {
      host_ns = true;
      CHECK(res["result"] == "fail");
      CHECK(res["severity"] == "high");
      CHECK(res["resources"][0] == json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", "ml-platform"},
                                        {"name", "node-profiler"}});
    }
    if (res["rule"] == "tenant-label") {
      label_warn = true;
      CHECK(res["result"] == "warn");
      CHECK(res["severity"] == "medium");
      CHECK(res["resources"][0]["kind"] == "Deployment");
      CHECK(res["properties"]["action"] == "warn");
    }
  }
  CHECK(host_ns);
  CHECK(label_warn);
  bool cap_audit = false, wrong_pool = false;
  for (const auto& res : by_ns["research"]["results"]) {
    cap_audit = cap_audit || (res["rule"] == "gpu-cap" && res["result"] == "warn" && res["properties"]["action"] == "audit");
    wrong_pool = wrong_pool || (res["rule"] == "tenant-pool" && res["result"] == "fail" && res["severity"] == "medium");
  }
  CHECK(cap_audit);
  CHECK(wrong_pool);
  CHECK(by_ns["research"]["summary"]["pass"].get<int>() >= 1);

  SECTION("uid when the object has one; --only-denied keeps fail results only") {
    TempFile pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml-platform, uid: 1234-abcd}\n"
                 "spec: {hostPID: true, containers: [{name: c, image: x}]}\n");
    CliRun one = run_cli({"check", "-p", kPolicy, "-o", "policyreport", "--only-denied", pod.path.string(),
                          m("tenant-label-deployment.yaml")});
    std::vector<json> reports = cli_test::load_yaml_docs(one.out);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0]["summary"]["warn"] == 1);  // counted
    REQUIRE(reports[0]["results"].size() == 1);
    CHECK(reports[0]["results"][0]["result"] == "fail");
    CHECK(reports[0]["results"][0]["resources"][0]["uid"] == "1234-abcd");
  }
}

TEST_CASE("check: -o openreports, the same reports as OpenReports Reports", "[cli][check][policyreport]") {
  const CliRun wg = run_cli({"check", "-p", kPolicy, "-o", "policyreport", kManifests});
  const CliRun open = run_cli({"check", "-p", kPolicy, "-o", "openreports", kManifests});
  INFO(describe(open));
  CHECK(open.code == wg.code);
  std::vector<json> open_docs = cli_test::load_yaml_docs(open.out);
  std::vector<json> wg_docs = cli_test::load_yaml_docs(wg.out);
  REQUIRE(open_docs.size() == wg_docs.size());
  REQUIRE(open_docs.size() >= 3);
  for (size_t i = 0; i < open_docs.size(); ++i) {
    CHECK(open_docs[i]["apiVersion"] == "openreports.io/v1alpha1");
    CHECK(open_docs[i]["kind"] == "Report");
    CHECK(open_docs[i]["source"] == "gpu-admission");
    for (json* d : {&open_docs[i], &wg_docs[i]}) {
      d->erase("apiVersion");
      d->erase("kind");
      d->erase("source");
    }
    CHECK(open_docs[i] == wg_docs[i]);
  }
  const CliRun bad = run_cli({"check", "-p", kPolicy, "-o", "openreport", kManifests});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("policyreport or openreports") != std::string::npos);
}
