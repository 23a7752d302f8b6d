// Red-team tests of gpu-device-access's device tolerations (policy/evaluation/rules/
// gpu_device_access_tolerations.cpp): the tolerations of DRA GPU requests in every claim shape,
// judged for pods through their resolved claims and for claims on their own.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "device_access_test_support.h"

using namespace device_access_test;

namespace {

// A claim (or template) of `api_version` named `name` in namespace team, whose one request is
// `request` (JSON, in that version's shape).
Json claim(const char* kind, const char* api_version, const char* name, const std::string& request) {
  Json devices = {{"requests", Json::array({Json::parse(request)})}};
  Json out = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}, {"namespace", "team"}}}};
  if (std::string(kind) == "ResourceClaimTemplate") out["spec"]["spec"]["devices"] = devices;
  else out["spec"]["devices"] = devices;
  return out;
}

struct Shape {
  const char* kind;
  const char* api_version;
  std::string request;  // @T@ stands for the tolerations list
  std::string field;    // of the toleration list, from spec.devices
};

// Every claim shape the decoder reads, each with its tolerations at one place.
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const char* kind : {"ResourceClaim", "ResourceClaimTemplate"}) {
    for (const char* version : {"resource.k8s.io/v1", "resource.k8s.io/v1beta2"}) {
      out.push_back({kind, version, R"({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "tolerations": @T@}})",
                     "requests[0].exactly.tolerations"});
      out.push_back({kind, version,
                     R"({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "other.example.com"},
                         {"name": "b", "deviceClassName": "mig.nvidia.com", "tolerations": @T@}]})",
                     "requests[0].firstAvailable[1].tolerations"});
    }
    out.push_back({kind, "resource.k8s.io/v1beta1", R"({"name": "gpu", "deviceClassName": "vfio.gpu.nvidia.com", "tolerations": @T@})",
                   "requests[0].tolerations"});
    out.push_back({kind, "resource.k8s.io/v1beta1",
                   R"({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com", "tolerations": @T@}]})",
                   "requests[0].firstAvailable[0].tolerations"});
  }
  return out;
}

std::string with_tolerations(std::string request, const std::string& tolerations) {
  return request.replace(request.find("@T@"), 3, tolerations);
}

}  // namespace

TEST_CASE("device tolerations: every claim shape, on its own and through a pod", "[gpu-device-access][device-tolerations]") {
  const std::string bad = R"([{"key": "example.com/maintenance", "operator": "Exists"},
                              {"key": "example.com/reserved", "operator": "Equal", "value": "t"},
                              {"operator": "Exists", "effect": "NoExecute"}])";
  const std::string good = R"([{"key": "example.com/maintenance", "value": "x", "effect": "NoExecute", "tolerationSeconds": 60},
                               {"key": "example.com/reserved", "operator": "Equal", "value": "t", "effect": "NoSchedule"}])";
  for (const Shape& s : shapes()) {
    INFO(s.kind << " " << s.api_version << " " << s.field);
    const bool is_template = std::string(s.kind) == "ResourceClaimTemplate";
    const std::string devices = is_template ? "spec.spec.devices." : "spec.devices.";
    SECTION(std::string(s.kind) + " " + s.api_version + " " + s.field) {
      // On its own: one finding per disallowed toleration (the second and the third), at its field.
      auto r = judge(claim(s.kind, s.api_version, "c", with_tolerations(s.request, bad)));
      INFO(shown(r.decision));
      auto found = access_findings(r.decision);
      REQUIRE(found.size() == 2);
      CHECK(found[0].field == devices + s.field + "[1]");
      CHECK(found[0].message.find("tolerates device taints {key: \"example.com/reserved\", operator: Equal, value: \"t\"}") !=
            std::string::npos);
      CHECK(found[1].field == devices + s.field + "[2]");
      CHECK(found[1].message.find("tolerates every device taint {operator: Exists, effect: NoExecute}") != std::string::npos);
      CHECK_FALSE(r.decision.allowed);
      CHECK(access_findings(judge(claim(s.kind, s.api_version, "c", with_tolerations(s.request, good))).decision).empty());

      // Through a pod that refers to it.
      policy_test::TestClaims claims;
      REQUIRE(claims.add(claim(s.kind, s.api_version, "c", with_tolerations(s.request, bad)), "team"));
      Json pod = gpu_pod("plain", "nvidia", 0);
      pod["spec"]["resourceClaims"] = Json::array({{{"name", "gpu"}, {is_template ? "resourceClaimTemplateName" : "resourceClaimName", "c"}}});
      pod["spec"]["containers"][0]["resources"]["claims"] = Json::parse(R"([{"name": "gpu"}])");
      auto rp = judge(pod, &claims);
      INFO(shown(rp.decision));
      auto pod_found = access_findings(rp.decision);
      REQUIRE(pod_found.size() == 2);
      CHECK(pod_found[0].field == "spec.resourceClaims[0]");
      CHECK(pod_found[0].message.find(devices + s.field + "[1]") != std::string::npos);
      std::string request = "gpu";  // a firstAvailable subrequest is named after its request
      if (s.field.find("firstAvailable[1]") != std::string::npos) request = "gpu/b";
      if (s.field.find("firstAvailable[0]") != std::string::npos) request = "gpu/a";
      CHECK(pod_found[0].message.find((is_template ? "claim template c request \"" : "claim c request \"") + request + "\"") !=
            std::string::npos);
      CHECK_FALSE(rp.decision.allowed);
    }
  }
}

TEST_CASE("device tolerations: requests that are not for GPUs, and claims that cannot be found",
          "[gpu-device-access][device-tolerations]") {
  const std::string everything = R"([{"operator": "Exists"}])";
  auto r = judge(claim("ResourceClaim", "resource.k8s.io/v1", "nic",
                       R"({"name": "nic", "exactly": {"deviceClassName": "rdma.example.com", "tolerations": )" + everything + "}}"));
  CHECK(access_findings(r.decision).empty());
  // A claim not found is not judged here: it is judged when it is created and when its devices are
  // allocated, and gpu-cap and the pool rules fail closed on it meanwhile.
  Json pod = gpu_pod("plain", "nvidia", 0);
  pod["spec"]["resourceClaims"] = Json::parse(R"([{"name": "gpu", "resourceClaimName": "later"}])");
  CHECK(access_findings(judge(pod).decision).empty());
}

TEST_CASE("device tolerations: the rule's action applies, and off judges nothing", "[gpu-device-access][device-tolerations]") {
  for (const char* action : {"warn", "audit", "off"}) {
    INFO(action);
    std::string text = kPolicy;
    text.replace(text.find("  mutations:"), 0, std::string("  rules: {gpu-device-access: ") + action + "}\n");
    webhook::PolicyLoad load = webhook::load_policy_text(text, "action.yaml");
    REQUIRE(load.ok());
    Json object = claim("ResourceClaim", "resource.k8s.io/v1", "c",
                        R"({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "tolerations": [{"operator": "Exists"}]}})");
    auto r = policy_test::judge(*load.policy, object, "team");
    REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
    CHECK(r.decision.allowed);
    auto found = access_findings(r.decision);
    if (std::string(action) == "off") {
      CHECK(found.empty());
    } else {
      REQUIRE(found.size() == 1);
      CHECK(std::string(policy::name_of(found[0].action)) == action);
    }
  }
}
