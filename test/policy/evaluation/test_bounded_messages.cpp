// A tenant's long values in messages and field paths (policy/base/quoted_value.h): a pod whose
// container name, env name or value, annotation key, hostPath, label value, resource name,
// quantity, nodeSelector value, affinity values, claim template name or runtime class is 1.4 MB
// is still refused, with each finding's message and field a few hundred bytes that show the
// value's first 256 bytes, an ellipsis and its size. Decode errors quote keys and kinds the same
// way. The policy is the fixtures' (test/fixtures/policy.yaml); pods are judged as received.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/decoded_pod.h"
#include "policy/base/ids.h"
#include "test_paths.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

const std::string kBig(1400000, 'a');  // 1.4 MB
const std::string kShown = std::string(256, 'a') + "\u2026";
const std::string kQuotedBig = "\"" + kShown + "\" (1.4 MB)";
const std::string kBareBig = kShown + " (1.4 MB)";

const policy::CompiledPolicy& fixtures() {
  static const webhook::PolicyLoad load =
      webhook::load_policy_file(std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml");
  REQUIRE(load.ok());
  return *load.policy;
}

// A GPU pod of tenant alpha in its adversarial MIG pool a100-secure, tolerating its taints.
json alpha_pod() {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-alpha",
    "labels":{"gpu-admission.io/tenant":"alpha","cost-center":"cc-1042"}},
    "spec":{"nodeSelector":{"gpu.example.com/pool":"a100-secure"},
      "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"},{"key":"gpu.example.com/pool","operator":"Exists"}],
      "containers":[{"name":"main","image":"i","resources":{"limits":{"nvidia.com/mig-1g.10gb":1}}}]}})");
}

// The findings of `pod` as /validate judges it, each checked to be bounded.
std::vector<policy::Finding> judge(const json& pod) {
  const policy_test::Judged r = policy_test::judge(fixtures(), pod, "team-alpha", false);
  INFO(r.note.substr(0, 2000));
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  size_t total = 0;
  for (const auto& f : r.decision.findings) {
    INFO(policy::name_of(f.rule) << ": " << f.message.substr(0, 600) << " at " << f.field.substr(0, 600));
    CHECK(f.message.size() < 4096);
    CHECK(f.field.size() < 1024);
    total += f.message.size() + f.field.size();
  }
  CHECK(total < 16384);
  for (const auto& n : r.decision.notices) CHECK(n.size() < 2048);
  return r.decision.findings;
}

// The finding of `rule` whose message holds `part` (a failed CHECK and nullptr when none does).
const policy::Finding* with(const std::vector<policy::Finding>& fs, policy::RuleId rule, const std::string& part) {
  for (const auto& f : fs)
    if (f.rule == rule && f.message.find(part) != std::string::npos) return &f;
  std::string all;
  for (const auto& f : fs) all += std::string(policy::name_of(f.rule)) + ": " + f.message.substr(0, 400) + "\n";
  FAIL_CHECK("no " << policy::name_of(rule) << " finding holds " << part.substr(0, 300) << "\nfindings:\n" << all);
  return nullptr;
}

}  // namespace

TEST_CASE("bounded messages: container names, env names and values", "[bounded][messages]") {
  SECTION("a 1.4 MB container name") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["name"] = kBig;
    pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
    const auto fs = judge(pod);
    const auto* f = with(fs, policy::RuleId::Privileged, "container " + kQuotedBig + " is privileged");
    if (f) CHECK(f->field == "spec.containers[0].securityContext.privileged");
  }
  SECTION("a 1.4 MB device env value") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", kBig}}};
    with(judge(pod), policy::RuleId::GpuDeviceAccess, "sets NVIDIA_VISIBLE_DEVICES to " + kQuotedBig + ",");
  }
  SECTION("a 1.4 MB CUDA_MPS_ env name in an adversarial pool") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["env"] = {{{"name", "CUDA_MPS_" + kBig}, {"value", "1"}}};
    with(judge(pod), policy::RuleId::MpsAdversarial, "sets CUDA_MPS_" + std::string(247, 'a') + "\u2026 (1.4 MB) in");
  }
  SECTION("a 1.4 MB envFrom prefix") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["envFrom"] = {{{"prefix", "CUDA_MPS_" + kBig}, {"configMapRef", {{"name", "c"}}}}};
    with(judge(pod), policy::RuleId::MpsAdversarial, "prefix \"CUDA_MPS_" + std::string(247, 'a') + "\u2026\" (1.4 MB)");
  }
}

