// The tenant's side of fuzz_review_sequence: one pod of tenant research and its two claims, driven
// through the sequences a tenant with namespace-owner rights can arrange (create the pod gated,
// re-point it at a pool, swap its claims under it, ungate it, have the scheduler allocate a claim,
// add a label). The invariant is the product's promise at commit points: whenever an UPDATE that
// starts or moves the pod, or an allocation, is allowed, the pod as it now is, with its claims as
// they now are, would be admitted if it were created now. A step that breaks it aborts (a finding).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "webhook/cli/input_claims.h"
#include "webhook/dra_test_devices.h"

namespace commit_points {

using nlohmann::json;

constexpr const char* kPodName = "tenant-pod";
constexpr const char* kPodUid = "tenant-pod-uid";
constexpr const char* kClaimNames[] = {"c0", "c1"};

// The claims as the tenant last left them (created while the webhook failed open, or allowed).
struct Claims {
  std::map<std::string, json> objects;
  std::unique_ptr<gpu_admission::webhook::InputClaims> resolver =
      std::make_unique<gpu_admission::webhook::InputClaims>();

  void put(const std::string& name, const json& devices) {
    objects[name] = {{"apiVersion", "resource.k8s.io/v1"},
                     {"kind", "ResourceClaim"},
                     {"metadata", {{"name", name}, {"namespace", "research"}, {"uid", "uid-" + name}}},
                     {"spec", {{"devices", devices}}}};
    resolver = std::make_unique<gpu_admission::webhook::InputClaims>();
    for (const auto& [_, object] : objects) resolver->add(object, "research");
  }
};

// What a swapped claim asks for: something that makes no GPU pod, a slice within the cap, whole
// GPUs (over the cap in the MIG pool), MPS, time-slicing, adminAccess.
inline json claim_devices(uint8_t choice) {
  switch (choice % 7) {
    case 0:
      return json::parse(R"({"requests":[{"name":"nic","exactly":{"deviceClassName":"nic.example.com","count":2}}]})");
    case 1: return dra_test::one_mig_slice();
    case 2: return dra_test::whole_gpus(1);
    case 3: return dra_test::whole_gpus(4);
    case 4: return dra_test::mps_mig_slice();
    case 5: return dra_test::time_sliced_mig_slice();
    default: {
      json devices = dra_test::one_mig_slice();
      devices["requests"][0]["exactly"]["adminAccess"] = true;
      return devices;
    }
  }
}

// The tenant's pod as /mutate would leave it in pool a100-mig (labels, pool, tolerations), gated,
// using both claims; `bits` add what a tenant may try (privileged, hostIPC, a MIG slice, another
// pool, no pool).
inline json gated_pod(uint8_t bits) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", kPodName},
                {"namespace", "research"},
                {"uid", kPodUid},
                {"labels", {{"gpu-admission.io/tenant", "research"}, {"cost-center", "research"}}}}},
              {"spec",
               {{"schedulingGates", {{{"name", "example.com/queue"}}}},
                {"nodeSelector", {{"gpu-admission.io/pool", bits & 8 ? "h100-shared" : "a100-mig"}}},
                {"tolerations",
                 {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}},
                  {{"key", "gpu-admission.io/pool"}, {"operator", "Exists"}}}},
                {"resourceClaims",
                 {{{"name", "a"}, {"resourceClaimName", kClaimNames[0]}},
                  {{"name", "b"}, {"resourceClaimName", kClaimNames[1]}}}},
                {"containers",
                 {{{"name", "main"},
                   {"image", "cuda"},
                   {"resources", {{"claims", {{{"name", "a"}}, {{"name", "b"}}}}}}}}}}}};
  json& main = pod["spec"]["containers"][0];
  if (bits & 1) main["securityContext"] = {{"privileged", true}};
  if (bits & 2) pod["spec"]["hostIPC"] = true;
  if (bits & 4) main["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  if (bits & 16) pod["spec"].erase("nodeSelector");  // a pod without GPUs is never pinned
  return pod;
}

// The pod re-pointed: another tenant's pool, its own, none, or both.
inline json repointed(json pod, uint8_t choice) {
  switch (choice % 4) {
    case 0: pod["spec"]["nodeSelector"] = {{"gpu-admission.io/pool", "h100-shared"}}; break;
    case 1: pod["spec"]["nodeSelector"] = {{"gpu-admission.io/pool", "a100-mig"}}; break;
    case 2: pod["spec"].erase("nodeSelector"); break;
    default:
      pod["spec"]["affinity"] = json::parse(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu-admission.io/pool","operator":"In",
        "values":["h100-shared"]}]}]}}})");
  }
  return pod;
}

inline json ungated(json pod) {
  pod["spec"].erase("schedulingGates");
  return pod;
}

inline json labelled(json pod) {
  pod["metadata"]["labels"]["example.com/note"] = "x";
  return pod;
}

// The scheduler's status UPDATE allocating `claim` for the tenant's pod.
inline json allocation(const json& claim) {
  json object = claim;
  object["status"] = {{"allocation", {{"devices", {{"results", json::array()}}}}},
                      {"reservedFor", {{{"resource", "pods"}, {"name", kPodName}, {"uid", kPodUid}}}}};
  return object;
}

}  // namespace commit_points
