// Red-team tests of gpu-device-access, second part: volume mounts where the NVIDIA toolkit reads a
// device list (/var/run/nvidia-container-devices, a mount there of any volume selects devices),
// and the policy's own device env names (spec.gpuEnvVars). Each as a class: every container kind,
// every spelling the normalization folds, the toolkit's plain string prefix, the neighbours that
// must stay allowed, workload templates and ML kinds (the same decoder), and the loader's checks.
// The expected lists are written from the rule's contract and docs/design.md.
#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

#include "policy/base/ids.h"
#include "policy/config/policy_loader.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/evaluation/evaluator.h"
#include "policy/evaluation/decision.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

const policy::CompiledPolicy& load(const std::string& text) {
  static std::deque<webhook::PolicyLoad> keep;  // the policies live for the whole test run
  webhook::PolicyLoad loaded = webhook::load_policy_text(text, "inline.yaml");
  if (!loaded.ok()) FAIL("policy does not load:\n" << loaded.report());
  keep.push_back(std::move(loaded));
  return *keep.back().policy;
}

// hide-gpus off: pods are judged as written.
const policy::CompiledPolicy& site() {
  static const policy::CompiledPolicy& p = load(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: site}
spec:
  gpuEnvVars: [SITE_GPU_DEVICES, HAMI_OFF, "vendor.io/devices", NVIDIA_GDS, HAMI_OFF]
  mutations: {hide-gpus: false}
)");
  return p;
}

std::vector<policy::Finding> gda(const policy::CompiledPolicy& p, const Json& object) {
  policy_test::Judged r = policy_test::judge(p, object, "sandbox");
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  std::vector<policy::Finding> out;
  for (const auto& f : r.decision.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) out.push_back(f);
  return out;
}

std::string all(const std::vector<policy::Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

struct Kind {
  const char* list;
  bool sidecar;
};
const std::vector<Kind> kKinds = {
    {"containers", false}, {"initContainers", false}, {"initContainers", true}, {"ephemeralContainers", false}};

// A pod whose container under test (index 0 of `kind.list`) mounts a harmless path, then `path`.
Json pod_with_mount(const Kind& kind, const std::string& path) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "sandbox"},
      "spec": {"containers": [], "volumes": [{"name": "scratch", "emptyDir": {}},
                                             {"name": "null", "hostPath": {"path": "/dev/null"}}]}})");
  Json c = {{"name", "under-test"}, {"image", "registry.example.com/app:1"}};
  c["volumeMounts"] = Json::array({{{"name", "scratch"}, {"mountPath", "/scratch"}}, {{"name", "null"}, {"mountPath", path}}});
  if (kind.sidecar) c["restartPolicy"] = "Always";
  pod["spec"][kind.list] = Json::array({c});
  if (std::string(kind.list) != "containers")
    pod["spec"]["containers"].push_back({{"name", "main"}, {"image", "registry.example.com/app:1"}});
  return pod;
}

std::string mount_field(const Kind& kind) { return std::string("spec.") + kind.list + "[0].volumeMounts[1].mountPath"; }

// Paths the toolkit reads as a device list, in spellings the normalization folds, and
// the toolkit's plain string prefix (docs/design.md).
const std::vector<std::string> kDeviceListPaths = {
    "/var/run/nvidia-container-devices", "/var/run/nvidia-container-devices/all",
    "/var/run/nvidia-container-devices/GPU-8f6c1a2e", "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all",
    "/var/run/nvidia-container-devices/imex/0", "/run/nvidia-container-devices/all", "/var//run/nvidia-container-devices/0",
    "/var/run/./nvidia-container-devices/all/", "/var/lib/../run/nvidia-container-devices/all",
    "/run/../var/run/nvidia-container-devices/all", "//var/run//nvidia-container-devices//all//",
    "var/run/nvidia-container-devices/all", "/var/run/nvidia-container-devices/x/../all",
    "/var/run/nvidia-container-devicesall", "/var/run/nvidia-container-devices-all"};
// Beside it, or normalizing out of it.
const std::vector<std::string> kNeighbours = {
    "/var/run/nvidia-container-device", "/var/run/nvidia-container-devices/..", "/var/run/nvidia-container-devices/../x",
    "/data/nvidia-container-devices/all", "/var/run/secrets/kubernetes.io/serviceaccount", "/var/run", "/run",
    "/run/nvidia", "/var/lib/nvidia-container-devices", "/var/runnvidia-container-devices/all", "/dev/shm", "/"};

Json env_pod(const Kind& kind, const Json& entry, const char* prefix = nullptr) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "sandbox"},
      "spec": {"containers": []}})");
  Json c = {{"name", "under-test"}, {"image", "registry.example.com/app:1"}};
  c["env"] = Json::array({{{"name", "HARMLESS"}, {"value", "1"}}});
  if (!entry.is_null()) c["env"].push_back(entry);
  if (prefix) c["envFrom"] = Json::array({{{"prefix", prefix}, {"configMapRef", {{"name", "keys"}}}}});
  if (kind.sidecar) c["restartPolicy"] = "Always";
  pod["spec"][kind.list] = Json::array({c});
  if (std::string(kind.list) != "containers")
    pod["spec"]["containers"].push_back({{"name", "main"}, {"image", "registry.example.com/app:1"}});
  return pod;
}

}  // namespace

