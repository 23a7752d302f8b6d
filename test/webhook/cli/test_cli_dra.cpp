// DRA end to end through the real binary: the examples' DRA suite, `check` on claims,
// templates and the pods that use them (text and JSON), and NVIDIA's DRA driver manifests from
// the shared corpus judged in two tenants with asserted outcomes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kDraExamples = kSource + "/examples/dra";
const std::string kData = kSource + "/test/data/dra";

json check_json(const std::vector<std::string>& args, int expected_code) {
  std::vector<std::string> all = {"check", "-o", "json"};
  all.insert(all.end(), args.begin(), args.end());
  CliRun r = run_cli(all);
  INFO(describe(r));
  REQUIRE(r.code == expected_code);
  return json::parse(r.out);
}

std::set<std::string> denied_rules(const json& result) {
  std::set<std::string> out;
  for (const auto& v : result["violations"])
    if (v["action"] == "deny") out.insert(v["rule"].get<std::string>());
  return out;
}

// kind/name -> denied rules ("allowed" objects map to an empty set).
std::map<std::string, std::set<std::string>> outcomes(const json& doc) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& r : doc["results"]) out[r["kind"].get<std::string>() + "/" + r["name"].get<std::string>()] = denied_rules(r);
  return out;
}

}  // namespace

TEST_CASE("dra: the examples' DRA suite passes", "[cli][dra]") {
  CliRun r = run_cli({"test", kDraExamples + "/suite.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("11 passed, 0 failed") != std::string::npos);
}

TEST_CASE("dra: check resolves a pod's claim template among its inputs and says where its GPUs come from",
          "[cli][dra]") {
  CliRun text = run_cli({"check", kDraExamples + "/mig-slice-template.yaml", kDraExamples + "/pod-template.yaml"});
  INFO(describe(text));
  CHECK(text.code == 0);
  CHECK(text.out.find("Pod research/dra-train: ALLOWED") != std::string::npos);
  CHECK(text.out.find("GPUs: 1/7 (1/7 from claim template one-slice)") != std::string::npos);
  // hide-gpus leaves the container that uses the claim alone and hides the node's GPUs from the sidecar.
  CHECK(text.out.find("/spec/containers/1/env") != std::string::npos);
  CHECK(text.out.find("/spec/containers/0/env") == std::string::npos);

  // Without the template the claim cannot be counted, nor its sharing or MIG devices judged in
  // the adversarial MIG pool: never a silent zero.
  json alone = check_json({kDraExamples + "/pod-template.yaml"}, 1);
  REQUIRE(alone["results"].size() == 1);
  CHECK(denied_rules(alone["results"][0]) ==
        std::set<std::string>{"gpu-cap", "mps-adversarial", "mig-profile", "gpu-sharing"});
  const auto& v = alone["results"][0]["violations"][0];
  CHECK(v["field"] == "spec.resourceClaims[0]");
  CHECK(v["message"] == "cannot count the GPUs of ResourceClaimTemplate one-slice: not found");
}

TEST_CASE("dra: check refuses a time-sliced claim in an adversarial pool, at the pod's claim entry", "[cli][dra]") {
  // The claim (v1beta2, its GpuConfig asking for TimeSlicing) and its pod, as the fixture gives them.
  const std::string fixture = kSource + "/test/fixtures/gpu-sharing/fail/dra-v1beta2-time-slicing.yaml";
  json doc = check_json({"-p", kSource + "/test/fixtures/policy.yaml", fixture}, 1);
  std::map<std::string, json> by_kind;
  for (const auto& r : doc["results"]) by_kind[r["kind"].get<std::string>()] = r;
  REQUIRE(by_kind.count("ResourceClaim") == 1);
  CHECK(by_kind["ResourceClaim"]["allowed"] == true);  // a claim names no pool: judged with its pod
  const json& pod = by_kind["Pod"];
  CHECK(denied_rules(pod) == std::set<std::string>{"gpu-sharing"});
  bool found = false;
  for (const auto& v : pod["violations"]) {
    if (v["rule"] != "gpu-sharing") continue;
    found = true;
    CHECK(v["field"] == "spec.resourceClaims[0]");
    CHECK(v["message"] == "claim ts-gpu: request \"ts\" asks the GPU driver for time-slicing (sharing.strategy: "
                          "TimeSlicing) in adversarial pool \"a100-secure\"");
  }
  CHECK(found);
}

TEST_CASE("dra: claims and templates are judged as objects, findings at spec.devices.requests[i]", "[cli][dra]") {
  json doc = check_json({kDraExamples + "/admin-access-claim.yaml", kDraExamples + "/eight-gpus-template.yaml"}, 1);
  REQUIRE(doc["results"].size() == 2);
  const json& claim = doc["results"][0];
  CHECK(claim["kind"] == "ResourceClaim");
  CHECK(denied_rules(claim) == std::set<std::string>{"gpu-device-access", "gpu-cap"});
  for (const auto& v : claim["violations"]) CHECK(v["field"] == "spec.devices.requests[0]");
  const json& tmpl = doc["results"][1];
  CHECK(tmpl["kind"] == "ResourceClaimTemplate");
  CHECK(denied_rules(tmpl) == std::set<std::string>{"gpu-cap"});
  CHECK(tmpl["violations"][0]["field"].get<std::string>().rfind("spec.spec.devices.requests", 0) == 0);
}

namespace {

using Rules = std::set<std::string>;

// The outcomes of `check` of one file of the DRA corpus with the untrusted or trusted policy,
// which exits with `code`.
auto dra_outcomes(const std::string& policy, const std::string& rel, int code) {
  return outcomes(check_json(
      {"-p", kData + "/" + policy + "-policy.yaml", test_paths::corpus("dra-specs") + "/" + rel}, code));
}

}  // namespace

TEST_CASE("dra: NVIDIA's DRA driver manifests in an untrusted and a trusted tenant", "[cli][dra][corpus]") {
  const std::string kCorpus = test_paths::corpus("dra-specs");
  if (kCorpus.empty()) return;
  SECTION("the MPS quickstart: refused in the adversarial MIG pool, admitted in the cooperative one") {
    auto untrusted = dra_outcomes("untrusted", "quickstart/v1/gpu-test-mps.yaml", 1);
    CHECK(untrusted["ResourceClaimTemplate/shared-gpu"].empty());
    CHECK(untrusted["Pod/test-pod"] == Rules{"mps-adversarial", "mig-profile"});
    auto trusted = dra_outcomes("trusted", "quickstart/v1/gpu-test-mps.yaml", 0);
    CHECK(trusted["Pod/test-pod"].empty());
    // v1beta1 (flat requests) is judged the same way.
    CHECK(dra_outcomes("untrusted", "quickstart/v1beta1/gpu-test-mps.yaml", 1)["Pod/test-pod"] ==
          Rules{"mps-adversarial", "mig-profile"});
  }
  SECTION("the time-slicing quickstarts: refused in the adversarial pool by gpu-sharing, admitted in the cooperative one") {
    for (const char* version : {"v1", "v1beta1"}) {
      INFO(version);
      const std::string dir = std::string("quickstart/") + version;
      auto five = dra_outcomes("untrusted", dir + "/gpu-test5.yaml", 1);  // a TimeSlicing and an MPS request
      CHECK(five["Pod/pod0"].count("gpu-sharing") == 1);
      CHECK(five["Pod/pod0"].count("mps-adversarial") == 1);
      auto six = dra_outcomes("untrusted", dir + "/gpu-test6.yaml", 1);  // TimeSlicing only
      for (const auto& [object, rules] : six)
        if (object.rfind("Pod/", 0) == 0 || object.rfind("Deployment/", 0) == 0) {
          INFO(object);
          CHECK(rules.count("gpu-sharing") == 1);
          CHECK(rules.count("mps-adversarial") == 0);
        }
      for (const auto& [object, rules] : dra_outcomes("trusted", dir + "/gpu-test6.yaml", 0)) {
        INFO(object);
        CHECK(rules.empty());
      }
    }
  }
  SECTION("whole GPUs through DRA are not handed out in a MIG pool") {
    auto untrusted = dra_outcomes("untrusted", "quickstart/v1/gpu-test1.yaml", 1);
    for (const auto& [object, rules] : untrusted)
      if (object.rfind("Pod/", 0) == 0) CHECK(rules == Rules{"mig-profile"});
    CHECK(dra_outcomes("trusted", "quickstart/v1/gpu-test1.yaml", 0).size() >= 3);
  }
  SECTION("A100-40GB MIG profiles pinned by selectors are not profiles of an H100") {
    auto trusted = dra_outcomes("trusted", "quickstart/v1/gpu-test4.yaml", 1);
    CHECK(trusted["ResourceClaimTemplate/mig-devices"].empty());
    CHECK(trusted["Deployment/pod"] == Rules{"mig-profile"});
  }
  SECTION("a template in another namespace than its pod is not found: gpu-cap, never zero GPUs") {
    auto trusted = dra_outcomes("trusted", "quickstart/v1/gpu-test-vfio-config.yaml", 1);
    CHECK(trusted["Pod/pod1-full-vfioconfig"].count("gpu-cap") == 1);
  }
}

TEST_CASE("dra: NVIDIA's DRA driver manifests: old API versions, IMEX channels, and all of them", "[cli][dra][corpus]") {
  const std::string kCorpus = test_paths::corpus("dra-specs");
  if (kCorpus.empty()) return;
  SECTION("claims of the old v1alpha2 API are skipped, and pods that use them are unresolved GPU pods") {
    json claims = check_json({"-p", kData + "/untrusted-policy.yaml", kCorpus + "/mig+mps/sharing-demo-claims.yaml"}, 0);
    CHECK(claims["results"].empty());
    REQUIRE(claims["skipped"].size() == 4);
    CHECK(claims["skipped"][0]["reason"].get<std::string>().find("not served by Kubernetes 1.34+") != std::string::npos);
    auto job = dra_outcomes("untrusted", "mig+mps/sharing-demo-job.yaml", 1);
    CHECK(job.begin()->second.count("gpu-cap") == 1);
  }
  SECTION("IMEX channels: one channel per ResourceClaim is no device-access finding, in an adversarial pool too") {
    auto untrusted = dra_outcomes("untrusted", "quickstart/v1/imex-test1.yaml", 1);  // whole GPUs in the MIG pool
    size_t deployments = 0;
    for (const auto& [object, rules] : untrusted) {
      INFO(object);
      CHECK(rules.count("gpu-device-access") == 0);
      deployments += object.rfind("Deployment/", 0) == 0;
    }
    CHECK(deployments == 4);
  }
  SECTION("every manifest is readable: none is unusable input") {
    for (const auto& e : fs::recursive_directory_iterator(kCorpus)) {
      if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
      for (const char* policy : {"untrusted", "trusted"}) {
        CliRun r = run_cli({"check", "-p", kData + "/" + policy + "-policy.yaml", e.path().string()});
        INFO(e.path().string() << " with the " << policy << " policy: " << describe(r));
        CHECK(r.code != 2);
      }
    }
  }
}

TEST_CASE("dra: adminAccess is refused in a namespace the API server lets use it; lint notes where it may be used",
          "[cli][dra][gpu-device-access]") {
  // The namespace carries the label with which Kubernetes 1.33+ accepts adminAccess there.
  cli_test::TempFile inputs(R"(apiVersion: v1
kind: Namespace
metadata:
  name: team-alpha
  labels: {resource.kubernetes.io/admin-access: "true"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: admin, namespace: team-alpha}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, adminAccess: true}
)");
  json doc = check_json({"-p", kSource + "/test/fixtures/policy.yaml", inputs.path.string()}, 1);
  REQUIRE(doc["results"].size() == 1);
  CHECK(denied_rules(doc["results"][0]) == std::set<std::string>{"gpu-device-access"});
  // The same with --namespace-labels instead of a Namespace object.
  cli_test::TempFile claim_only(R"(apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: admin, namespace: team-alpha}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, adminAccess: true}
)");
  json labelled = check_json({"-p", kSource + "/test/fixtures/policy.yaml", "--namespace-labels",
                              "resource.kubernetes.io/admin-access=true", claim_only.path.string()},
                             1);
  CHECK(denied_rules(labelled["results"][0]) == std::set<std::string>{"gpu-device-access"});

  // policy lint: a note, not a warning; --strict still passes on a policy without warnings.
  cli_test::TempFile clean(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: notes}
spec:
  exemptions: {namespaces: [kube-system, gpu-monitoring]}
)");
  CliRun lint = run_cli({"policy", "lint", "--strict", clean.path.string()});
  INFO(describe(lint));
  CHECK(lint.code == 0);
  CHECK(lint.out.find(": note: spec.exemptions.namespaces: DRA adminAccess") != std::string::npos);
  CHECK(lint.out.find("(\"kube-system\", \"gpu-monitoring\")") != std::string::npos);
  CHECK(lint.out.find("warning:") == std::string::npos);
}
