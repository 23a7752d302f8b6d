// Mutations through the path `check` takes (policy_test::judge, policy_judge.h): the exact JSON Patch
// operations, that nlohmann's RFC 6902 implementation applies them to the expected object,
// idempotency, and that validation sees the mutated pod. More: test_mig_resources.cpp,
// test_hide_gpus.cpp, test_validate_as_received.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "test/policy/mutation_test_support.h"

using namespace gpu_admission;
using namespace mutation_test;

namespace {

// A policy whose pool selector key and full-GPU resource name need JSON Pointer escaping.
const policy::CompiledPolicy& escaping_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(
apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: escaping}
spec:
  gpuResources:
    full: [nvidia.com/gpu, "example.com/gpu~x"]
  pools:
    - name: tilde
      nodeSelector: {"example.com/pool~name": tilde}
      trust: cooperative
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
  tenants:
    - name: tilde-tenant
      namespaces: [tilde-ns]
      pools: [tilde]
      defaultPool: tilde
)",
                                                                     "escaping-policy.yaml");
  if (!load.ok()) FAIL("the escaping policy does not load:\n" << load.report());
  return *load.policy;
}

}  // namespace

TEST_CASE("pointer tokens escape '~' as ~0 and '/' as ~1", "[mutations]") {
  CHECK(policy::pointer_token("nvidia.com/gpu") == "nvidia.com~1gpu");
  CHECK(policy::pointer_token("a~b") == "a~0b");
  CHECK(policy::pointer_token("x/~1") == "x~1~01");
  CHECK(policy::pointer_token("plain") == "plain");
}

