// What a tenant wrote, as the CLI prints it. Long values: `check -o json` of a pod whose container
// name, env value, annotation key and hostPath are 1.4 MB each has messages of a few hundred bytes
// (policy/base/quoted_value.h), and so has the text output. Terminal escapes: a pod whose name,
// container name and annotation hold "\x1b[2K\rPod x: ALLOWED" and U+202E is printed by check,
// test (a suite case) and audit (a file) in text with no raw ESC, CR or bidi control, their
// escaped forms visible (webhook/io/terminal_text.h); -o json keeps the name exactly.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "test_paths.h"
#include "webhook/cli/cli_test_support.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempDir;
using nlohmann::json;

const std::string kPolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";

// The forging payload: erase the line, go back to its start, write a verdict; then reverse what follows.
const std::string kForge = "x\x1b[2K\rPod x: ALLOWED\u202e";
const std::string kForgeShown = "x\\x1b[2K\\x0dPod x: ALLOWED\\u202e";

// A privileged pod of tenant alpha whose name, container name and device annotation key carry kForge.
json forged_pod() {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", kForge},
            {"namespace", "team-alpha"},
            {"uid", "u-1"},
            {"annotations", {{"cdi.k8s.io/" + kForge, "nvidia.com/gpu=all"}}}}},
          {"spec",
           {{"containers", json::array({{{"name", kForge}, {"image", "i"}, {"securityContext", {{"privileged", true}}}}})}}}};
}

// No raw byte of the payload reaches a terminal, and its escaped form is there instead.
void check_escaped(const std::string& text) {
  INFO(text);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("\u202e") == std::string::npos);
  CHECK(text.find(kForgeShown) != std::string::npos);
}

}  // namespace

TEST_CASE("cli check: 1.4 MB values are quoted bounded, in JSON and in text", "[cli][check][bounded]") {
  const std::string big(1400000, 'a');
  const std::string shown = std::string(256, 'a') + "\u2026\" (1.4 MB)";
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "big"}, {"namespace", "team-alpha"}, {"annotations", {{"cdi.k8s.io/" + big, "x"}}}}},
              {"spec",
               {{"containers", json::array({{{"name", big},
                                             {"image", "i"},
                                             {"securityContext", {{"privileged", true}}},
                                             {"env", {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", big}}}}}})},
                {"volumes", json::array({{{"name", "host"}, {"hostPath", {{"path", "/dev/nvidia" + big}}}}})}}}};
  TempDir dir;
  const std::string file = dir.file("big.json", pod.dump());
  const CliRun r = run_cli({"check", "-p", kPolicy, "-o", "json", file});
  INFO(describe(r).substr(0, 4000));
  REQUIRE(r.code == 1);
  const json out = json::parse(r.out);
  REQUIRE(out["results"].size() == 1);
  const json& result = out["results"][0];
  CHECK(result["object"]["spec"]["containers"][0]["name"] == big);  // the object is kept exactly
  size_t found = 0;
  for (const auto& v : result["violations"]) {
    const std::string message = v["message"], field = v["field"];
    CHECK(message.size() < 4096);
    CHECK(field.size() < 1024);
    found += message.find(shown) != std::string::npos;
  }
  CHECK(found >= 2);  // the container name (privileged, gpu-device-access) and the env value

  const CliRun text = run_cli({"check", "-p", kPolicy, file});
  CHECK(text.code == 1);
  CHECK(text.out.size() < 16384);
  CHECK(text.out.find("container \"" + shown + " is privileged") != std::string::npos);
}

TEST_CASE("cli check: text escapes what a tenant wrote; JSON keeps it", "[cli][check][escape]") {
  TempDir dir;
  const std::string file = dir.file("forged.json", forged_pod().dump());
  const CliRun r = run_cli({"check", "-p", kPolicy, file});
  INFO(describe(r));
  CHECK(r.code == 1);
  check_escaped(r.out);
  CHECK(r.out.find("Pod team-alpha/" + kForgeShown + ": DENIED") != std::string::npos);
  CHECK(r.out.find("container \"" + kForgeShown + "\" is privileged") != std::string::npos);
  CHECK(r.out.find("annotation \"cdi.k8s.io/" + kForgeShown + "\"") != std::string::npos);
  CHECK(r.out.find("at metadata.annotations[\"cdi.k8s.io/" + kForgeShown + "\"]") != std::string::npos);

  // -o yaml's denials on stderr are text for a terminal too.
  const CliRun y = run_cli({"check", "-p", kPolicy, "-o", "yaml", file});
  check_escaped(y.err);

  const CliRun j = run_cli({"check", "-p", kPolicy, "-o", "json", file});
  REQUIRE(j.code == 1);
  const json out = json::parse(j.out);
  CHECK(out["results"][0]["name"] == kForge);
  CHECK(out["results"][0]["object"]["metadata"]["name"] == kForge);
}

TEST_CASE("cli test: a failed case's text escapes its name, object and findings", "[cli][test][escape]") {
  TempDir dir;
  const std::string object = dir.file("forged.json", forged_pod().dump());
  const std::string suite = dir.file("suite.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\npolicy: " +
                                                       kPolicy + "\ncases:\n  - name: \"case x\\e[2K\\rPod x: ALLOWED\\u202e\"\n"
                                                       "    namespace: team-alpha\n    object: " + object +
                                                       "\n    expect: {allowed: true}\n");
  const CliRun r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 1);
  check_escaped(r.out);
  CHECK(r.out.find("FAIL  case " + kForgeShown) != std::string::npos);
  CHECK(r.out.find("container \"" + kForgeShown + "\" is privileged") != std::string::npos);

  const CliRun j = run_cli({"test", suite, "-o", "json"});
  const json out = json::parse(j.out);
  CHECK(out["suites"][0]["cases"][0]["name"] == "case " + kForge);
}

TEST_CASE("cli audit: text escapes names, messages and fields of objects read from a file", "[cli][audit][escape]") {
  json owner_ref = {{"apiVersion", "apps/v1"}, {"kind", "Job"}, {"name", kForge}, {"uid", "j-1"}, {"controller", true}};
  json pod = forged_pod();
  json owned = forged_pod();
  owned["metadata"]["name"] = "owned";
  owned["metadata"]["uid"] = "u-2";
  owned["metadata"]["ownerReferences"] = json::array({owner_ref});
  const json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({pod, owned})}};
  TempDir dir;
  const std::string file = dir.file("list.json", list.dump());
  const CliRun r = run_cli({"audit", "-p", kPolicy, file});
  INFO(describe(r));
  CHECK(r.code == 1);
  check_escaped(r.out);
  CHECK(r.out.find("team-alpha/Pod/" + kForgeShown + " (tenant alpha") != std::string::npos);
  CHECK(r.out.find("team-alpha/Job/" + kForgeShown + " (tenant alpha") != std::string::npos);
  CHECK(r.out.find("container \"" + kForgeShown + "\" is privileged") != std::string::npos);

  const CliRun j = run_cli({"audit", "-p", kPolicy, "-o", "json", file});
  const json out = json::parse(j.out);
  bool raw = false;
  for (const auto& o : out["objects"]) raw = raw || o["name"] == kForge;
  CHECK(raw);
}
