// mig-resources beyond the basics in test_mutations.cpp: a whole GPU is added
// to the container's existing entry of the target profile (a zero-count one too), zero-count
// whole GPUs are left alone, zero-count MIG entries are no MIG type, what cannot be converted
// exactly stays and is reported, two full-GPU names end up in one entry, and in a single pool
// a user-set nvidia.com/gpu.product is never overwritten (a wrong one is a mig-profile finding).
// Every mutated result is evaluated again: no second patch (idempotency).
#include <catch2/catch.hpp>

#include <string>

#include "test/policy/mutation_test_support.h"

using namespace gpu_admission;
using namespace mutation_test;

namespace {

const std::string kLimits = "/spec/containers/0/resources/limits/";
const std::string kRequests = "/spec/containers/0/resources/requests/";

// A pod of alpha, labelled and pinned to a100-secure (mixed, 1g.10gb), so that only
// mig-resources has something to do.
Json secure_pod(const Json& resources) {
  Json pod = gpu_pod("team-alpha", resources);
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  pod["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-secure"}};
  return pod;
}

// The same for the single-strategy pool a100-single (A100-SXM4-40GB, defaultProfile 3g.20gb).
Json single_pod(const Json& resources) {
  Json pod = gpu_pod("team-alpha", resources, kGpuToleration);
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  pod["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "a100-single"}};
  return pod;
}

Json op(const std::string& kind, const std::string& path, const Json& value = nullptr) {
  Json o = {{"op", kind}, {"path", path}};
  if (kind != "remove") o["value"] = value;
  return o;
}

// The two ops that record a mixed conversion on a pod without annotations.
void add_injected(Json& ops, const std::string& profile, const std::string& containers_json) {
  ops.push_back(op("add", "/metadata/annotations", Json::object()));
  ops.push_back(op("add", "/metadata/annotations/gpu-admission.io~1mig-injected",
                   R"({"strategy":"mixed","profile":")" + profile + R"(","containers":[)" + containers_json + "]}"));
}

Plain with_injected(Json pod, const std::string& profile, const std::string& containers_json) {
  pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-injected", R"({"strategy":"mixed","profile":")" + profile +
                                                                           R"(","containers":[)" + containers_json + "]}"}};
  return plain(pod);
}

const policy::CompiledPolicy& two_full_names_policy() {
  static const policy::CompiledPolicy& p = load_policy(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: two-full-names}
spec:
  gpuResources: {full: [nvidia.com/gpu, example.com/gpu]}
  defaults: {maxGpusPerPod: 8}
  pools:
    - name: mixed
      nodeSelector: {pool: mixed}
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
  tenants:
    - {name: t, namespaces: [t], pools: [mixed], defaultPool: mixed}
)",
                                                       "two-full-names.yaml");
  return p;
}

}  // namespace

TEST_CASE("mig-resources: a whole GPU is added to the container's entry of the target profile", "[mutations][mig]") {
  const auto& p = fixture_policy();
  Json pod = secure_pod(Json::parse(R"({"requests": {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "1"},
                                        "limits": {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 1}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  CHECK(mutated(r.decision, policy::MutationId::MigResources));
  Json ops = Json::array({op("remove", kRequests + "nvidia.com~1gpu"), op("add", kRequests + "nvidia.com~1mig-1g.10gb", "3"),
                          op("remove", kLimits + "nvidia.com~1gpu"), op("add", kLimits + "nvidia.com~1mig-1g.10gb", "3")});
  add_injected(ops, "1g.10gb", R"("train")");
  CHECK(plain(r.patch) == plain(ops));

  Json want = pod;
  want["spec"]["containers"][0]["resources"] =
      Json::parse(R"({"requests": {"nvidia.com/mig-1g.10gb": "3"}, "limits": {"nvidia.com/mig-1g.10gb": "3"}})");
  check_applied(p, pod, r, with_injected(want, "1g.10gb", R"("train")"));
  CHECK(r.decision.gpu_slices == 3);  // 2 + 1 slices of 1g.10gb, not 2 whole GPUs beside a slice

  SECTION("the annotation's profile is added to the same way") {
    pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "2g.20gb"}};
    pod["spec"]["containers"][0]["resources"] =
        Json::parse(R"({"limits": {"nvidia.com/mig-2g.20gb": 1, "nvidia.com/gpu": 1}})");
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(r2.decision.allowed);
    CHECK(plain(r2.mutated)["spec"]["containers"][0]["resources"]["limits"] == Plain{{"nvidia.com/mig-2g.20gb", "2"}});
    CHECK(r2.decision.gpu_slices == 4);
    check_idempotent(p, r2);
  }
  SECTION("an entry of another profile is not added to: two MIG types are denied") {
    pod["spec"]["containers"][0]["resources"] =
        Json::parse(R"({"limits": {"nvidia.com/gpu": 1, "nvidia.com/mig-2g.20gb": 1}})");
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(plain(r2.mutated)["spec"]["containers"][0]["resources"]["limits"] ==
          Plain{{"nvidia.com/mig-1g.10gb", 1}, {"nvidia.com/mig-2g.20gb", 1}});
    CHECK(denies_at(r2.decision, policy::RuleId::MigProfile,
                    "spec.containers[0].resources.limits[\"nvidia.com/mig-2g.20gb\"]", "two MIG types"));
    check_idempotent(p, r2);
  }
}

