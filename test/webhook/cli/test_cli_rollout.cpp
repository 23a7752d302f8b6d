// `check` and `test` on a staged rollout: excepted findings are shown as such (text, JSON,
// suites' `excepted` expectation) and do not deny; while observing (warn, audit) check's object is
// not patched, the withheld patch and the MIG notice are shown instead, and the findings are
// enforcement's, what it would deny marked as such.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

using cli_test::run_cli;
using cli_test::TempFile;
using nlohmann::json;

const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: rollout}
spec:
  mutations: {hide-gpus: false}
  pools:
    - {name: mig, nodeSelector: {pool: mig}, gpuModel: A100-SXM4-80GB, mig: {strategy: mixed, defaultProfile: 1g.10gb}}
  tenants:
    - {name: alpha, namespaces: [team-alpha], pools: [mig], defaultPool: mig}
  exceptions:
    - {name: debug-pods, reason: "INC-1", rules: [privileged], namespaces: [team-alpha], expires: "2999-01-01T00:00:00Z"}
)";

const char* kPod = R"(apiVersion: v1
kind: Pod
metadata: {name: dbg, namespace: team-alpha}
spec:
  containers:
    - name: main
      image: cuda
      securityContext: {privileged: true}
      resources: {limits: {nvidia.com/gpu: 2}}
)";

}  // namespace

TEST_CASE("check: an excepted finding is shown and does not deny", "[cli][rollout]") {
  TempFile policy(kPolicy);
  TempFile pod(kPod);
  auto text = run_cli({"check", "--policy", policy.path.string(), pod.path.string()});
  INFO(text.out << text.err);
  CHECK(text.code == 0);
  CHECK(text.out.find("excepted [privileged]") != std::string::npos);
  CHECK(text.out.find("by exception debug-pods (would deny)") != std::string::npos);
  CHECK(text.out.find("converted nvidia.com/gpu: 2 to nvidia.com/mig-1g.10gb: 2 in pool mig") != std::string::npos);

  auto out = run_cli({"check", "-o", "json", "--policy", policy.path.string(), pod.path.string()});
  REQUIRE(out.code == 0);
  const json r = json::parse(out.out)["results"][0];
  CHECK(r["allowed"] == true);
  CHECK(r["violations"][0]["exception"] == "debug-pods");
  CHECK(r["violations"][0]["action"] == "deny");
  CHECK(r["notices"][0] == "converted nvidia.com/gpu: 2 to nvidia.com/mig-1g.10gb: 2 in pool mig");
}

TEST_CASE("check: under enforcement audit nothing is patched and the withheld patch is shown", "[cli][rollout]") {
  std::string audit_policy = kPolicy;
  audit_policy.replace(audit_policy.find("spec:\n"), 6, "spec:\n  enforcement: audit\n");
  TempFile policy(audit_policy);
  TempFile pod(kPod);
  auto out = run_cli({"check", "-o", "json", "--policy", policy.path.string(), pod.path.string()});
  INFO(out.out << out.err);
  REQUIRE(out.code == 0);
  const json r = json::parse(out.out)["results"][0];
  CHECK(r["patch"].empty());
  CHECK(r["object"]["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));
  REQUIRE(r.contains("withheldPatch"));
  CHECK(r["withheldPatch"].dump().find("mig-1g.10gb") != std::string::npos);
  auto text = run_cli({"check", "--policy", policy.path.string(), pod.path.string()});
  CHECK(text.out.find("not applied (mode audit)") != std::string::npos);
  CHECK(text.out.find("would have converted nvidia.com/gpu: 2") != std::string::npos);
}

TEST_CASE("check: observing shows what enforcement would deny, and changes nothing", "[cli][rollout]") {
  for (const std::string mode : {"audit", "warn"}) {
    INFO(mode);
    std::string observing = kPolicy;
    observing.replace(observing.find("spec:\n"), 6, "spec:\n  enforcement: " + mode + "\n");
    TempFile policy(observing);
    std::string host_pid = kPod;  // privileged is excepted in team-alpha; hostPID is not
    host_pid.replace(host_pid.find("spec:\n"), 6, "spec:\n  hostPID: true\n");
    TempFile pod(host_pid);
    auto out = run_cli({"check", "-o", "json", "--policy", policy.path.string(), pod.path.string()});
    INFO(out.out << out.err);
    REQUIRE(out.code == 0);
    const json r = json::parse(out.out)["results"][0];
    CHECK(r["allowed"] == true);
    CHECK(r["patch"].empty());
    bool would_deny = false;
    for (const auto& v : r["violations"])
      if (v["rule"] == "host-namespaces") would_deny = v.value("wouldDeny", false);
    CHECK(would_deny);
    // The same pod's tenant-pool and tenant-label findings are not there: it is judged as mutated.
    CHECK(out.out.find("tenant-pool") == std::string::npos);
    CHECK(out.out.find("tenant-label") == std::string::npos);
    auto text = run_cli({"check", "--policy", policy.path.string(), pod.path.string()});
    CHECK(text.out.find("would deny under enforcement (mode " + mode + ")") != std::string::npos);
  }
}

TEST_CASE("test: the excepted expectation", "[cli][rollout]") {
  TempFile pod(kPod);  // dir/pod.yaml
  const std::string dir = pod.dir.string();
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(pod.dir / name) << text; };
  write("policy.yaml", kPolicy);
  write("suite.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: policy.yaml
cases:
  - name: the debug pod is excepted
    namespace: team-alpha
    object: pod.yaml
    expect: {allowed: true, denied: [], excepted: [privileged]}
  - name: a wrong expectation fails
    namespace: team-alpha
    object: pod.yaml
    expect: {excepted: []}
)");
  auto r = run_cli({"test", dir + "/suite.yaml"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.find("PASS  the debug pod is excepted") != std::string::npos);
  CHECK(r.out.find("FAIL  a wrong expectation fails") != std::string::npos);
  CHECK(r.out.find("excepted: expected [], got [privileged]") != std::string::npos);
}

TEST_CASE("the examples/rollout suites pass, run as a directory", "[cli][rollout][test]") {
  auto r = run_cli({"test", std::string(test_paths::source_dir()) + "/examples/rollout"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("5 passed, 0 failed") != std::string::npos);
}