TEST_CASE("a volume mount at the toolkit's device list is denied in every container kind and spelling",
          "[gpu-device-access][mounts]") {
  for (const auto& kind : kKinds) {
    for (const auto& path : kDeviceListPaths) {
      INFO(kind.list << (kind.sidecar ? " (sidecar) " : " ") << path);
      auto fs = gda(site(), pod_with_mount(kind, path));
      INFO(all(fs));
      REQUIRE(fs.size() == 1);
      CHECK(fs[0].field == mount_field(kind));
      CHECK(fs[0].message.find("mounts volume \"null\" at \"" + path + "\"") != std::string::npos);
      CHECK(fs[0].message.find("device list") != std::string::npos);
    }
    for (const auto& path : kNeighbours) {
      auto fs = gda(site(), pod_with_mount(kind, path));
      INFO(kind.list << " " << path << ": " << all(fs));
      CHECK(fs.empty());
    }
  }
  // The message names the container and, when it differs, the normalized path.
  auto fs = gda(site(), pod_with_mount(kKinds[3], "/var/lib/../run/nvidia-container-devices/all"));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].message == "ephemeral container \"under-test\" mounts volume \"null\" at "
                         "\"/var/lib/../run/nvidia-container-devices/all\" (/run/nvidia-container-devices/all), where "
                         "the NVIDIA container toolkit reads a device list: it bypasses the device plugin");
}

TEST_CASE("device list mounts in workload templates and ML kinds name the template's field",
          "[gpu-device-access][mounts]") {
  const Json pod_spec = pod_with_mount(kKinds[0], "/var/run/nvidia-container-devices/all")["spec"];
  Json deployment = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "d", "namespace": "sandbox"},
      "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}}}})");
  deployment["spec"]["template"]["spec"] = pod_spec;
  auto fs = gda(site(), deployment);
  INFO(all(fs));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].field == "spec.template.spec.containers[0].volumeMounts[1].mountPath");

  Json cronjob = Json::parse(R"({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "sandbox"},
      "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {}}}}})");
  cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"] = pod_spec;
  fs = gda(site(), cronjob);
  INFO(all(fs));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].field == "spec.jobTemplate.spec.template.spec.containers[0].volumeMounts[1].mountPath");

  Json job = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t", "namespace": "sandbox"},
      "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}})");
  job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"] = pod_spec;
  job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] =
      Json::array({{{"name", "SITE_GPU_DEVICES"}, {"value", "all"}}});
  fs = gda(site(), job);
  INFO(all(fs));
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].field == "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[0]");
  CHECK(fs[1].field == "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].volumeMounts[1].mountPath");
}

TEST_CASE("volumeMounts are decoded as the API server reads them: escapes, wrong types, repeated keys",
          "[gpu-device-access][mounts]") {
  // An escape spells the path: judged as decoded, straight from the JSON text.
  const std::string text = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"sandbox"},)"
                           R"("spec":{"ephemeralContainers":[{"name":"dbg","image":"x","volumeMounts":[)"
                           R"({"name":"v","mountPath":"\/var\/run\/nvidia-container-devic\u0065s\/all"}]}],)"
                           R"("containers":[{"name":"main","image":"x","volumeMounts":[{"mountPath":"/a","name":"w"}]}]}})";
  policy::PodDocument document;
  policy::PodView view;
  REQUIRE_FALSE(policy::decode_pod_json(text, false, view, document, site().gpu_env_vars()));
  REQUIRE(view.containers.size() == 2);
  const auto& mounts = view.containers[1].volume_mounts;  // ephemeral containers come last
  REQUIRE(mounts.size() == 1);
  CHECK(mounts[0].name == "v");
  CHECK(mounts[0].mount_path == "/var/run/nvidia-container-devices/all");
  REQUIRE(view.containers[0].volume_mounts.size() == 1);
  CHECK(view.containers[0].volume_mounts[0].mount_path == "/a");
  policy::Decision decision;
  policy::evaluate(site(), view, policy::EvalOptions{}, decision);
  std::vector<std::string> fields;
  for (const auto& f : decision.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) fields.push_back(f.field);
  CHECK(fields == std::vector<std::string>{"spec.ephemeralContainers[0].volumeMounts[0].mountPath"});
  // A repeated key is ambiguous: refused.
  const std::string repeated = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[)"
                               R"({"name":"m","volumeMounts":[{"name":"v","mountPath":"/a","mountPath":"/var/run/x"}]}]}})";
  auto err = policy::decode_pod_json(repeated, false, view, document);
  REQUIRE(err);
  CHECK(err->message.find("duplicate key \"mountPath\"") != std::string::npos);
  // A mountPath that is not a string is an error naming the field; volumeMounts must be a list.
  Json bad = pod_with_mount(kKinds[0], "/x");
  bad["spec"]["containers"][0]["volumeMounts"][1]["mountPath"] = 5;
  auto r = policy_test::judge(site(), bad, "sandbox");
  CHECK(r.status == policy_test::Judged::Status::Error);
  CHECK(r.note.find("spec.containers[0].volumeMounts[1].mountPath") != std::string::npos);
  bad = pod_with_mount(kKinds[0], "/x");
  bad["spec"]["containers"][0]["volumeMounts"] = {{"name", "v"}};
  r = policy_test::judge(site(), bad, "sandbox");
  CHECK(r.status == policy_test::Judged::Status::Error);
  CHECK(r.note.find("spec.containers[0].volumeMounts") != std::string::npos);
}

