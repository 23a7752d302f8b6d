// Shared by the admission service tests: a small policy (one tenant, one adversarial A100 pool,
// privileged denied by default), a service holding it, a GPU pod and an AdmissionReview around it.
#pragma once

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/io/policy_file.h"

namespace admission_test {

using namespace gpu_admission;
using nlohmann::json;

inline constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: codec}
spec:
  exemptions: {namespaces: [kube-system], usernames: ["system:admin"]}
  defaults:
    maxGpusPerPod: 2
    gpuTaints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  rules: {host-namespaces: warn, gpu-device-access: audit}
  pools:
    - name: a100
      nodeSelector: {pool: a100}
      trust: adversarial
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
  tenants:
    - name: alpha
      namespaces: [team-alpha]
      labels: {cost-center: cc-1}
      pools: [a100]
      defaultPool: a100
)";

struct Fixture {
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, &metrics, &logger};
  Fixture() {
    auto load = webhook::load_policy_text(kPolicy, "codec.yaml");
    INFO(load.report());
    REQUIRE(load.ok());
    holder.set(load.policy);
  }
};

inline json gpu_pod(int gpus = 1) {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train","namespace":"team-alpha"},
    "spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],
            "containers":[{"name":"main","image":"cuda","resources":{"limits":{"nvidia.com/gpu":)" +
                     std::to_string(gpus) + R"(}}}]}})");
}

inline json review(const json& object, const std::string& operation = "CREATE", const std::string& kind = "Pod",
            const std::string& ns = "team-alpha") {
  json r = {{"apiVersion", "admission.k8s.io/v1"},
            {"kind", "AdmissionReview"},
            {"request",
             {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
              {"kind", {{"group", kind == "Pod" ? "" : "apps"}, {"version", "v1"}, {"kind", kind}}},
              {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
              {"namespace", ns},
              {"operation", operation},
              {"userInfo", {{"username", "alice"}}},
              {"dryRun", false}}}};
  if (!object.is_null()) r["request"]["object"] = object;
  return r;
}

inline json call(Fixture& f, webhook::Endpoint endpoint, const json& body, int expect_status = 200) {
  webhook::HttpReply reply = f.service.handle(endpoint, body.dump());
  INFO(reply.body);
  REQUIRE(reply.status == expect_status);
  return json::parse(reply.body);
}

}  // namespace admission_test
