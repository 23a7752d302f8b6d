// hide-gpus: every init, sidecar and app container that asks for no GPU gets
// env NVIDIA_VISIBLE_DEVICES=void unless it sets that variable itself, so an image built with
// NVIDIA_VISIBLE_DEVICES=all cannot see the node's GPUs through the NVIDIA runtime. Checked: the
// exact patch (a new env list, or an append to an existing one), which containers count as
// asking for a GPU, what is left alone, workload template paths, the policy switch, that
// gpu-device-access accepts what hide-gpus adds, and idempotency.
#include <catch2/catch.hpp>

#include <string>

#include "test/policy/mutation_test_support.h"

using namespace gpu_admission;
using namespace mutation_test;

namespace {

const Json kVoidEntry = {{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "void"}};

Json append_op(const std::string& container_path) {
  return Json{{"op", "add"}, {"path", container_path + "/env/-"}, {"value", kVoidEntry}};
}

// A pod of tenant beta, labelled and pinned to its pool h100-coop (no MIG, no pool taint): the
// only mutation left to do is hide-gpus.
Json beta_pod(const Json& containers) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "beta-dev",
                 "labels": {"gpu-admission.io/tenant": "beta", "cost-center": "cc-2077", "example.com/team": "beta"}},
    "spec": {"nodeSelector": {"gpu.example.com/pool": "h100-coop"},
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})");
  pod["spec"]["containers"] = containers;
  return pod;
}

Json container(const std::string& name, const char* extra_json = "{}") {
  Json c = Json::parse(extra_json);
  c["name"] = name;
  c["image"] = "registry.example.com/cuda:12";
  return c;
}

const policy::CompiledPolicy& hide_off_policy() {
  static const policy::CompiledPolicy& p = load_policy(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: hide-off}
spec:
  mutations: {hide-gpus: false}
  defaults: {unmappedGpuPods: allow}
)",
                                                       "hide-off.yaml");
  return p;
}

}  // namespace

TEST_CASE("hide-gpus: every container kind that asks for no GPU gets NVIDIA_VISIBLE_DEVICES=void", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  Json pod = beta_pod(Json::array({
      container("train", R"({"resources": {"limits": {"nvidia.com/gpu": 1}}})"),
      container("logger", R"({"env": [{"name": "LOG_LEVEL", "value": "info"}]})"),
      container("zero", R"({"resources": {"limits": {"nvidia.com/gpu": 0, "cpu": "1"}}})"),
      container("empty-env", R"({"env": []})"),
  }));
  pod["spec"]["initContainers"] = Json::array({
      container("prep"),
      container("proxy", R"({"restartPolicy": "Always"})"),
      container("warm", R"({"restartPolicy": "Always", "resources": {"requests": {"nvidia.com/gpu.shared": "1"},
                                                                    "limits": {"nvidia.com/gpu.shared": "1"}}})"),
  });
  pod["spec"]["ephemeralContainers"] = Json::array({container("debug")});
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  CHECK(mutated(r.decision, policy::MutationId::HideGpus));
  const Json expected_patch = Json::array({
      void_env_op("/spec/initContainers/0"),
      void_env_op("/spec/initContainers/1"),
      append_op("/spec/containers/1"),
      void_env_op("/spec/containers/2"),
      append_op("/spec/containers/3"),
  });
  CHECK(plain(r.patch) == plain(expected_patch));

  Plain expected = plain(pod);
  for (auto* c : {&expected["spec"]["initContainers"][0], &expected["spec"]["initContainers"][1],
                  &expected["spec"]["containers"][2], &expected["spec"]["containers"][3]})
    (*c)["env"] = Plain::array({plain(kVoidEntry)});
  expected["spec"]["containers"][1]["env"].push_back(plain(kVoidEntry));
  check_applied(p, pod, r, expected);
  // What hide-gpus adds is the one exception gpu-device-access makes.
  CHECK_FALSE(has_finding(r.decision, policy::RuleId::GpuDeviceAccess));
}

