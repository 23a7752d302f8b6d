// End-to-end tests of `policy lint` (--strict, standard input, ConfigMaps that carry the policy)
// and of `policy show` and `check --policy` on such a ConfigMap.
#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::slurp;
using cli_test::TempFile;

const std::string kSource = test_paths::source_dir();
const std::string kExamplesPolicy = kSource + "/examples/policy.yaml";  // one lint warning (gpu-cap: audit)
const std::string kDeployConfigMap = kSource + "/deploy/policy-configmap.yaml";
const std::string kUnknownPool = kSource + "/test/data/cli/unknown-pool-policy.yaml";  // error at 20:15

// A v1 ConfigMap whose data holds `policy` under `key` as a literal block, indented 4 spaces;
// the block's first line is file line 7 (`extra` data keys come after it).
std::string configmap(const std::string& key, const std::string& policy, const std::string& extra = "") {
  std::string out = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpu-admission-policy\ndata:\n  " + key + ": |\n";
  std::istringstream in(policy);
  for (std::string line; std::getline(in, line);) out += line.empty() ? "\n" : "    " + line + "\n";
  return out + extra;
}

std::string default_policy() {
  CliRun r = run_cli({"policy", "show", "--default"});
  REQUIRE(r.code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("policy lint --strict: warnings fail too", "[cli][lint]") {
  CliRun plain = run_cli({"policy", "lint", kExamplesPolicy});
  INFO(describe(plain));
  CHECK(plain.code == 0);
  CHECK(plain.out.find("warning:") != std::string::npos);
  CliRun strict = run_cli({"policy", "lint", "--strict", kExamplesPolicy});
  INFO(describe(strict));
  CHECK(strict.code == 1);
  CHECK(strict.out.find("--strict fails on them") != std::string::npos);

  TempFile clean(default_policy());
  CHECK(run_cli({"policy", "lint", "--strict", clean.path.string()}).code == 0);
  CHECK(run_cli({"policy", "lint", "--strict", kUnknownPool}).code == 1);  // errors: 1 either way
  CHECK(run_cli({"policy", "lint", "--strict", kSource + "/no-such-policy.yaml"}).code == 2);
  CHECK(run_cli({"policy", "show", "--strict", kExamplesPolicy}).code == 2);
}

TEST_CASE("policy lint --strict fails on exceptions any tenant can satisfy", "[cli][lint][exceptions]") {
  // The documented rollout example is scoped by tenants and namespaces: clean.
  CliRun example = run_cli({"policy", "lint", "--strict", kSource + "/examples/rollout/policy.yaml"});
  INFO(describe(example));
  CHECK(example.code == 0);

  // Its exception, selected by labels and a username instead (file lines 29-34).
  std::string text = slurp(kSource + "/examples/rollout/policy.yaml");
  const std::string scope = "      tenants: [research]\n      namespaces: [research-debug]\n";
  REQUIRE(text.find(scope) != std::string::npos);
  text.replace(text.find(scope), scope.size(),
               "      podLabels: {debug: \"true\"}\n      usernames: [\"system:serviceaccount:*:driver-debug\"]\n");
  text.replace(text.find("rules: [privileged]"), 19, "rules: [privileged, gpu-cap]");
  TempFile loose(text);
  CliRun plain = run_cli({"policy", "lint", loose.path.string()});
  INFO(describe(plain));
  CHECK(plain.code == 0);  // warnings only
  // Each warning on its field's line, with what to do.
  auto warned = [&](int line, const std::string& needle) {
    std::istringstream out(plain.out);
    const std::string at = loose.path.string() + ":" + std::to_string(line) + ":";
    for (std::string l; std::getline(out, l);)
      if (l.starts_with(at) && l.find("warning: " + needle) != std::string::npos) return true;
    return false;
  };
  CHECK(warned(29, "spec.exceptions[0]: exception \"research-driver-debug\" has neither namespaces nor tenants"));
  CHECK(warned(32, "spec.exceptions[0].podLabels: exception \"research-driver-debug\" selects by podLabels for "
                   "privileged, gpu-cap: a pod's labels are the tenant's to write"));
  CHECK(warned(33, "spec.exceptions[0].usernames[0]: \"system:serviceaccount:*:driver-debug\" has a * in the "
                   "service-account namespace"));
  CHECK(warned(33, "spec.exceptions[0].usernames: exception \"research-driver-debug\" turns off privileged, "
                   "gpu-cap by username, but at allocation the scheduler, not the user, writes the claim status"));
  CliRun strict = run_cli({"policy", "lint", "--strict", loose.path.string()});
  INFO(describe(strict));
  CHECK(strict.code == 1);
}

TEST_CASE("policy lint reads standard input", "[cli][lint]") {
  CliRun r = run_cli({"policy", "lint", "--strict", "-"}, {}, kExamplesPolicy);
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("gpu-cap") != std::string::npos);
}

TEST_CASE("policy lint reads a ConfigMap that carries the policy", "[cli][lint][configmap]") {
  SECTION("the generated deploy/policy-configmap.yaml is valid") {
    CliRun r = run_cli({"policy", "lint", "--strict", kDeployConfigMap});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("(ConfigMap gpu-admission-policy, key policy.yaml): policy \"default\" is valid") !=
          std::string::npos);
  }
  SECTION("a problem names the key and the line in the policy, and points at the file's line") {
    TempFile cm(configmap("policy.yaml", slurp(kUnknownPool)));
    CliRun r = run_cli({"policy", "lint", cm.path.string()});
    INFO(describe(r));
    CHECK(r.code == 1);
    // Line 20 of the policy is file line 6 + 20; column 15 is 4 + 15.
    CHECK(r.out.find("pod.yaml:26:19: error: [ConfigMap gpu-admission-policy, key policy.yaml, line 20:15] "
                     "spec.tenants[1].pools[0]: unknown pool \"a100-sec\"") != std::string::npos);
  }
  SECTION("a JSON ConfigMap: the key and the line in the policy, no file position") {
    nlohmann::json doc = {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", {{"name", "from-kubectl"}}},
                          {"data", {{"other", "x"}, {"gpu-policy.yaml", slurp(kUnknownPool)}}}};
    TempFile cm(doc.dump(2));
    CliRun r = run_cli({"policy", "lint", cm.path.string()});
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(r.out.find("pod.yaml: error: [ConfigMap from-kubectl, key gpu-policy.yaml, line 20:15] "
                     "spec.tenants[1].pools[0]") != std::string::npos);
  }
  SECTION("the policy key is found among other keys; show and check read it too") {
    TempFile cm(configmap("policy.yaml", default_policy(), "  README: see docs/deployment.md\n"));
    CHECK(run_cli({"policy", "lint", cm.path.string()}).code == 0);
    CliRun show = run_cli({"policy", "show", cm.path.string()});
    INFO(describe(show));
    CHECK(show.code == 0);
    CHECK(show.out.find("kind: GpuAdmissionPolicy") != std::string::npos);
    CliRun check = run_cli({"check", "--policy", cm.path.string(), kSource + "/examples/manifests/privileged-pod.yaml"});
    INFO(describe(check));
    CHECK(check.code == 1);
  }
  SECTION("no policy key, or several, is a clear error") {
    TempFile none("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: hello\n  b: world\n");
    CliRun r = run_cli({"policy", "lint", none.path.string()});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.out.find("ConfigMap c: no data key holds a GpuAdmissionPolicy document (keys: a, b)") != std::string::npos);
    const std::string policy = default_policy();
    std::string second;
    std::istringstream in(policy);
    for (std::string line; std::getline(in, line);) second += line.empty() ? "\n" : "    " + line + "\n";
    TempFile two(configmap("one.yaml", policy, "  two.yaml: |\n" + second));
    CliRun t = run_cli({"policy", "lint", two.path.string()});
    INFO(describe(t));
    CHECK(t.code == 2);
    CHECK(t.out.find("several data keys hold a GpuAdmissionPolicy document (one.yaml, two.yaml)") != std::string::npos);
    TempFile empty("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e}\n");
    CliRun e = run_cli({"policy", "lint", empty.path.string()});
    CHECK(e.code == 2);
    CHECK(e.out.find("ConfigMap e has no data") != std::string::npos);
  }
  SECTION("a broken policy under policy.yaml is linted, not passed over") {
    TempFile cm(configmap("policy.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: Nope\n"));
    CliRun r = run_cli({"policy", "lint", cm.path.string()});
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(r.out.find("key policy.yaml, line 2:") != std::string::npos);
  }
}
