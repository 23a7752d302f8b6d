// gpu-device-access's runtime-class and DRA-toleration checks through the admission service: a
// ResourceClaim or ResourceClaimTemplate review refused for a device toleration the policy does not
// allow (UPDATE refused only for what it adds), the same claim refused at allocation naming the
// pod it is reserved for, and a Pod review refused for its runtime class.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/admission_test_support.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

using namespace admission_test;

constexpr const char* kDevicePolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: device-access}
spec:
  runtimeClasses: [nvidia]
  deviceTolerations: [{key: example.com/maintenance, operator: Exists}]
  defaults:
    gpuTaints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  pools:
    - {name: h100, nodeSelector: {pool: h100}}
  tenants:
    - {name: alpha, namespaces: [team-alpha], labels: {cost-center: cc-1}, pools: [h100], defaultPool: h100}
)";

struct Pods final : policy::PodSource {
  std::map<std::string, std::string> pods;
  Outcome pod_json(std::string_view ns, std::string_view name, std::string& out) const override {
    auto it = pods.find(std::string(ns) + "/" + std::string(name));
    if (it == pods.end()) return Outcome::NotFound;
    out = it->second;
    return Outcome::Found;
  }
};

struct DeviceFixture {
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, &metrics, &logger};
  Pods pods;
  DeviceFixture() {
    auto load = webhook::load_policy_text(kDevicePolicy, "device-access.yaml");
    INFO(load.report());
    REQUIRE(load.ok());
    holder.set(load.policy);
    service.set_pod_source(&pods);
  }
  json validate(const json& body) {
    webhook::HttpReply reply = service.handle(webhook::Endpoint::Validate, body.dump());
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  }
};

json claim_object(const char* kind, const char* version, const json& tolerations) {
  json request = {{"name", "gpu"}};
  json fields = {{"deviceClassName", "gpu.nvidia.com"}, {"tolerations", tolerations}};
  if (std::string(version) == "v1beta1") request.update(fields);
  else request["exactly"] = fields;
  json devices = {{"requests", json::array({request})}};
  json out = {{"apiVersion", std::string("resource.k8s.io/") + version},
              {"kind", kind},
              {"metadata", {{"name", "c1"}, {"namespace", "team-alpha"}, {"uid", "claim-uid"}}}};
  if (std::string(kind) == "ResourceClaimTemplate") out["spec"]["spec"]["devices"] = devices;
  else out["spec"]["devices"] = devices;
  return out;
}

json claim_review(const json& object, const std::string& operation, const std::string& sub_resource = "") {
  const std::string kind = object["kind"];
  json r = review(object, operation, kind);
  const std::string version = object["apiVersion"].get<std::string>().substr(std::string("resource.k8s.io/").size());
  r["request"]["kind"] = {{"group", "resource.k8s.io"}, {"version", version}, {"kind", kind}};
  r["request"]["resource"] = {{"group", "resource.k8s.io"},
                              {"version", version},
                              {"resource", kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates"}};
  if (!sub_resource.empty()) r["request"]["subResource"] = sub_resource;
  r["request"]["name"] = object["metadata"]["name"];
  return r;
}

std::string message_of(const json& response) {
  return response.contains("status") ? response["status"]["message"].get<std::string>() : "";
}

const json kEveryTaint = json::parse(R"([{"operator": "Exists"}])");
const json kMaintenance = json::parse(R"([{"key": "example.com/maintenance", "operator": "Equal", "value": "drain"}])");

// A pod of alpha in pool h100, labelled and pinned (as /mutate leaves it), using claim c1.
json claim_pod(const char* runtime_class = "nvidia") {
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train","namespace":"team-alpha",
      "uid":"pod-uid","labels":{"gpu-admission.io/tenant":"alpha","cost-center":"cc-1"}},
    "spec":{"nodeSelector":{"pool":"h100"},
            "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],
            "resourceClaims":[{"name":"gpu","resourceClaimName":"c1"}],
            "containers":[{"name":"main","image":"cuda","resources":{"claims":[{"name":"gpu"}]}}]}})");
  if (runtime_class) pod["spec"]["runtimeClassName"] = runtime_class;
  return pod;
}

}  // namespace

TEST_CASE("/validate refuses a claim or claim template whose GPU request tolerates a taint the policy does not allow",
          "[admission][dra][device-tolerations]") {
  DeviceFixture f;
  for (const char* kind : {"ResourceClaim", "ResourceClaimTemplate"}) {
    for (const char* version : {"v1", "v1beta2", "v1beta1"}) {
      INFO(kind << " " << version);
      json resp = f.validate(claim_review(claim_object(kind, version, kEveryTaint), "CREATE"));
      CHECK(resp["allowed"] == false);
      CHECK(resp["status"]["code"] == 403);
      CHECK(message_of(resp).find("[gpu-device-access] request \"gpu\" tolerates every device taint {operator: Exists}") !=
            std::string::npos);
      CHECK(f.validate(claim_review(claim_object(kind, version, kMaintenance), "CREATE"))["allowed"] == true);
    }
  }
  // UPDATE: refused only for what it adds (a claim's spec cannot change; its metadata can).
  json old_claim = claim_object("ResourceClaim", "v1", kEveryTaint);
  json update = claim_review(old_claim, "UPDATE");
  update["request"]["oldObject"] = old_claim;
  CHECK(f.validate(update)["allowed"] == true);
  update["request"]["oldObject"] = claim_object("ResourceClaim", "v1", kMaintenance);
  CHECK(f.validate(update)["allowed"] == false);
}

TEST_CASE("allocation: a claim whose GPU request tolerates a disallowed taint is refused naming its pod",
          "[admission][allocation][device-tolerations]") {
  DeviceFixture f;
  f.pods.pods["team-alpha/train"] = claim_pod().dump();
  auto allocate = [&](const json& tolerations) {
    json claim = claim_object("ResourceClaim", "v1", tolerations);
    json allocated = claim;
    allocated["status"]["allocation"] = {{"devices", {{"results", json::array()}}}};
    allocated["status"]["reservedFor"] = json::array({{{"resource", "pods"}, {"name", "train"}, {"uid", "pod-uid"}}});
    json r = claim_review(allocated, "UPDATE", "status");
    r["request"]["oldObject"] = claim;
    r["request"]["userInfo"]["username"] = "system:kube-scheduler";
    return f.validate(r);
  };
  CHECK(allocate(kMaintenance)["allowed"] == true);
  json resp = allocate(kEveryTaint);
  CHECK(resp["allowed"] == false);
  CHECK(message_of(resp).find("[gpu-device-access] pod team-alpha/train: ") != std::string::npos);
  CHECK(message_of(resp).find("tolerates every device taint") != std::string::npos);
}

TEST_CASE("/validate refuses a GPU pod whose runtime class the policy does not list", "[admission][runtime-class]") {
  DeviceFixture f;
  // The claim's pod is a GPU pod even when the claim cannot be found (no cluster state here).
  json ok = f.validate(review(claim_pod("nvidia")));
  INFO(ok.dump());
  CHECK(ok["allowed"] == true);
  for (const char* runtime_class : {"runc", static_cast<const char*>(nullptr)}) {
    json resp = f.validate(review(claim_pod(runtime_class)));
    INFO(resp.dump());
    CHECK(resp["allowed"] == false);
    CHECK(message_of(resp).find("[gpu-device-access] GPU pod ") != std::string::npos);
    CHECK(message_of(resp).find("spec.runtimeClasses allows only \"nvidia\"") != std::string::npos);
  }
}