TEST_CASE("hide-gpus: containers that ask for a GPU in any form are left alone", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  const char* asks[] = {
      R"({"resources": {"limits": {"nvidia.com/gpu": 1}}})",
      R"({"resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}})",
      R"({"resources": {"limits": {"nvidia.com/gpu.shared": 2}}})",
      R"({"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}})",
      R"({"resources": {"limits": {"nvidia.com/gpu": "500m"}}})",
      R"({"resources": {"limits": {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 1}}})",
      // DRA extended resources of GPU device classes (full and MIG), in requests or limits
      R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}}})",
      R"({"resources": {"requests": {"deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com": "1"}}})",
      R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/mig.nvidia.com": 2}}})",
      R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": "250m"}}})",
      R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/example.com-nic": 1,
                                   "deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}}})",
  };
  for (const char* extra : asks) {
    DYNAMIC_SECTION(extra) {
      Json pod = beta_pod(Json::array({container("train", extra)}));
      auto r = eval(p, pod);
      INFO(findings(r.decision) << r.patch.dump());
      for (const auto& op : r.patch) CHECK(op["path"].get<std::string>().find("/env") == std::string::npos);
      CHECK_FALSE(mutated(r.decision, policy::MutationId::HideGpus));
    }
  }
}

TEST_CASE("hide-gpus: a container that sets NVIDIA_VISIBLE_DEVICES itself is left alone", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  SECTION("to void: nothing to do, allowed") {
    Json pod = beta_pod(Json::array({container("c", R"({"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]})")}));
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK(r.decision.patch.empty());
    CHECK(r.decision.allowed);
  }
  for (const char* env : {R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])",
                          R"([{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "k"}}}])",
                          R"([{"name": "A", "value": "1"}, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}])"}) {
    DYNAMIC_SECTION("to something else, which gpu-device-access denies: " << env) {
      Json c = container("c");
      c["env"] = Json::parse(env);
      auto r = eval(p, beta_pod(Json::array({c})));
      INFO(findings(r.decision));
      CHECK(r.decision.patch.empty());  // not overwritten, not duplicated
      CHECK(has_finding(r.decision, policy::RuleId::GpuDeviceAccess));
      CHECK_FALSE(r.decision.allowed);
    }
  }
  SECTION("envFrom does not count: an explicit env entry overrides it") {
    Json pod = beta_pod(Json::array({container("c", R"({"envFrom": [{"configMapRef": {"name": "cuda-env"}}]})")}));
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK(plain(r.patch) == plain(Json::array({void_env_op("/spec/containers/0")})));
    CHECK(r.decision.allowed);
    check_idempotent(p, r);
  }
}

TEST_CASE("hide-gpus: in every namespace but exempt ones, and only when mutating", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "sandbox"},
                             "spec": {"containers": [{"name": "web", "image": "x"}]}})");
  SECTION("a namespace of no tenant") {
    auto r = eval(p, pod);
    CHECK(plain(r.patch) == plain(Json::array({void_env_op("/spec/containers/0")})));
    CHECK(r.decision.allowed);
    check_idempotent(p, r);
  }
  SECTION("an exempt namespace") {
    pod["metadata"]["namespace"] = "kube-system";
    auto r = eval(p, pod);
    CHECK(r.decision.exempt);
    CHECK(r.decision.patch.empty());
  }
  SECTION("judged as received (/validate): no patch, and a missing void is no finding") {
    auto r = eval(p, pod, "", false);
    INFO(findings(r.decision));
    CHECK(r.decision.patch.empty());
    CHECK(r.decision.findings.empty());
    CHECK(r.decision.allowed);
  }
  SECTION("hide-gpus: false in the policy") {
    auto r = eval(hide_off_policy(), pod);
    CHECK(r.decision.patch.empty());
    CHECK_FALSE(mutated(r.decision, policy::MutationId::HideGpus));
  }
}

