// Shared by the tests of gpu-device-access's parts (test_gpu_device_access_runtime.cpp,
// test_gpu_device_access_tolerations.cpp): a policy with runtime classes and device tolerations,
// objects judged (policy_judge.h) in its namespace team, and the rule's findings.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "policy/base/ids.h"
#include "policy/evaluation/decision.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

namespace device_access_test {

using namespace gpu_admission;

// Pools: `kata` lists its own classes, `plain` none (spec.runtimeClasses applies), `empty` lists
// none explicitly (inherits too). Tenant t may use all three; namespace nowhere has no tenant.
inline constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: runtime}
spec:
  mutations: {hide-gpus: false}
  runtimeClasses: [nvidia, nvidia-cdi]
  deviceTolerations:
    - {key: example.com/maintenance, operator: Exists}
    - {key: example.com/reserved, operator: Equal, value: t, effect: NoSchedule}
  pools:
    - {name: kata, nodeSelector: {pool: kata}, runtimeClasses: [kata-nvidia]}
    - {name: plain, nodeSelector: {pool: plain}}
    - {name: empty, nodeSelector: {pool: empty}, runtimeClasses: []}
  tenants:
    - {name: t, namespaces: [team], pools: [kata, plain, empty], defaultPool: plain}
  defaults:
    unmappedGpuPods: allow
)";

inline const policy::CompiledPolicy& the_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(kPolicy, "runtime.yaml");
  if (!load.ok()) FAIL("the policy does not load:\n" << load.report());
  return *load.policy;
}

inline policy_test::Judged judge(const Json& object, const policy_test::TestClaims* claims = nullptr, bool mutate = true) {
  policy::ExternalFacts facts;
  facts.claims = claims;
  policy_test::Judged r = policy_test::judge(the_policy(), object, "team", mutate, facts);
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  return r;
}

inline std::vector<policy::Finding> access_findings(const policy::Decision& d) {
  std::vector<policy::Finding> out;
  for (const auto& f : d.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) out.push_back(f);
  return out;
}

inline std::string shown(const policy::Decision& d) {
  std::string out;
  for (const auto& f : d.findings) out += std::string(policy::name_of(f.rule)) + " " + f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

// A pod in `pool` ("" for none) with one container asking for `gpus` nvidia.com/gpu.
inline Json gpu_pod(const std::string& pool, const char* runtime_class, int gpus = 1, const std::string& ns = "team") {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1"}]}})");
  pod["metadata"]["namespace"] = ns;
  if (!pool.empty()) pod["spec"]["nodeSelector"] = {{"pool", pool}};
  if (runtime_class) pod["spec"]["runtimeClassName"] = runtime_class;
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus;
  return pod;
}

}  // namespace device_access_test