TEST_CASE("bounded messages: annotation keys, hostPaths, labels", "[bounded][messages]") {
  SECTION("a 1.4 MB device annotation key, in the message and the field") {
    json pod = alpha_pod();
    pod["metadata"]["annotations"] = {{"cdi.k8s.io/" + kBig, "nvidia.com/gpu=all"}};
    const std::string key = "\"cdi.k8s.io/" + std::string(245, 'a') + "\u2026\" (1.4 MB)";
    const auto fs = judge(pod);
    const auto* f = with(fs, policy::RuleId::GpuDeviceAccess, "annotation " + key + " (prefix");
    if (f) CHECK(f->field == "metadata.annotations[" + key + "]");
  }
  SECTION("a 1.4 MB hostPath and volume name") {
    json pod = alpha_pod();
    pod["spec"]["volumes"] = {{{"name", kBig}, {"hostPath", {{"path", "/dev/nvidia" + kBig}}}}};
    with(judge(pod), policy::RuleId::GpuDeviceAccess,
         "hostPath volume " + kQuotedBig + " mounts \"/dev/nvidia" + std::string(245, 'a') + "\u2026\" (1.4 MB),");
  }
  SECTION("a hostPath that normalizes: both spellings bounded") {
    json pod = alpha_pod();
    pod["spec"]["volumes"] = {{{"name", "v"}, {"hostPath", {{"path", "/dev//nvidia" + kBig}}}}};
    with(judge(pod), policy::RuleId::GpuDeviceAccess, " (/dev/nvidia" + std::string(245, 'a') + "\u2026 (1.4 MB)),");
  }
  SECTION("a 1.4 MB tenant label value") {
    json pod = alpha_pod();
    pod["metadata"]["labels"]["gpu-admission.io/tenant"] = kBig;
    with(judge(pod), policy::RuleId::TenantLabel, "label gpu-admission.io/tenant=" + kQuotedBig + " differs");
  }
  SECTION("a 1.4 MB volume mount path at the device list") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["volumeMounts"] = {
        {{"name", "v"}, {"mountPath", "/var/run/nvidia-container-devices/" + kBig}}};
    with(judge(pod), policy::RuleId::GpuDeviceAccess, "\u2026\" (1.4 MB) (/run/nvidia-container-devices/");
  }
}

TEST_CASE("bounded messages: resources, quantities and node constraints", "[bounded][messages]") {
  SECTION("a 1.4 MB MIG resource name, in the message and the field") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-" + kBig, 1}};
    const std::string name = "nvidia.com/mig-" + std::string(241, 'a') + "\u2026";
    const auto fs = judge(pod);
    const auto* f = with(fs, policy::RuleId::MigProfile, "requests MIG profile \"");
    if (f) {
      CHECK(f->field == "spec.containers[0].resources.limits[\"" + name + "\" (1.4 MB)]");
      CHECK(f->message.find("(1.4 MB)") != std::string::npos);
    }
  }
  SECTION("two 1.4 MB MIG types") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}, {"nvidia.com/mig-" + kBig, 1}};
    with(judge(pod), policy::RuleId::MigProfile, "uses two MIG types (nvidia.com/mig-");
  }
  SECTION("a 1.4 MB GPU quantity") {
    json pod = alpha_pod();
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpu", "0." + std::string(1400000, '5')}};
    with(judge(pod), policy::RuleId::GpuCap, "\u2026 (1.4 MB), which is");
  }
  SECTION("a 1.4 MB pool selector value") {
    json pod = alpha_pod();
    pod["spec"]["nodeSelector"]["gpu.example.com/pool"] = kBig;
    with(judge(pod), policy::RuleId::TenantPool, "its nodeSelector gpu.example.com/pool=" + kQuotedBig + " names");
  }
  SECTION("many long affinity values: eight shown, then counted") {
    json pod = alpha_pod();
    json values = json::array();
    for (int i = 0; i < 100; ++i) values.push_back(std::string(300, static_cast<char>('a' + i % 26)));
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = {
        {{"matchExpressions", {{{"key", "nvidia.com/gpu.replicas"}, {"operator", "In"}, {"values", values}}}}}};
    const auto fs = judge(pod);
    const auto* f = with(fs, policy::RuleId::GpuSharing, "\u2026 (100 values)]");
    if (f) CHECK(f->message.find(std::string(256, 'h') + "\u2026 (300 B)]") == std::string::npos);
  }
}