TEST_CASE("mig-resources: a zero-count entry of the target profile is replaced by the converted count",
          "[mutations][mig]") {
  const auto& p = fixture_policy();
  Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 0}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  Json ops = Json::array({op("remove", kLimits + "nvidia.com~1gpu"), op("add", kLimits + "nvidia.com~1mig-1g.10gb", "2")});
  add_injected(ops, "1g.10gb", R"("train")");
  CHECK(plain(r.patch) == plain(ops));
  Json want = pod;
  want["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", "2"}};
  check_applied(p, pod, r, with_injected(want, "1g.10gb", R"("train")"));
  CHECK(r.decision.gpu_slices == 2);
}

TEST_CASE("mig-resources: zero-count whole GPUs are left alone and are not reported", "[mutations][mig]") {
  const auto& p = fixture_policy();
  Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/gpu": 0, "cpu": "1"}})"));
  pod["spec"]["containers"].push_back(
      Json::parse(R"({"name": "gpu", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  // Only container 1 is converted; container 0 asks for no GPU, so hide-gpus hides them from it.
  Json ops = Json::array({op("remove", "/spec/containers/1/resources/limits/nvidia.com~1gpu"),
                          op("add", "/spec/containers/1/resources/limits/nvidia.com~1mig-1g.10gb", "1")});
  add_injected(ops, "1g.10gb", R"("gpu")");
  ops.push_back(void_env_op("/spec/containers/0"));
  CHECK(plain(r.patch) == plain(ops));
  Json want = pod;
  want["spec"]["containers"][1]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", "1"}};
  want["spec"]["containers"][0]["env"] = Json::parse(R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])");
  check_applied(p, pod, r, with_injected(want, "1g.10gb", R"("gpu")"));

  SECTION("as received, the zero count is no whole GPU in the mixed pool, the other one is") {
    auto r2 = eval(p, pod, "", false);
    INFO(findings(r2.decision));
    CHECK(count_findings(r2.decision, policy::RuleId::MigProfile) == 1);
    CHECK(denies_at(r2.decision, policy::RuleId::MigProfile, "spec.containers[1].resources.limits[\"nvidia.com/gpu\"]",
                    "nvidia.com/mig-1g.10gb"));
  }
}