TEST_CASE("mig-resources (mixed): nvidia.com/gpu in requests and limits becomes the default profile", "[mutations]") {
  const auto& p = fixture_policy();
  // Tenant alpha, no pool named: default pool a100-secure (mixed, defaultProfile 1g.10gb).
  Json pod = gpu_pod("team-alpha", Json::parse(R"({"requests": {"nvidia.com/gpu": "2", "cpu": "1"},
                                                   "limits": {"nvidia.com/gpu": 2}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  REQUIRE(r.decision.pool != nullptr);
  CHECK(r.decision.pool->name == "a100-secure");
  CHECK(mutated(r.decision, policy::MutationId::MigResources));
  CHECK(mutated(r.decision, policy::MutationId::TenantLabels));
  CHECK(mutated(r.decision, policy::MutationId::PoolSelector));

  const Json expected_patch = Json::parse(R"([
    {"op": "remove", "path": "/spec/containers/0/resources/requests/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/0/resources/requests/nvidia.com~1mig-1g.10gb", "value": "2"},
    {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb", "value": 2},
    {"op": "add", "path": "/metadata/annotations", "value": {}},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb\",\"containers\":[\"train\"]}"},
    {"op": "add", "path": "/metadata/labels", "value": {}},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-1042"},
    {"op": "add", "path": "/spec/nodeSelector", "value": {}},
    {"op": "add", "path": "/spec/nodeSelector/gpu.example.com~1pool", "value": "a100-secure"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));

  Plain expected = plain(pod);
  expected["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  expected["metadata"]["annotations"] = {
      {"gpu-admission.io/mig-injected", R"({"strategy":"mixed","profile":"1g.10gb","containers":["train"]})"}};
  expected["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-secure"}};
  expected["spec"]["containers"][0]["resources"] =
      Plain::parse(R"({"requests": {"nvidia.com/mig-1g.10gb": "2", "cpu": "1"}, "limits": {"nvidia.com/mig-1g.10gb": 2}})");
  check_applied(p, pod, r, expected);

  // Validation saw the converted pod: 2 x 1g.10gb is 2/7 of a GPU.
  CHECK(r.decision.gpu_slices == 2);
  CHECK(r.decision.slices_per_gpu == 7);
}

TEST_CASE("mig-resources (mixed): every container kind but ephemeral, existing annotations kept", "[mutations]") {
  const auto& p = fixture_policy();
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "multi", "namespace": "team-alpha", "annotations": {"note": "keep"},
                 "labels": {"app": "multi"}},
    "spec": {"nodeSelector": {"gpu.example.com/pool": "a100-secure"},
      "initContainers": [
        {"name": "warmup", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}},
        {"name": "proxy", "image": "x", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
      "containers": [
        {"name": "cpu", "image": "x", "resources": {"limits": {"cpu": "1"}}},
        {"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 3}}}],
      "ephemeralContainers": [{"name": "debug", "image": "x"}]}})");
  pod["spec"]["tolerations"] = Json::parse(kSecureTolerations);
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  const Json expected_patch = Json::parse(R"([
    {"op": "remove", "path": "/spec/initContainers/0/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/initContainers/0/resources/limits/nvidia.com~1mig-1g.10gb", "value": 1},
    {"op": "remove", "path": "/spec/initContainers/1/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/initContainers/1/resources/limits/nvidia.com~1mig-1g.10gb", "value": 1},
    {"op": "remove", "path": "/spec/containers/1/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/1/resources/limits/nvidia.com~1mig-1g.10gb", "value": 3},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb\",\"containers\":[\"warmup\",\"proxy\",\"train\"]}"},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-1042"},
    {"op": "add", "path": "/spec/containers/0/env", "value": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  // Pool named by the pod: pool-selector has nothing to do. hide-gpus: only "cpu" asks for no
  // GPU (the ephemeral container cannot be part of a CREATE and is left alone).
  CHECK_FALSE(mutated(r.decision, policy::MutationId::PoolSelector));
  CHECK(mutated(r.decision, policy::MutationId::HideGpus));

  Plain expected = plain(pod);
  expected["metadata"]["annotations"]["gpu-admission.io/mig-injected"] =
      R"({"strategy":"mixed","profile":"1g.10gb","containers":["warmup","proxy","train"]})";
  expected["metadata"]["labels"]["gpu-admission.io/tenant"] = "alpha";
  expected["metadata"]["labels"]["cost-center"] = "cc-1042";
  expected["spec"]["initContainers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  expected["spec"]["initContainers"][1]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  expected["spec"]["containers"][1]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 3}};
  expected["spec"]["containers"][0]["env"] = Plain::parse(R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])");
  check_applied(p, pod, r, expected);
  // sidecar 1 + app 3 = 4 slices (the init container's 1 + sidecar 1 is less).
  CHECK(r.decision.gpu_slices == 4);
}

TEST_CASE("mig-resources: the mig-profile annotation chooses the profile", "[mutations]") {
  const auto& p = fixture_policy();
  Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"));
  pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "1g.10gb+me"}};
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  const Json expected_patch = Json::parse(R"([
    {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb.me", "value": 1},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb+me\",\"containers\":[\"train\"]}"},
    {"op": "add", "path": "/metadata/labels", "value": {}},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-1042"},
    {"op": "add", "path": "/spec/nodeSelector", "value": {}},
    {"op": "add", "path": "/spec/nodeSelector/gpu.example.com~1pool", "value": "a100-secure"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  Plain expected = plain(pod);
  expected["metadata"]["annotations"]["gpu-admission.io/mig-injected"] =
      R"({"strategy":"mixed","profile":"1g.10gb+me","containers":["train"]})";
  expected["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  expected["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-secure"}};
  expected["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb.me", 1}};
  check_applied(p, pod, r, expected);

  SECTION("a bigger profile counts its slices") {
    pod["metadata"]["annotations"]["gpu-admission.io/mig-profile"] = "3g.40gb";
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2;
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(r2.decision.allowed);
    CHECK(plain(r2.mutated)["spec"]["containers"][0]["resources"]["limits"] == Plain{{"nvidia.com/mig-3g.40gb", 2}});
    CHECK(r2.decision.gpu_slices == 6);
  }
}

TEST_CASE("mig-resources: an invalid mig-profile annotation falls back to the default profile and is denied",
          "[mutations]") {
  const auto& p = fixture_policy();
  Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"));
  pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "3g.20gb"}};  // an A100-40GB profile
  auto r = eval(p, pod);
  INFO(findings(r.decision) << r.patch.dump());
  // Never a way to skip the conversion: the pool's defaultProfile is used.
  CHECK(mutated(r.decision, policy::MutationId::MigResources));
  const Json expected_patch = Json::parse(R"([
    {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb", "value": 1},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb\",\"containers\":[\"train\"]}"},
    {"op": "add", "path": "/metadata/labels", "value": {}},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-1042"},
    {"op": "add", "path": "/spec/nodeSelector", "value": {}},
    {"op": "add", "path": "/spec/nodeSelector/gpu.example.com~1pool", "value": "a100-secure"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  Plain expected = plain(pod);
  expected["metadata"]["annotations"]["gpu-admission.io/mig-injected"] =
      R"({"strategy":"mixed","profile":"1g.10gb","containers":["train"]})";
  expected["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  expected["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-secure"}};
  expected["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  check_applied(p, pod, r, expected);  // denied again, for the same reason, with no new patch

  // The annotation is still reported, and it is the only thing wrong: the whole GPU is gone.
  CHECK_FALSE(r.decision.allowed);
  CHECK(denies_at(r.decision, policy::RuleId::MigProfile, "metadata.annotations[\"gpu-admission.io/mig-profile\"]",
                  "\"3g.20gb\""));
  CHECK(count_findings(r.decision, policy::RuleId::MigProfile) == 1);
  CHECK(r.decision.findings.size() == 1);
  CHECK(r.decision.gpu_slices == 1);

  SECTION("in a single pool the default profile's product is selected") {
    pod["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-single"}};
    pod["spec"]["tolerations"] = Json::parse(kGpuToleration);
    pod["metadata"]["annotations"]["gpu-admission.io/mig-profile"] = "1g.20gb";  // an 80GB-only profile
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(plain(r2.mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "A100-SXM4-40GB-MIG-3g.20gb");
    CHECK(denies_at(r2.decision, policy::RuleId::MigProfile,
                    "metadata.annotations[\"gpu-admission.io/mig-profile\"]"));
    CHECK(count_findings(r2.decision, policy::RuleId::MigProfile) == 1);
    check_idempotent(p, r2);
  }
}

TEST_CASE("mig-resources (single): pinned to the profile's product label instead", "[mutations]") {
  const auto& p = fixture_policy();
  Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"), kGpuToleration);
  pod["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-single"}};
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  const Json expected_patch = Json::parse(R"([
    {"op": "add", "path": "/spec/nodeSelector/nvidia.com~1gpu.product", "value": "A100-SXM4-40GB-MIG-3g.20gb"},
    {"op": "add", "path": "/metadata/annotations", "value": {}},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"single\",\"profile\":\"3g.20gb\"}"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  CHECK(mutated(r.decision, policy::MutationId::MigResources));
  CHECK_FALSE(mutated(r.decision, policy::MutationId::TenantLabels));  // already right

  Plain expected = plain(pod);
  expected["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-3g.20gb";
  expected["metadata"]["annotations"] = {{"gpu-admission.io/mig-injected", R"({"strategy":"single","profile":"3g.20gb"})"}};
  check_applied(p, pod, r, expected);

  SECTION("the annotation picks the single-strategy profile too") {
    pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "2g.10gb"}};
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(plain(r2.mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "A100-SXM4-40GB-MIG-2g.10gb");
  }
  SECTION("a pod without GPUs is not pinned to a product (only hide-gpus applies)") {
    pod["spec"]["containers"][0].erase("resources");
    auto r2 = eval(p, pod);
    INFO(r2.patch.dump());
    CHECK(plain(r2.patch) == plain(Json::array({void_env_op("/spec/containers/0")})));
    CHECK_FALSE(mutated(r2.decision, policy::MutationId::MigResources));
    CHECK(r2.decision.allowed);
  }
}

TEST_CASE("tenant-labels: adds the tenant label and the tenant's labels, creating metadata.labels", "[mutations]") {
  const auto& p = fixture_policy();
  // The container already hides GPUs, so hide-gpus has nothing to do here (test_hide_gpus.cpp).
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "beta-dev"},
                             "spec": {"containers": [{"name": "web", "image": "x", "env": [{"name":
                                      "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]}})");
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  const Json expected_patch = Json::parse(R"([
    {"op": "add", "path": "/metadata/labels", "value": {}},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "beta"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-2077"},
    {"op": "add", "path": "/metadata/labels/example.com~1team", "value": "beta"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  Plain expected = plain(pod);
  expected["metadata"]["labels"] = {{"gpu-admission.io/tenant", "beta"}, {"cost-center", "cc-2077"}, {"example.com/team", "beta"}};
  check_applied(p, pod, r, expected);
  // A pod without GPUs is never pinned to a pool.
  CHECK(r.decision.pool == nullptr);
  CHECK_FALSE(mutated(r.decision, policy::MutationId::PoolSelector));

  SECTION("existing labels: only the missing ones are added, under the existing map") {
    pod["metadata"]["labels"] = {{"app", "web"}, {"cost-center", "cc-2077"}};
    auto r2 = eval(p, pod);
    const Json expected2 = Json::parse(R"([
      {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "beta"},
      {"op": "add", "path": "/metadata/labels/example.com~1team", "value": "beta"}
    ])");
    CHECK(plain(r2.patch) == plain(expected2));
    Plain exp = plain(pod);
    exp["metadata"]["labels"]["gpu-admission.io/tenant"] = "beta";
    exp["metadata"]["labels"]["example.com/team"] = "beta";
    check_applied(p, pod, r2, exp);
  }
  SECTION("a pod with no metadata at all gets /metadata first") {
    pod.erase("metadata");
    auto r2 = eval(p, pod, "beta-dev");
    const Json expected2 = Json::parse(R"([
      {"op": "add", "path": "/metadata", "value": {}},
      {"op": "add", "path": "/metadata/labels", "value": {}},
      {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "beta"},
      {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-2077"},
      {"op": "add", "path": "/metadata/labels/example.com~1team", "value": "beta"}
    ])");
    CHECK(plain(r2.patch) == plain(expected2));
    Plain applied = plain(pod).patch(plain(r2.patch));
    CHECK(applied["metadata"]["labels"]["gpu-admission.io/tenant"] == "beta");
    auto again = eval(p, r2.mutated, "beta-dev");
    CHECK(again.decision.patch.empty());
  }
  SECTION("an unmapped namespace gets no labels") {
    pod["metadata"]["namespace"] = "sandbox";
    auto r2 = eval(p, pod);
    CHECK(r2.decision.patch.empty());
    CHECK(r2.decision.tenant == nullptr);
  }
  SECTION("an exempt namespace is not mutated") {
    pod["metadata"]["namespace"] = "kube-system";
    auto r2 = eval(p, pod);
    CHECK(r2.decision.exempt);
    CHECK(r2.decision.patch.empty());
  }
}

// (No ';' in test names: CTest splits names there and then runs nothing.)
TEST_CASE("tenant-labels: never overwrites an existing different value, tenant-label denies it", "[mutations]") {
  const auto& p = fixture_policy();
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "team-alpha",
                 "labels": {"gpu-admission.io/tenant": "beta", "cost-center": "cc-9999"}},
    "spec": {"containers": [{"name": "web", "image": "x", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]}})");
  auto r = eval(p, pod);
  INFO(findings(r.decision) << r.patch.dump());
  CHECK(r.decision.patch.empty());
  CHECK_FALSE(mutated(r.decision, policy::MutationId::TenantLabels));
  CHECK(plain(r.mutated) == plain(pod));
  CHECK_FALSE(r.decision.allowed);
  int label_findings = 0;
  for (const auto& f : r.decision.findings)
    if (f.rule == policy::RuleId::TenantLabel && f.action == policy::Action::Deny) ++label_findings;
  CHECK(label_findings == 2);

  SECTION("one wrong, one missing: the missing one is added, the wrong one kept and denied") {
    pod["metadata"]["labels"] = {{"cost-center", "cc-9999"}};
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    const Json expected = Json::parse(R"([
      {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"}
    ])");
    CHECK(plain(r2.patch) == plain(expected));
    CHECK(plain(r2.mutated)["metadata"]["labels"]["cost-center"] == "cc-9999");
    CHECK(has_finding(r2.decision, policy::RuleId::TenantLabel));
    CHECK_FALSE(r2.decision.allowed);
  }
}

TEST_CASE("pool-selector: a GPU pod of a tenant that names no pool gets its default pool", "[mutations]") {
  const auto& p = fixture_policy();
  // Tenant beta, default pool h100-coop (no MIG): only labels and the selector.
  Json pod = gpu_pod("beta-prod", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"), kGpuToleration);
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/arch", "amd64"}};
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "beta"}, {"cost-center", "cc-2077"}, {"example.com/team", "beta"}};
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  const Json expected_patch = Json::parse(R"([
    {"op": "add", "path": "/spec/nodeSelector/gpu.example.com~1pool", "value": "h100-coop"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  Plain expected = plain(pod);
  expected["spec"]["nodeSelector"]["gpu.example.com/pool"] = "h100-coop";
  check_applied(p, pod, r, expected);

  SECTION("a pod without GPUs is never pinned") {
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", "2"}}}};
    auto r2 = eval(p, pod);
    INFO(r2.patch.dump());
    CHECK(plain(r2.patch) == plain(Json::array({void_env_op("/spec/containers/0")})));  // hide-gpus only
    CHECK(r2.decision.pool == nullptr);
    CHECK_FALSE(mutated(r2.decision, policy::MutationId::PoolSelector));
  }
  SECTION("a pod that names its pool is left alone") {
    pod["spec"]["nodeSelector"]["gpu.example.com/pool"] = "h100-coop";
    auto r2 = eval(p, pod);
    CHECK(r2.decision.patch.empty());
  }
  SECTION("a pod that names its pool through required node affinity is left alone") {
    pod["spec"]["affinity"] = Json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu.example.com/pool", "operator": "In", "values": ["h100-coop"]}]}]}}})");
    auto r2 = eval(p, pod);
    INFO(r2.patch.dump());
    CHECK(r2.decision.patch.empty());
    REQUIRE(r2.decision.pool != nullptr);
    CHECK(r2.decision.pool->name == "h100-coop");
  }
  SECTION("a tenant without a default pool: no pinning") {
    pod["metadata"]["namespace"] = "team-gamma";
    pod["metadata"].erase("labels");
    auto r2 = eval(p, pod);
    INFO(r2.patch.dump());
    CHECK(r2.decision.pool == nullptr);
    CHECK_FALSE(mutated(r2.decision, policy::MutationId::PoolSelector));
    for (const auto& op : r2.patch) CHECK(op["path"].get<std::string>().rfind("/spec", 0) != 0);
    // Unpinned, it could run on any node: tenant-pool denies it even after mutation.
    CHECK(denies_at(r2.decision, policy::RuleId::TenantPool, "spec.nodeSelector", "no defaultPool"));
  }
  SECTION("a pod with no tenant: no pinning") {
    pod["metadata"]["namespace"] = "sandbox";
    auto r2 = eval(p, pod);
    CHECK(r2.decision.patch.empty());
    CHECK(denies_at(r2.decision, policy::RuleId::TenantPool, "metadata.namespace", "no tenant"));
  }
}

namespace {

const Json& workload_pod_template() {
  static const Json t = Json::parse(R"({"metadata": {"labels": {"app": "train"}},
    "spec": {"restartPolicy": "Never",
             "tolerations": [{"operator": "Exists"}],
             "containers": [{"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})");
  return t;
}

// What alpha's workload_pod_template() gets, under the template pointer `base`.
Json workload_expected_ops(const std::string& base) {
  Json ops = Json::parse(R"([
    {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb", "value": 1},
    {"op": "add", "path": "/metadata/annotations", "value": {}},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb\",\"containers\":[\"train\"]}"},
    {"op": "add", "path": "/metadata/labels/gpu-admission.io~1tenant", "value": "alpha"},
    {"op": "add", "path": "/metadata/labels/cost-center", "value": "cc-1042"},
    {"op": "add", "path": "/spec/nodeSelector", "value": {}},
    {"op": "add", "path": "/spec/nodeSelector/gpu.example.com~1pool", "value": "a100-secure"}
  ])");
  for (auto& op : ops) op["path"] = base + op["path"].get<std::string>();
  return ops;
}

Plain workload_expected_template() {
  Plain t = plain(workload_pod_template());
  t["metadata"]["labels"]["gpu-admission.io/tenant"] = "alpha";
  t["metadata"]["labels"]["cost-center"] = "cc-1042";
  t["metadata"]["annotations"] = {
      {"gpu-admission.io/mig-injected", R"({"strategy":"mixed","profile":"1g.10gb","containers":["train"]})"}};
  t["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-secure"}};
  t["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  return t;
}

}  // namespace

TEST_CASE("mutations patch workload templates under their pod template pointer", "[mutations]") {
  const auto& p = fixture_policy();
  const Json& pod_template = workload_pod_template();
  auto expected_ops = workload_expected_ops;
  auto expected_template = workload_expected_template;

  SECTION("Job: /spec/template") {
    Json job = Json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
                              "metadata": {"name": "train", "namespace": "team-alpha"}, "spec": {}})");
    job["spec"]["template"] = pod_template;
    auto r = eval(p, job);
    INFO(findings(r.decision));
    CHECK(r.decision.allowed);
    CHECK(plain(r.patch) == plain(expected_ops("/spec/template")));
    Plain expected = plain(job);
    expected["spec"]["template"] = expected_template();
    check_applied(p, job, r, expected);
  }
  SECTION("Deployment: /spec/template") {
    Json deploy = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "train", "namespace": "team-alpha", "labels": {"owner": "x"}},
                                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "train"}}}})");
    deploy["spec"]["template"] = pod_template;
    deploy["spec"]["template"]["spec"].erase("restartPolicy");
    auto r = eval(p, deploy);
    INFO(findings(r.decision));
    CHECK(plain(r.patch) == plain(expected_ops("/spec/template")));
    Plain expected = plain(deploy);
    Plain t = expected_template();
    t["spec"].erase("restartPolicy");
    expected["spec"]["template"] = t;
    check_applied(p, deploy, r, expected);
    // The Deployment's own labels are not touched.
    CHECK(plain(r.mutated)["metadata"]["labels"] == Plain{{"owner", "x"}});
  }
  SECTION("CronJob: /spec/jobTemplate/spec/template") {
    Json cron = Json::parse(R"({"apiVersion": "batch/v1", "kind": "CronJob",
                               "metadata": {"name": "train", "namespace": "team-alpha"},
                               "spec": {"schedule": "@daily", "jobTemplate": {"spec": {}}}})");
    cron["spec"]["jobTemplate"]["spec"]["template"] = pod_template;
    auto r = eval(p, cron);
    INFO(findings(r.decision));
    CHECK(plain(r.patch) == plain(expected_ops("/spec/jobTemplate/spec/template")));
    Plain expected = plain(cron);
    expected["spec"]["jobTemplate"]["spec"]["template"] = expected_template();
    check_applied(p, cron, r, expected);
  }
}