TEST_CASE("bounded messages: claim names and runtime classes", "[bounded][messages]") {
  SECTION("a 1.4 MB claim template name") {
    json pod = alpha_pod();
    pod["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", kBig}}};
    with(judge(pod), policy::RuleId::GpuCap, "of ResourceClaimTemplate " + kBareBig + ": not found");
  }
  SECTION("a 1.4 MB resourceClaims entry name") {
    json pod = alpha_pod();
    pod["spec"]["resourceClaims"] = {{{"name", kBig}}};
    with(judge(pod), policy::RuleId::GpuCap, "resourceClaims entry " + kQuotedBig + " names no claim");
  }
  SECTION("a 1.4 MB runtime class") {
    json pod = alpha_pod();
    pod["metadata"]["namespace"] = "team-gamma";
    pod["metadata"]["labels"] = json::object();
    pod["spec"]["nodeSelector"] = {{"gpu.example.com/accelerator", "a30"}};
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.6gb", 1}};
    pod["spec"]["runtimeClassName"] = kBig;
    with(judge(pod), policy::RuleId::GpuDeviceAccess, "uses runtimeClassName " + kQuotedBig + ";");
  }
}

TEST_CASE("bounded messages: decode errors quote keys and kinds bounded", "[bounded][messages]") {
  SECTION("a duplicate 1.4 MB label key") {
    const DecodedPod pod(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{")" + kBig +
                         R"(":"x",")" + kBig + R"(":"y"}},"spec":{"containers":[]}})");
    REQUIRE(pod.error);
    CHECK(pod.error->message == "duplicate key " + kQuotedBig + " (ambiguous JSON is refused)");
    CHECK(pod.error->field.size() < 1024);
  }
  SECTION("a 1.4 MB kind") {
    const DecodedPod pod(R"({"apiVersion":"v1","kind":")" + kBig + R"(","metadata":{"name":"p"}})");
    REQUIRE(pod.error);
    CHECK(pod.error->message == kQuotedBig + " is not a Pod or a workload with a pod template");
  }
  SECTION("a 1.4 MB key on the way to a field that is wrong") {
    const DecodedPod pod(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{")" + kBig +
                         R"(":7}},"spec":{"containers":[]}})");
    REQUIRE(pod.error);
    CHECK(pod.error->field == "metadata.annotations[" + kQuotedBig + "]");
  }
}

TEST_CASE("bounded messages: a 1.4 MB replica type of an ML kind in field paths, exact in the patch",
          "[bounded][messages][ml]") {
  for (const std::string& key : {kBig, "a.b/" + kBig}) {
    json job = json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"q"},
      "spec":{"pytorchReplicaSpecs":{}}})");
    job["spec"]["pytorchReplicaSpecs"][key] = json::parse(
        R"({"template":{"spec":{"containers":[{"name":"c","image":"x","securityContext":{"privileged":true}}]}}})");
    const policy_test::Judged r = policy_test::judge(fixtures(), job, "team-alpha");
    REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
    const std::string shown = key == kBig ? "." + kBareBig : "[\"a.b/" + std::string(252, 'a') + "\u2026\" (1.4 MB)]";
    bool found = false;
    for (const auto& f : r.decision.findings) {
      CHECK(f.field.size() < 1024);
      found = found || f.field == "spec.pytorchReplicaSpecs" + shown + ".template.spec.containers[0].securityContext.privileged";
    }
    CHECK(found);
    // The patch reaches the template by its exact key.
    CHECK(r.mutated["spec"]["pytorchReplicaSpecs"][key]["template"]["metadata"]["labels"].contains("gpu-admission.io/tenant"));
  }
}