TEST_CASE("mig-resources: zero-count MIG entries are no MIG type", "[mutations][mig]") {
  const auto& p = fixture_policy();
  SECTION("beside a converted whole GPU") {
    Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/gpu": 1, "nvidia.com/mig-2g.20gb": 0}})"));
    auto r = eval(p, pod);
    INFO(findings(r.decision) << r.patch.dump());
    CHECK(r.decision.allowed);
    CHECK_FALSE(has_finding(r.decision, policy::RuleId::MigProfile));
    CHECK(plain(r.mutated)["spec"]["containers"][0]["resources"]["limits"] ==
          Plain{{"nvidia.com/mig-1g.10gb", 1}, {"nvidia.com/mig-2g.20gb", 0}});
    check_idempotent(p, r);
  }
  SECTION("beside another MIG type, with or without a pool, even of a profile the model lacks") {
    Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-1g.5gb": "0",
                                                     "nvidia.com/mig-2g.20gb": 0}})"));
    auto r = eval(p, pod);
    INFO(findings(r.decision) << r.patch.dump());
    CHECK_FALSE(has_finding(r.decision, policy::RuleId::MigProfile));
    CHECK(r.decision.allowed);
    CHECK(r.decision.patch.empty());

    pod["metadata"]["namespace"] = "sandbox";  // no tenant, no pool: only the two-types check runs
    pod["spec"].erase("nodeSelector");
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision));
    CHECK(r2.decision.pool == nullptr);
    CHECK_FALSE(has_finding(r2.decision, policy::RuleId::MigProfile));
  }
  SECTION("a non-zero second type is still two types") {
    Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 1}})"));
    auto r = eval(p, pod);
    CHECK(denies_at(r.decision, policy::RuleId::MigProfile,
                    "spec.containers[0].resources.limits[\"nvidia.com/mig-2g.20gb\"]", "two MIG types"));
  }
}

TEST_CASE("mig-resources: a whole GPU that cannot be added exactly stays and is reported", "[mutations][mig]") {
  const auto& p = fixture_policy();
  Json pod = secure_pod(Json::parse(R"({"limits": {"nvidia.com/gpu": "1.5", "nvidia.com/mig-1g.10gb": 1}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision) << r.patch.dump());
  CHECK_FALSE(mutated(r.decision, policy::MutationId::MigResources));
  CHECK(r.decision.patch.empty());
  CHECK(denies_at(r.decision, policy::RuleId::MigProfile, "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]",
                  "whole GPUs"));
  CHECK(has_finding(r.decision, policy::RuleId::GpuCap));  // 1.5 is not a whole number
  CHECK_FALSE(r.decision.allowed);
  check_idempotent(p, r);
}

TEST_CASE("mig-resources: two full-GPU resource names end up in one MIG entry", "[mutations][mig]") {
  const auto& p = two_full_names_policy();
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "two", "namespace": "t", "labels": {"gpu-admission.io/tenant": "t"}},
    "spec": {"nodeSelector": {"pool": "mixed"}, "tolerations": [{"operator": "Exists"}],
             "containers": [{"name": "c", "image": "x",
                             "resources": {"limits": {"nvidia.com/gpu": 1, "example.com/gpu": "2"}}}]}})");
  auto r = eval(p, pod);
  INFO(findings(r.decision));
  CHECK(r.decision.allowed);
  Json ops = Json::array({op("remove", kLimits + "nvidia.com~1gpu"), op("add", kLimits + "nvidia.com~1mig-1g.10gb", 1),
                          op("remove", kLimits + "example.com~1gpu"), op("add", kLimits + "nvidia.com~1mig-1g.10gb", "3")});
  add_injected(ops, "1g.10gb", R"("c")");
  CHECK(plain(r.patch) == plain(ops));
  Json want = pod;
  want["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", "3"}};
  check_applied(p, pod, r, with_injected(want, "1g.10gb", R"("c")"));
  CHECK(r.decision.gpu_slices == 3);
}