TEST_CASE("spec.gpuEnvVars names are denied in every container kind, as a value or valueFrom, and as envFrom prefixes",
          "[gpu-device-access][env]") {
  for (const auto& kind : kKinds) {
    const std::string list = std::string("spec.") + kind.list + "[0]";
    for (const char* name : {"SITE_GPU_DEVICES", "HAMI_OFF", "vendor.io/devices", "NVIDIA_GDS"}) {
      for (const Json& how : {Json{{"value", "all"}}, Json{{"value", ""}},
                              Json{{"valueFrom", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}}},
                              Json{{"valueFrom", {{"fileKeyRef", {{"volumeName", "v"}, {"path", "p"}, {"key", "k"}}}}}}}) {
        Json entry = {{"name", name}};
        for (auto& [k, v] : how.items()) entry[k] = v;
        auto fs = gda(site(), env_pod(kind, entry));
        INFO(kind.list << " " << entry.dump() << ": " << all(fs));
        REQUIRE(fs.size() == 1);
        CHECK(fs[0].field == list + ".env[1]");
      }
    }
    // Prefixes that can spell one with a non-empty key; and ones that cannot.
    for (const char* prefix : {"S", "SITE_", "SITE_GPU_DEVICE", "HAMI_", "vendor.io/", "H"}) {
      auto fs = gda(site(), env_pod(kind, nullptr, prefix));
      INFO(kind.list << " prefix " << prefix << ": " << all(fs));
      REQUIRE(fs.size() == 1);
      CHECK(fs[0].field == list + ".envFrom[0].prefix");
      CHECK(fs[0].message.find("which can set ") != std::string::npos);
    }
    for (const char* prefix : {"SITE_GPU_DEVICES", "HAMI_OFF", "site_", "X"}) {
      auto fs = gda(site(), env_pod(kind, nullptr, prefix));
      INFO(kind.list << " prefix " << prefix << ": " << all(fs));
      CHECK(fs.empty());
    }
    // Near names are read (they contain a name) and compared exactly.
    for (const char* near : {"SITE_GPU_DEVICES_X", "MY_SITE_GPU_DEVICES", "site_gpu_devices", "HAMI_OF", "vendor.io"}) {
      auto fs = gda(site(), env_pod(kind, {{"name", near}, {"value", "all"}}));
      INFO(kind.list << " " << near << ": " << all(fs));
      CHECK(fs.empty());
    }
  }
}

TEST_CASE("spec.gpuEnvVars: the loader's checks, and policy show", "[gpu-device-access][policy]") {
  auto issues = [](const std::string& list) {
    webhook::PolicyLoad loaded = webhook::load_policy_text(
        "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nmetadata: {name: x}\nspec:\n  gpuEnvVars: " +
            list + "\n",
        "x.yaml");
    return loaded.ok() ? std::string() : loaded.report();
  };
  CHECK(issues("[]").empty());
  CHECK(issues("[A, A, NVIDIA_VISIBLE_DEVICES, \"with space\", \"x.y/z-1\"]").empty());  // duplicates are harmless
  CHECK(issues("[\"\"]").find("spec.gpuEnvVars[0]") != std::string::npos);
  CHECK(issues("[OK, \"A=B\"]").find("spec.gpuEnvVars[1]: must be an env var name") != std::string::npos);
  CHECK(issues("[\"caf\\u00e9\"]").find("spec.gpuEnvVars[0]: must be an env var name") != std::string::npos);
  CHECK(issues("[\"tab\\there\"]").find("spec.gpuEnvVars[0]") != std::string::npos);
  CHECK(issues("[5]").find("spec.gpuEnvVars[0]: must be a string") != std::string::npos);
  CHECK(issues("X").find("spec.gpuEnvVars: must be a list of strings") != std::string::npos);
  const Json shown = policy::policy_config_to_json(site().config());
  CHECK(shown["spec"]["gpuEnvVars"] ==
        Json::array({"SITE_GPU_DEVICES", "HAMI_OFF", "vendor.io/devices", "NVIDIA_GDS", "HAMI_OFF"}));
  CHECK(policy::policy_config_to_json(policy::PolicyConfig{})["spec"]["gpuEnvVars"] == Json::array());
}
