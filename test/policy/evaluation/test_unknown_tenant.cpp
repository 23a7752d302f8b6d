// A namespace whose labels cannot be read (the API server failed or was too slow) has an unknown
// tenant, not none: its GPU pods are refused by tenant-pool whatever defaults.unmappedGpuPods says
// (the namespace may belong to a tenant with a cap and pools), its other pods are judged as in a
// namespace of no tenant, and nothing of a tenant is mutated into them.
#include <catch2/catch.hpp>

#include <string>

#include "policy/evaluation/evaluator.h"
#include "test/policy/decoded_pod.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: unknown-tenant}
spec:
  defaults: {unmappedGpuPods: allow, gpuTaints: []}
  pools:
    - {name: a100, nodeSelector: {pool: a100}, gpuModel: A100-SXM4-80GB}
  tenants:
    - name: by-label
      namespaceSelector: {matchLabels: {team: ml}}
      maxGpusPerPod: 1
      pools: [a100]
      defaultPool: a100
    - {name: by-glob, namespaces: ["team-*"], pools: [a100], defaultPool: a100}
)";

struct Unreadable : policy::NamespaceLabels {
  const policy::LabelPairs* labels_of(std::string_view) const override { return nullptr; }
  policy::NamespaceLookup lookup(std::string_view) const override { return {nullptr, true}; }
};

struct NoLabels : policy::NamespaceLabels {
  const policy::LabelPairs* labels_of(std::string_view) const override { return nullptr; }
};

std::string pod_json(const std::string& ns, const std::string& limits) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":")" + ns + R"("},"spec":{"containers":[{"name":"main","image":"x",
    "resources":{"limits":{)" + limits + "}}}]}}";
}

}  // namespace

TEST_CASE("a GPU pod whose tenant cannot be told is refused, whatever unmappedGpuPods says", "[tenancy][unknown]") {
  auto load = webhook::load_policy_text(kPolicy, "unknown.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  Unreadable unreadable;
  NoLabels none;
  for (const std::string ns : {"ml-train", "team-x"}) {  // also where a later glob tenant matches
    for (const bool mutate : {false, true}) {
      DecodedPod gpu(pod_json(ns, R"("nvidia.com/gpu": 4)"));
      REQUIRE_FALSE(gpu.error);
      policy::EvalOptions options;
      options.mutate = mutate;
      options.namespace_labels = &unreadable;
      const policy::Decision d = policy::evaluate(*load.policy, gpu.view, options);
      INFO(ns << " mutate=" << mutate);
      CHECK_FALSE(d.allowed);
      CHECK(d.tenant == nullptr);
      CHECK(d.tenant_unknown);
      REQUIRE(d.findings.size() == 1);
      CHECK(d.findings[0].rule == policy::RuleId::TenantPool);
      CHECK(d.findings[0].message.find("cannot be told") != std::string::npos);
      CHECK(d.patch.empty());  // no tenant's labels or pool are guessed at
    }
  }
  // A pod without GPUs there: judged as in a namespace of no tenant.
  DecodedPod plain(pod_json("ml-train", ""));
  policy::EvalOptions options;
  options.mutate = false;
  options.namespace_labels = &unreadable;
  CHECK(policy::evaluate(*load.policy, plain.view, options).allowed);
  // Labels read and absent: a namespace of no tenant, which unmappedGpuPods: allow lets through.
  DecodedPod gpu(pod_json("ml-train", R"("nvidia.com/gpu": 4)"));
  options.namespace_labels = &none;
  const policy::Decision d = policy::evaluate(*load.policy, gpu.view, options);
  CHECK(d.allowed);
  CHECK_FALSE(d.tenant_unknown);
}
