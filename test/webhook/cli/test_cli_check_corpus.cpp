// End-to-end tests of `gpu-admission check` on real GPU manifests from the shared corpus
// (test_paths::corpus; skipped where it is absent).
#include <catch2/catch.hpp>

#include "webhook/cli/check_test_support.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

// A file of the corpus, by its path there.
std::string corpus(const std::string& rel) { return test_paths::corpus("gpu-manifests") + "/" + rel; }

// `check -o json` of one corpus file in namespace `ns`, which exits with `code`.
json check_one(const std::string& rel, const std::string& ns, int code) {
  return check_json({corpus(rel)}, code, {"--namespace", ns});
}

}  // namespace

TEST_CASE("check: real GPU manifests from the shared corpus", "[cli][check][corpus]") {
  const std::string kCorpus = test_paths::corpus("gpu-manifests");
  if (kCorpus.empty()) return;

  SECTION("gpu-operator's test pod has no GPU toleration: gpu-tolerations in a tenant namespace") {
    json doc = check_one("NVIDIA__gpu-operator/tests/gpu-pod.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(rules_with(doc["results"][0], "deny") == std::set<std::string>{"gpu-tolerations"});
    CHECK(doc["results"][0]["namespace"] == "research");
  }
  SECTION("the device plugin README pod tolerates the GPU taint: refused only outside any tenant") {
    json doc = check_one("NVIDIA__k8s-device-plugin/extracted/README.md_L176-191_gpu-pod.yaml", "default", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(rules_with(doc["results"][0], "deny") == std::set<std::string>{"tenant-pool"});
    CHECK(doc["results"][0]["violations"].size() == 1);
    // In a research namespace it also needs its pool's taint.
    json research = check_one("NVIDIA__k8s-device-plugin/extracted/README.md_L176-191_gpu-pod.yaml", "research", 1);
    CHECK(rules_with(research["results"][0], "deny") == std::set<std::string>{"gpu-tolerations"});
    CHECK(research["results"][0]["violations"].size() == 1);
  }
  SECTION("awslabs MPS client Job: hostIPC and the MPS pipe in an adversarial pool") {
    json doc = check_one("awslabs__aws-virtual-gpu-device-plugin/examples/mps/nbody-benchmark-mps.yml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(r["kind"] == "Job");
    auto deny = rules_with(r, "deny");
    CHECK(deny.count("mps-adversarial") == 1);
    CHECK(deny.count("host-namespaces") == 1);
    std::set<std::string> mps_fields;
    for (const auto& v : r["violations"])
      if (v["rule"] == "mps-adversarial") mps_fields.insert(v["field"].get<std::string>());
    CHECK(mps_fields.count("spec.template.spec.hostIPC") == 1);
    CHECK(std::any_of(mps_fields.begin(), mps_fields.end(),
                      [](const std::string& f) { return f.find("hostPath") != std::string::npos; }));
  }
  SECTION("awslabs resnet Deployment: mps-adversarial, and its Service is skipped") {
    json doc = check_one("awslabs__aws-virtual-gpu-device-plugin/examples/resnet.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(doc["results"][0]["kind"] == "Deployment");
    CHECK(rules_with(doc["results"][0], "deny").count("mps-adversarial") == 1);
  }
}

TEST_CASE("check: more real GPU manifests from the shared corpus, and all of them", "[cli][check][corpus]") {
  const std::string kCorpus = test_paths::corpus("gpu-manifests");
  if (kCorpus.empty()) return;

  SECTION("HAMi mig_example asks for 3g.20gb, not an A100-80GB profile: mig-profile") {
    json doc = check_one("Project-HAMi__HAMi/examples/nvidia/mig_example.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(rules_with(r, "deny").count("mig-profile") == 1);
    bool named = false;
    for (const auto& v : r["violations"])
      if (v["rule"] == "mig-profile") named = named || v["message"].get<std::string>().find("3g.20gb") != std::string::npos;
    CHECK(named);
  }
  SECTION("time-slicing-verification sets hostPID: host-namespaces") {
    json doc = check_one("NVIDIA__cloud-native-docs/gpu-operator/manifests/input/time-slicing-verification.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(rules_with(r, "deny").count("host-namespaces") == 1);
    bool at_host_pid = false;
    for (const auto& v : r["violations"])
      at_host_pid = at_host_pid || (v["rule"] == "host-namespaces" && v["field"] == "spec.template.spec.hostPID");
    CHECK(at_host_pid);
  }
  SECTION("the device plugin DaemonSet runs in an exempt namespace; RBAC objects are skipped") {
    CliRun r = run_cli({"check", "-p", kPolicy,
                        corpus("NVIDIA__k8s-device-plugin/deployments/static/nvidia-device-plugin-privileged-with-service-account.yml")});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("skipped") != std::string::npos);
  }
  SECTION("every corpus file is readable: some are denied, none is unusable input") {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(kCorpus)) {
      auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 20);
    json doc = check_json(files, 1, {"-n", "research"});
    CHECK(doc["results"].size() >= 20);
    for (const auto& r : doc["results"]) check_result_shape(r);
  }
}