TEST_CASE("keys containing '~' and '/' are escaped in patch paths", "[mutations]") {
  const auto& p = escaping_policy();
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "odd", "namespace": "tilde-ns", "labels": {"gpu-admission.io/tenant": "tilde-tenant"},
                 "annotations": {}},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"example.com/gpu~x": 1}}}]}})");
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  const Json expected_patch = Json::parse(R"([
    {"op": "remove", "path": "/spec/containers/0/resources/limits/example.com~1gpu~0x"},
    {"op": "add", "path": "/spec/containers/0/resources/limits/nvidia.com~1mig-1g.10gb", "value": 1},
    {"op": "add", "path": "/metadata/annotations/gpu-admission.io~1mig-injected",
     "value": "{\"strategy\":\"mixed\",\"profile\":\"1g.10gb\",\"containers\":[\"c\"]}"},
    {"op": "add", "path": "/spec/nodeSelector", "value": {}},
    {"op": "add", "path": "/spec/nodeSelector/example.com~1pool~0name", "value": "tilde"}
  ])");
  CHECK(plain(r.patch) == plain(expected_patch));
  Plain expected = plain(pod);
  expected["metadata"]["annotations"]["gpu-admission.io/mig-injected"] =
      R"({"strategy":"mixed","profile":"1g.10gb","containers":["c"]})";
  expected["spec"]["nodeSelector"] = {{"example.com/pool~name", "tilde"}};
  expected["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  check_applied(p, pod, r, expected);
}