TEST_CASE("mig-resources (single): a user-set nvidia.com/gpu.product is never overwritten", "[mutations][mig]") {
  const auto& p = fixture_policy();
  const std::string field = "spec.nodeSelector[\"nvidia.com/gpu.product\"]";
  Json pod = single_pod(Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"));
  SECTION("a product of another valid profile is kept and allowed") {
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-1g.5gb";
    auto r = eval(p, pod);
    INFO(findings(r.decision) << r.patch.dump());
    CHECK(r.decision.patch.empty());
    CHECK_FALSE(mutated(r.decision, policy::MutationId::MigResources));
    CHECK(r.decision.allowed);
  }
  for (const char* wrong : {"A100-SXM4-80GB-MIG-1g.10gb", "A100-SXM4-40GB", "A100-SXM4-40GB-MIG-1g.20gb", ""}) {
    DYNAMIC_SECTION("a value that is no MIG product of the pool is kept and denied: '" << wrong << "'") {
      pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = wrong;
      auto r = eval(p, pod);
      INFO(findings(r.decision) << r.patch.dump());
      CHECK(r.decision.patch.empty());
      CHECK(plain(r.mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == wrong);
      CHECK(denies_at(r.decision, policy::RuleId::MigProfile, field, "not a MIG product"));
      CHECK_FALSE(r.decision.allowed);
      check_idempotent(p, r);
    }
  }
  SECTION("a pod without GPUs may select any product") {
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", "1"}}}};
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "Tesla-T4";
    auto r = eval(p, pod);
    INFO(findings(r.decision));
    CHECK_FALSE(has_finding(r.decision, policy::RuleId::MigProfile));
  }
}

TEST_CASE("mig-resources (single): every GPU pod is pinned to the product", "[mutations][mig]") {
  const auto& p = fixture_policy();
  const Json resources[] = {
      Json::parse(R"({"limits": {"nvidia.com/gpu": 2}})"),
      Json::parse(R"({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}})"),
      Json::parse(R"({"limits": {"nvidia.com/gpu.shared": 1}})"),
  };
  for (const Json& res : resources) {
    DYNAMIC_SECTION("app container " << res.dump()) {
      Json pod = single_pod(res);
      auto r = eval(p, pod);
      INFO(findings(r.decision) << r.patch.dump());
      CHECK(plain(r.mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "A100-SXM4-40GB-MIG-3g.20gb");
      CHECK_FALSE(has_finding(r.decision, policy::RuleId::MigProfile));
      // The resources stay: the single strategy hands out MIG devices as nvidia.com/gpu.
      CHECK(plain(r.mutated)["spec"]["containers"][0]["resources"] == plain(res));
      check_idempotent(p, r);
    }
  }
  SECTION("a GPU only in an init container") {
    Json pod = single_pod(Json::parse(R"({"limits": {"cpu": "1"}})"));
    pod["spec"]["initContainers"] =
        Json::parse(R"([{"name": "prep", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}])");
    auto r = eval(p, pod);
    INFO(findings(r.decision) << r.patch.dump());
    CHECK(plain(r.mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "A100-SXM4-40GB-MIG-3g.20gb");
    CHECK(r.decision.allowed);
    check_idempotent(p, r);
  }
}

TEST_CASE("mig-resources: a target entry only in limits is added to the converted request too", "[mutations][mig]") {
  // Requests default to limits: before, the container requested 2 GPUs and (by default) 1 slice.
  // Converting each list on its own would request 2 slices with a limit of 3, which the API
  // server refuses (extended resources need requests equal to limits).
  const auto& p = fixture_policy();
  Json pod = secure_pod(Json::parse(R"({"requests": {"nvidia.com/gpu": 2},
                                        "limits": {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 1}})"));
  auto r = eval(p, pod);
  INFO(findings(r.decision) << r.patch.dump());
  const Plain res = plain(r.mutated)["spec"]["containers"][0]["resources"];
  auto text = [](const Plain& q) { return q.is_string() ? q.get<std::string>() : q.dump(); };
  CHECK(res["requests"].size() == 1);
  CHECK(res["limits"].size() == 1);
  CHECK(text(res["requests"]["nvidia.com/mig-1g.10gb"]) == "3");
  CHECK(text(res["limits"]["nvidia.com/mig-1g.10gb"]) == "3");
  CHECK(r.decision.gpu_slices == 3);
  CHECK(r.decision.allowed);
  check_idempotent(p, r);

  SECTION("what cannot be added exactly stays in both lists and is reported") {
    pod["spec"]["containers"][0]["resources"] = Json::parse(R"({"requests": {"nvidia.com/gpu": "1.5"},
        "limits": {"nvidia.com/gpu": "1.5", "nvidia.com/mig-1g.10gb": 1}})");
    auto r2 = eval(p, pod);
    INFO(findings(r2.decision) << r2.patch.dump());
    CHECK(r2.decision.patch.empty());
    CHECK(denies_at(r2.decision, policy::RuleId::MigProfile, "spec.containers[0].resources.requests[\"nvidia.com/gpu\"]"));
  }
}

TEST_CASE("mig-resources: a sum beyond int64 is not made (no wrap-around)", "[mutations][mig]") {
  const auto& p = fixture_policy();
  for (const char* list : {"limits", "requests"}) {
    DYNAMIC_SECTION(list) {
      Json res = Json::parse(R"({"limits": {"nvidia.com/gpu": "9223372036854775807", "nvidia.com/mig-1g.10gb": 1}})");
      if (std::string(list) == "requests") res["requests"] = {{"nvidia.com/gpu", "9223372036854775807"}};
      Json pod = secure_pod(res);
      auto r = eval(p, pod);
      INFO(findings(r.decision) << r.patch.dump());
      CHECK(r.patch.dump().find("-9223372036854775808") == std::string::npos);
      CHECK(r.decision.patch.empty());
      CHECK(denies_at(r.decision, policy::RuleId::MigProfile,
                      "spec.containers[0].resources." + std::string(list) + "[\"nvidia.com/gpu\"]", "whole GPUs"));
      CHECK_FALSE(r.decision.allowed);
    }
  }
}

TEST_CASE("mig-resources: DRA extended resources are never rewritten; a full class in a MIG pool is refused",
          "[mutations][mig]") {
  const auto& p = fixture_policy();
  const std::string full = "deviceclass.resource.kubernetes.io/gpu.nvidia.com";
  const std::string mig = "deviceclass.resource.kubernetes.io/mig.nvidia.com";
  SECTION("mixed: nvidia.com/gpu beside a full class: only nvidia.com/gpu becomes a slice") {
    Json pod = secure_pod(Json{{"limits", {{"nvidia.com/gpu", 1}, {full, 1}}}});
    auto r = eval(p, pod);
    INFO(findings(r.decision) << r.patch.dump());
    Json ops = Json::array({op("remove", kLimits + "nvidia.com~1gpu"), op("add", kLimits + "nvidia.com~1mig-1g.10gb", 1)});
    add_injected(ops, "1g.10gb", R"("train")");
    CHECK(plain(r.patch) == plain(ops));
    CHECK(denies_at(r.decision, policy::RuleId::MigProfile,
                    "spec.containers[0].resources.limits[\"" + full + "\"]", "device class \"gpu.nvidia.com\""));
    CHECK(count_findings(r.decision, policy::RuleId::MigProfile) == 1);
    CHECK(r.decision.gpu_slices == 1 + 7);  // one slice and one whole GPU of the A100
    check_idempotent(p, r);
  }
  SECTION("mixed: a full class alone: nothing to convert, no annotation, refused with no /mutate hint") {
    auto r = eval(p, secure_pod(Json{{"requests", {{full, "2"}}}, {"limits", {{full, "2"}}}}));
    INFO(findings(r.decision) << r.patch.dump());
    CHECK_FALSE(mutated(r.decision, policy::MutationId::MigResources));
    CHECK(r.patch == Json::array());
    CHECK(denies_at(r.decision, policy::RuleId::MigProfile, "spec.containers[0].resources.requests[\"" + full + "\"]",
                    "ask a MIG device class"));
    CHECK(count_findings(r.decision, policy::RuleId::MigProfile) == 1);  // reported at the request only
    for (const auto& f : r.decision.findings) CHECK(f.message.find("/mutate") == std::string::npos);
  }
  SECTION("mixed: the MIG class is what the pool hands out") {
    auto r = eval(p, secure_pod(Json{{"limits", {{mig, 1}}}}));
    INFO(findings(r.decision) << r.patch.dump());
    CHECK(r.decision.allowed);
    CHECK(r.patch == Json::array());
    CHECK(r.decision.gpu_slices == 7);  // no profile named: a whole GPU
  }
  SECTION("single: the product is pinned for a MIG class pod; a full class is refused") {
    auto ok = eval(p, single_pod(Json{{"limits", {{mig, 1}}}}));
    INFO(findings(ok.decision) << ok.patch.dump());
    CHECK(ok.decision.allowed);
    CHECK(ok.mutated["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "A100-SXM4-40GB-MIG-3g.20gb");
    auto bad = eval(p, single_pod(Json{{"limits", {{full, 1}}}}));
    INFO(findings(bad.decision));
    CHECK(denies_at(bad.decision, policy::RuleId::MigProfile, "spec.containers[0].resources.limits[\"" + full + "\"]",
                    "in MIG pool \"a100-single\""));
  }
}