TEST_CASE("hide-gpus: workload templates are patched under their pod template pointer", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  const Json tmpl = Json::parse(R"({"metadata": {"labels": {"gpu-admission.io/tenant": "beta", "cost-center": "cc-2077",
                                                           "example.com/team": "beta"}},
    "spec": {"initContainers": [{"name": "init", "image": "x"}],
             "containers": [{"name": "app", "image": "x", "env": [{"name": "A", "value": "1"}]}]}})");
  SECTION("Deployment") {
    Json deploy = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "d", "namespace": "beta-dev"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}})");
    deploy["spec"]["template"] = tmpl;
    auto r = eval(p, deploy);
    INFO(findings(r.decision));
    CHECK(plain(r.patch) == plain(Json::array({void_env_op("/spec/template/spec/initContainers/0"),
                                               append_op("/spec/template/spec/containers/0")})));
    Plain expected = plain(deploy);
    expected["spec"]["template"]["spec"]["initContainers"][0]["env"] = Plain::array({plain(kVoidEntry)});
    expected["spec"]["template"]["spec"]["containers"][0]["env"].push_back(plain(kVoidEntry));
    check_applied(p, deploy, r, expected);
  }
  SECTION("CronJob") {
    Json cron = Json::parse(R"({"apiVersion": "batch/v1", "kind": "CronJob",
      "metadata": {"name": "c", "namespace": "beta-dev"}, "spec": {"schedule": "@daily", "jobTemplate": {"spec": {}}}})");
    cron["spec"]["jobTemplate"]["spec"]["template"] = tmpl;
    auto r = eval(p, cron);
    INFO(findings(r.decision));
    CHECK(plain(r.patch) == plain(Json::array({void_env_op("/spec/jobTemplate/spec/template/spec/initContainers/0"),
                                               append_op("/spec/jobTemplate/spec/template/spec/containers/0")})));
    check_idempotent(p, r);
  }
}

TEST_CASE("hide-gpus: a DRA extended resource of a class that hands out no GPUs asks for no GPU", "[mutations][hide-gpus]") {
  const auto& p = fixture_policy();
  Json pod = beta_pod(Json::array({
      container("train", R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}}})"),
      container("net", R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/nic.example.com": 1}}})"),
      container("zero", R"({"resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 0}}})"),
  }));
  pod["spec"]["initContainers"] = Json::array({
      container("proxy", R"({"restartPolicy": "Always",
                              "resources": {"requests": {"deviceclass.resource.kubernetes.io/mig.nvidia.com": 1}}})"),
  });
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  CHECK(plain(r.patch) == plain(Json::array({void_env_op("/spec/containers/1"), void_env_op("/spec/containers/2")})));
  CHECK(r.decision.gpu_slices == 2 * 7);  // the sidecar's MIG device counts as a whole GPU beside the app's one
}

TEST_CASE("hide-gpus: a pod with a GPU-sharing annotation is left alone; other annotations change nothing",
          "[mutations][hide-gpus][gpu-sharing]") {
  const auto& p = fixture_policy();
  for (const char* key : {"gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"}) {
    DYNAMIC_SECTION(key) {
      Json pod = beta_pod(Json::array({container("infer"), container("sidecar")}));
      pod["metadata"]["annotations"] = {{key, "0.5"}};
      auto r = eval(p, pod);
      INFO(findings(r.decision) << r.patch.dump());
      CHECK(r.decision.allowed);  // h100-coop is cooperative
      CHECK_FALSE(mutated(r.decision, policy::MutationId::HideGpus));
      for (const auto& op : r.patch) CHECK(op["path"].get<std::string>().find("/env") == std::string::npos);
    }
  }
  // A key that is not in spec.gpuSharingAnnotations hands out no GPU: both containers are hidden.
  Json near = beta_pod(Json::array({container("infer"), container("sidecar")}));
  near["metadata"]["annotations"] = {{"kai.scheduler/gpu-fraction", "0.5"}};
  auto r = eval(p, near);
  CHECK(mutated(r.decision, policy::MutationId::HideGpus));
  CHECK(r.patch.size() == 2);
}