TEST_CASE("validation sees the mutated pod", "[mutations]") {
  const auto& p = fixture_policy();
  SECTION("gpu-cap counts a converted 1g.10gb as 1/7 GPU") {
    // 5 whole GPUs would exceed alpha's cap of 4; 5 x 1g.10gb is 5/7 of a GPU.
    Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 5}})"));
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK(mutated(r.decision, policy::MutationId::MigResources));
    CHECK(r.decision.gpu_slices == 5);
    CHECK(r.decision.slices_per_gpu == 7);
    CHECK_FALSE(has_finding(r.decision, policy::RuleId::GpuCap));
    CHECK(r.decision.allowed);
  }
  SECTION("the same pod in a pool without MIG counts whole GPUs") {
    Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 5}})"), kGpuToleration);
    pod["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "h100-coop"}};
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK(r.decision.gpu_slices == 35);
    CHECK(has_finding(r.decision, policy::RuleId::GpuCap));
    CHECK_FALSE(r.decision.allowed);
  }
  SECTION("tenant-label sees the injected labels: a pod with none passes") {
    Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"));
    auto r = eval(p, pod);
    CHECK_FALSE(has_finding(r.decision, policy::RuleId::TenantLabel));
    CHECK(r.decision.allowed);
  }
  SECTION("gpu-tolerations checks the pool the pod was pinned to") {
    // Pinned to a100-secure by pool-selector: its taint must be tolerated.
    Json pod = gpu_pod("team-alpha", Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"),
                       R"([{"key": "nvidia.com/gpu", "operator": "Exists"}])");
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK(plain(r.mutated)["spec"]["nodeSelector"]["gpu.example.com/pool"] == "a100-secure");
    CHECK(has_finding(r.decision, policy::RuleId::GpuTolerations));
  }
}
