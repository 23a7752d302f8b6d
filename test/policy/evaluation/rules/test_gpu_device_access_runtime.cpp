// Red-team tests of gpu-device-access's runtime class check (policy/evaluation/rules/
// gpu_device_access_runtime.cpp): the runtime class of GPU pods (spec.runtimeClasses, overridden
// per pool; a pod without one runs with the node's default handler and is refused where a list
// applies).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "device_access_test_support.h"

using namespace device_access_test;

TEST_CASE("runtime classes: the pool's list, else spec.runtimeClasses, for GPU pods only", "[gpu-device-access][runtime-class]") {
  struct Case {
    std::string pool, ns;
    const char* runtime_class;
    int gpus;
    bool refused;
    std::string words;  // in the message when refused
  };
  const Case cases[] = {
      {"kata", "team", "kata-nvidia", 1, false, ""},
      {"kata", "team", "nvidia", 1, true, "pool \"kata\" allows only \"kata-nvidia\""},  // the pool's list replaces the global one
      {"kata", "team", nullptr, 1, true, "sets no runtimeClassName, so it runs with the node's default runtime handler"},
      {"kata", "team", "runc", 0, false, ""},  // no GPU: not judged
      {"plain", "team", "nvidia-cdi", 1, false, ""},
      {"plain", "team", "kata-nvidia", 1, true, "spec.runtimeClasses allows only \"nvidia\", \"nvidia-cdi\""},
      {"plain", "team", nullptr, 2, true, "node's default runtime handler"},
      {"empty", "team", "nvidia", 1, false, ""},  // runtimeClasses: [] inherits
      {"empty", "team", "runc", 1, true, "spec.runtimeClasses allows"},
      {"", "nowhere", "nvidia", 1, false, ""},  // no pool: the global list
      {"", "nowhere", "kata-nvidia", 1, true, "spec.runtimeClasses allows"},
      {"", "nowhere", nullptr, 0, false, ""},
      {"", "team", "runc", 1, true, "spec.runtimeClasses allows"},  // pinned to the default pool plain by /mutate
  };
  for (const auto& c : cases) {
    INFO("pool " << c.pool << ", namespace " << c.ns << ", runtimeClassName " << (c.runtime_class ? c.runtime_class : "(none)")
                 << ", GPUs " << c.gpus);
    auto r = judge(gpu_pod(c.pool, c.runtime_class, c.gpus, c.ns));
    INFO(shown(r.decision));
    auto found = access_findings(r.decision);
    if (!c.refused) {
      CHECK(found.empty());
      continue;
    }
    REQUIRE(found.size() == 1);
    CHECK(found[0].action == policy::Action::Deny);
    CHECK(found[0].field == "spec.runtimeClassName");
    CHECK(found[0].message.find(c.words) != std::string::npos);
    if (c.runtime_class) CHECK(found[0].message.find(std::string("\"") + c.runtime_class + "\"") != std::string::npos);
    CHECK_FALSE(r.decision.allowed);
  }
}

TEST_CASE("runtime classes: GPUs through any container kind or a DRA claim; workload templates and ML kinds",
          "[gpu-device-access][runtime-class]") {
  SECTION("a GPU in a sidecar or an init container makes a GPU pod") {
    for (const bool sidecar : {true, false}) {
      INFO("sidecar " << sidecar);
      Json pod = gpu_pod("kata", "runc", 0);
      pod["spec"]["initContainers"] =
          Json::parse(R"([{"name": "x", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}])");
      if (sidecar) pod["spec"]["initContainers"][0]["restartPolicy"] = "Always";
      auto r = judge(pod);
      INFO(shown(r.decision));
      CHECK(access_findings(r.decision).size() == 1);
    }
  }
  SECTION("a DRA claim that cannot be found makes a GPU pod") {
    Json pod = gpu_pod("kata", "runc", 0);
    pod["spec"]["resourceClaims"] = Json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "later"}])");
    pod["spec"]["containers"][0]["resources"]["claims"] = Json::parse(R"([{"name": "gpu"}])");
    auto r = judge(pod);
    INFO(shown(r.decision));
    CHECK(access_findings(r.decision).size() == 1);
  }
  SECTION("a Deployment's and a CronJob's templates name the field in the template") {
    Json deploy = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", {{"name", "d"}, {"namespace", "team"}}}};
    Json pod = gpu_pod("kata", "runc");
    deploy["spec"]["template"] = {{"spec", pod["spec"]}};
    auto r = judge(deploy);
    INFO(shown(r.decision));
    REQUIRE(access_findings(r.decision).size() == 1);
    CHECK(access_findings(r.decision)[0].field == "spec.template.spec.runtimeClassName");
    Json cron = {{"apiVersion", "batch/v1"}, {"kind", "CronJob"}, {"metadata", {{"name", "c"}, {"namespace", "team"}}}};
    cron["spec"]["jobTemplate"]["spec"]["template"] = {{"spec", pod["spec"]}};
    auto rc = judge(cron);
    REQUIRE(access_findings(rc.decision).size() == 1);
    CHECK(access_findings(rc.decision)[0].field == "spec.jobTemplate.spec.template.spec.runtimeClassName");
  }
  SECTION("a PyTorchJob's worker template") {
    Json job = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "team"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}})");
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] = {{"spec", gpu_pod("kata", nullptr)["spec"]}};
    auto r = judge(job);
    INFO(shown(r.decision));
    CHECK_FALSE(r.decision.allowed);
    bool found = false;
    for (const auto& t : r.templates)
      for (const auto& f : access_findings(t.decision))
        found = found || f.field == "spec.pytorchReplicaSpecs.Worker.template.spec.runtimeClassName";
    CHECK(found);
  }
  SECTION("a runtimeClassName that is not a string is an error, as the API server says") {
    Json pod = gpu_pod("kata", nullptr);
    pod["spec"]["runtimeClassName"] = 7;
    auto r = policy_test::judge(the_policy(), pod, "team");
    CHECK(r.status == policy_test::Judged::Status::Error);
    CHECK(r.note.find("spec.runtimeClassName") != std::string::npos);
  }
}
