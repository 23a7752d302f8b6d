// Inputs read as deep as cluster state reads them: objects nested up to 10,000 levels (what the
// API server stores) in files, on standard input and as test cases' objects are read and judged
// by `check`, `test` and `audit`, as JSON and as YAML; deeper ones are a clear error naming the
// file and line, exit 2, never a crash.
#include "cli_test_support.h"

#include <string>

#include "test_paths.h"

using namespace cli_test;

namespace {

const std::string kPolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";

// JSON lists `levels` deep around 1.
std::string deep_json(int levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

// A privileged Pod with an unknown spec field (the API server keeps such fields of CRDs; a
// dump or a hand-written manifest may hold one anywhere) `levels` deep, as JSON on one line.
std::string deep_pod_json(int levels) {
  return R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "deep", "namespace": "team-alpha"},
  "spec": {"x-unknown": )" + deep_json(levels - 3) + R"(,
  "containers": [{"name": "main", "image": "busybox", "securityContext": {"privileged": true}}]}})" + "\n";
}

// The same as YAML: block mappings, the deep field as block sequences ("- - - 1") on line 7.
std::string deep_pod_yaml(int levels) {
  std::string out = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\n  namespace: team-alpha\nspec:\n  x-unknown:\n";
  out += "    ";
  for (int i = 0; i < levels - 2; ++i) out += "- ";
  return out + "1\n  containers:\n    - name: main\n      image: busybox\n      securityContext: {privileged: true}\n";
}

// A ResourceClaim asking for every GPU with adminAccess (gpu-device-access refuses it) whose
// opaque driver parameters nest `levels` deep: claims are judged on their own.
std::string deep_claim_json(int levels) {
  return R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
  "metadata": {"name": "monitor", "namespace": "team-alpha"},
  "spec": {"devices": {
    "requests": [{"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": true}}],
    "config": [{"opaque": {"driver": "other.example.com", "parameters": {"p": )" +
         deep_json(levels - 7) + "}}}]}}}\n";
}

}  // namespace

TEST_CASE("deep inputs: check reads and judges objects nested 5,000 and 10,000 levels", "[cli][depth]") {
  for (int levels : {5'000, 10'000}) {
    INFO(levels << " levels");
    TempFile json(deep_pod_json(levels));
    CliRun r = run_cli({"check", "--policy", kPolicy, json.path.string()});
    INFO(describe(r));
    CHECK(r.code == 1);  // read, and judged: the privileged container is denied
    CHECK(r.out.find("Pod team-alpha/deep: DENIED") != std::string::npos);
    CHECK(r.out.find("[privileged] container \"main\" is privileged") != std::string::npos);

    TempFile yaml(deep_pod_yaml(levels));
    CliRun y = run_cli({"check", "--policy", kPolicy, "-"}, "", yaml.path.string());  // standard input
    INFO(describe(y));
    CHECK(y.code == 1);
    CHECK(y.out.find("[privileged] container \"main\" is privileged") != std::string::npos);

    TempFile claim(deep_claim_json(levels));
    CliRun c = run_cli({"check", "--policy", kPolicy, "-o", "json", claim.path.string()});
    INFO(describe(c));
    CHECK(c.code == 1);
    CHECK(c.out.find("\"gpu-device-access\"") != std::string::npos);
    CHECK(c.out.find("adminAccess") != std::string::npos);
  }
}

TEST_CASE("deep inputs: deeper than 10,000 levels is an error naming the file and line, exit 2", "[cli][depth]") {
  TempFile json(deep_pod_json(20'000));
  CliRun r = run_cli({"check", "--policy", kPolicy, json.path.string()});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find(json.path.string() + ":2:") != std::string::npos);
  CHECK(r.err.find("nesting deeper than 10000 levels") != std::string::npos);

  TempFile yaml(deep_pod_yaml(10'001));
  CliRun y = run_cli({"check", "--policy", kPolicy, yaml.path.string()});
  INFO(describe(y));
  CHECK(y.code == 2);
  CHECK(y.err.find(yaml.path.string() + ":8:") != std::string::npos);
  CHECK(y.err.find("invalid YAML: nesting deeper than 10000 levels") != std::string::npos);

  CliRun a = run_cli({"audit", "-p", kPolicy, json.path.string()});
  INFO(describe(a));
  CHECK(a.code == 2);
  CHECK(a.err.find("nesting deeper than 10000 levels") != std::string::npos);
}

TEST_CASE("deep inputs: audit and test read them too", "[cli][depth]") {
  TempFile pod(deep_pod_json(10'000));
  CliRun a = run_cli({"audit", "-p", kPolicy, pod.path.string()});
  INFO(describe(a));
  CHECK(a.code == 1);
  CHECK(a.out.find("team-alpha/Pod/deep") != std::string::npos);

  TempDir dir;
  dir.file("deep-pod.yaml", deep_pod_yaml(10'000));
  const std::string suite = dir.file("suite.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\npolicy: " +
                                                       kPolicy + R"(
cases:
  - name: a pod with a field 10,000 levels deep is judged
    namespace: team-alpha
    object: deep-pod.yaml
    expect: {allowed: false, denied: [privileged]}
)");
  CliRun t = run_cli({"test", suite});
  INFO(describe(t));
  CHECK(t.code == 0);
  CHECK(t.out.find("1 passed, 0 failed") != std::string::npos);
}
