// A claim judged again when its devices are allocated (UPDATE of resourceclaims/status), a commit
// point: the pods it is reserved for are judged in full with all their claims as they now are, so
// a claim swapped or created after its pod's admission is refused, naming the pod and the rules,
// and no other claim of the pod vouches for it. The claim the scheduler makes for a pod's
// DRA-backed extended resources is judged with its pod.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/admission_test_support.h"
#include "webhook/cli/input_claims.h"
#include "webhook/dra_test_devices.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

using namespace admission_test;

constexpr const char* kPodUid = "0f6c2f0c-pod-uid";

// Pods by name (JSON text) for the service's PodSource; counts the fetches.
struct FakePods final : policy::PodSource {
  std::map<std::string, std::string> pods;
  bool fail = false;
  mutable std::atomic<int> fetches{0};
  Outcome pod_json(std::string_view ns, std::string_view name, std::string& out) const override {
    ++fetches;
    if (fail) {
      out = "timed out after 1000 ms";
      return Outcome::Error;
    }
    auto it = pods.find(std::string(ns) + "/" + std::string(name));
    if (it == pods.end()) return Outcome::NotFound;
    out = it->second;
    return Outcome::Found;
  }
};

// A GPU pod of tenant alpha in the adversarial MIG pool a100, using claim `claim` (by name) or
// a claim made from template `templ`.
json claim_pod(const std::string& name, const std::string& claim, const std::string& templ = "") {
  json pod = gpu_pod();
  pod["metadata"]["name"] = name;
  pod["metadata"]["uid"] = kPodUid;
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1"}};
  pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
  json entry = {{"name", "gpu"}};
  if (templ.empty()) entry["resourceClaimName"] = claim;
  else entry["resourceClaimTemplateName"] = templ;
  pod["spec"]["resourceClaims"] = json::array({entry});
  return pod;
}

json one_slice() { return dra_test::one_mig_slice(); }
json whole_gpus(int count) { return dra_test::whole_gpus(count); }
json mps_slice() { return dra_test::mps_mig_slice(); }

json claim(const std::string& name, const json& devices) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-alpha"}, {"uid", "claim-uid-" + name}}},
          {"spec", {{"devices", devices}}}};
}

json allocated(json object, const json& pods) {
  object["status"]["allocation"] = {{"devices", {{"results", json::array()}}}};
  object["status"]["reservedFor"] = json::array();
  for (const auto& name : pods)
    object["status"]["reservedFor"].push_back(
        {{"resource", "pods"}, {"name", name}, {"uid", name == "other" ? "uid-of-other" : kPodUid}});
  return object;
}

// The scheduler's UPDATE of resourceclaims/status from `old_object` to `object`.
json status_update(const json& object, const json& old_object) {
  json r = review(object, "UPDATE", "ResourceClaim");
  r["request"]["kind"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", "ResourceClaim"}};
  r["request"]["resource"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"resource", "resourceclaims"}};
  r["request"]["subResource"] = "status";
  r["request"]["name"] = object["metadata"]["name"];
  r["request"]["userInfo"]["username"] = "system:kube-scheduler";
  r["request"]["oldObject"] = old_object;
  return r;
}

struct AllocationFixture : Fixture {
  FakePods pods;
  AllocationFixture() { service.set_pod_source(&pods); }
  void add_pod(const json& pod) { pods.pods["team-alpha/" + pod["metadata"]["name"].get<std::string>()] = pod.dump(); }
  json allocate(const json& object, const json& reserved = json::array({"train"})) {
    return call(*this, webhook::Endpoint::Validate, status_update(allocated(object, reserved), object))["response"];
  }
};

std::string message_of(const json& response) { return response["status"]["message"].get<std::string>(); }

}  // namespace

TEST_CASE("allocation: the claim the pod was admitted with is allocated", "[admission][allocation]") {
  AllocationFixture f;
  f.add_pod(claim_pod("train", "c1"));
  json resp = f.allocate(claim("c1", one_slice()));
  INFO(resp.dump());
  CHECK(resp["allowed"] == true);
  CHECK(f.pods.fetches == 1);
}

TEST_CASE("allocation: a claim swapped under an admitted pod is refused naming the pod and the rules",
          "[admission][allocation]") {
  AllocationFixture f;
  f.add_pod(claim_pod("train", "c1"));
  // Whole GPUs over the cap in the MIG pool.
  json resp = f.allocate(claim("c1", whole_gpus(4)));
  REQUIRE(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 403);
  const std::string text = message_of(resp);
  CHECK(text.find("[gpu-cap] pod team-alpha/train: ") != std::string::npos);
  CHECK(text.find("[mig-profile] pod team-alpha/train: ") != std::string::npos);
  // MPS in the adversarial pool.
  resp = f.allocate(claim("c1", mps_slice()));
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("[mps-adversarial] pod team-alpha/train: ") != std::string::npos);
  // Time-slicing, or a share of a device, in the adversarial pool: gpu-sharing, and nothing else.
  for (const json& devices : {dra_test::time_sliced_mig_slice(), dra_test::shared_mig_slice()}) {
    resp = f.allocate(claim("c1", devices));
    INFO(devices.dump() << " -> " << resp.dump());
    REQUIRE(resp["allowed"] == false);
    CHECK(message_of(resp).find("[gpu-sharing] pod team-alpha/train: ") != std::string::npos);
    CHECK(message_of(resp).find("[mps-adversarial]") == std::string::npos);
  }
}

TEST_CASE("allocation: a claim made from the pod's template is judged in that entry's place",
          "[admission][allocation]") {
  AllocationFixture f;
  f.add_pod(claim_pod("train", "", "one-slice"));
  auto generated = [](const json& devices) {
    json c = claim("train-gpu-x7k2p", devices);
    c["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "gpu"}};
    c["metadata"]["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"uid", kPodUid}, {"controller", true}}});
    return c;
  };
  CHECK(f.allocate(generated(one_slice()))["allowed"] == true);
  json resp = f.allocate(generated(whole_gpus(3)));
  CHECK(resp["allowed"] == false);
  CHECK(message_of(resp).find("[gpu-cap] pod team-alpha/train: ") != std::string::npos);
  // The pod's status says which claim was made for which entry (what the scheduler reads): enough
  // without the annotation or the owner.
  json with_status = claim_pod("train", "", "one-slice");
  with_status["status"]["resourceClaimStatuses"] = {{{"name", "gpu"}, {"resourceClaimName", "train-gpu-x7k2p"}}};
  f.add_pod(with_status);
  json bare = claim("train-gpu-x7k2p", whole_gpus(3));
  CHECK(f.allocate(bare)["allowed"] == false);
  bare["spec"]["devices"] = one_slice();
  CHECK(f.allocate(bare)["allowed"] == true);
  f.add_pod(claim_pod("train", "", "one-slice"));
  // Not owned by the pod: it cannot stand for the pod's entry, and the pod names no such claim.
  json stray = generated(one_slice());
  stray["metadata"].erase("ownerReferences");
  resp = f.allocate(stray);
  CHECK(resp["allowed"] == false);
  CHECK(message_of(resp).find("does not refer to ResourceClaim train-gpu-x7k2p") != std::string::npos);
}

TEST_CASE("allocation: a pod that cannot be judged fails closed", "[admission][allocation]") {
  AllocationFixture f;
  SECTION("not found") {
    json resp = f.allocate(claim("c1", one_slice()));
    CHECK(resp["allowed"] == false);
    CHECK(message_of(resp).find("status.reservedFor[0]: cannot judge pod team-alpha/train: not found") !=
          std::string::npos);
  }
  SECTION("the API server fails") {
    f.add_pod(claim_pod("train", "c1"));
    f.pods.fail = true;
    json resp = f.allocate(claim("c1", one_slice()));
    CHECK(resp["allowed"] == false);
    CHECK(message_of(resp).find("timed out") != std::string::npos);
  }
  SECTION("another pod of the same name (another uid)") {
    json pod = claim_pod("train", "c1");
    pod["metadata"]["uid"] = "a-newer-pod";
    f.add_pod(pod);
    json resp = f.allocate(claim("c1", one_slice()));
    CHECK(resp["allowed"] == false);
    CHECK(message_of(resp).find("is not the pod the claim was reserved for") != std::string::npos);
  }
  SECTION("no pod source: serve without cluster state") {
    f.service.set_pod_source(nullptr);
    json resp = f.allocate(claim("c1", one_slice()));
    CHECK(resp["allowed"] == false);
    CHECK(message_of(resp).find("--cluster") != std::string::npos);
  }
}

TEST_CASE("allocation: the pod is judged in full; other updates are not judged", "[admission][allocation]") {
  AllocationFixture f;
  // The pod is privileged (admitted, say, while privileged was not enforced, or for a user whose
  // exemption cannot apply here: the scheduler writes allocations). Allocation is a commit point.
  json pod = claim_pod("train", "c1");
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  f.add_pod(pod);
  json refused = f.allocate(claim("c1", one_slice()));
  REQUIRE(refused["allowed"] == false);
  CHECK(message_of(refused).find("[privileged] pod team-alpha/train: container \"main\" is privileged") !=
        std::string::npos);
  CHECK(message_of(refused).find("(judged in full: this update allocates the claim's devices)") != std::string::npos);
  f.add_pod(claim_pod("train", "c1"));
  CHECK(f.allocate(claim("c1", one_slice()))["allowed"] == true);
  CHECK(f.allocate(claim("c1", whole_gpus(4)))["allowed"] == false);

  // Already allocated: only pods added to reservedFor are judged.
  f.add_pod(claim_pod("other", "c1"));
  const json base = allocated(claim("c1", whole_gpus(4)), json::array({"train"}));
  const int before = f.pods.fetches;
  json same = call(f, webhook::Endpoint::Validate, status_update(base, base))["response"];
  CHECK(same["allowed"] == true);
  CHECK(f.pods.fetches == before);
  json added = call(f, webhook::Endpoint::Validate,
                    status_update(allocated(claim("c1", whole_gpus(4)), json::array({"train", "other"})), base))["response"];
  CHECK(added["allowed"] == false);
  CHECK(message_of(added).find("pod team-alpha/other") != std::string::npos);
  CHECK(message_of(added).find("pod team-alpha/train") == std::string::npos);
  CHECK(f.pods.fetches == before + 1);

  // No allocation, a deallocation, /mutate, an exempt namespace: nothing to judge.
  const json plain = claim("c1", whole_gpus(4));
  CHECK(call(f, webhook::Endpoint::Validate, status_update(plain, base))["response"]["allowed"] == true);
  CHECK_FALSE(call(f, webhook::Endpoint::Mutate, status_update(base, plain))["response"].contains("patch"));
  json exempt = status_update(base, plain);
  exempt["request"]["namespace"] = "kube-system";
  exempt["request"]["object"]["metadata"]["namespace"] = "kube-system";
  CHECK(call(f, webhook::Endpoint::Validate, exempt)["response"]["allowed"] == true);
  CHECK(f.pods.fetches == before + 1);
}

namespace {

json claim_object(const std::string& name, const json& devices) { return claim(name, devices); }

// Whole GPUs asked for with MPS: each claim alone within a cap of 2.
json whole_gpu_with_mps(int count) {
  json devices = whole_gpus(count);
  devices["config"] = mps_slice()["config"];
  devices["config"][0]["opaque"]["parameters"]["kind"] = "GpuConfig";
  return devices;
}

}  // namespace

TEST_CASE("allocation: claims swapped under a gated pod do not vouch for each other", "[admission][allocation]") {
  AllocationFixture f;
  webhook::InputClaims claims;
  f.service.set_claim_resolver(&claims);
  // Admitted with two NIC claims (no GPU pod, never pinned); both then swapped for whole GPUs with
  // MPS, each within the cap alone; the tenant re-pointed nothing.
  json pod = claim_pod("train", "c0");
  pod["spec"].erase("nodeSelector");
  pod["spec"]["resourceClaims"].push_back({{"name", "second"}, {"resourceClaimName", "c1"}});
  pod["spec"]["containers"][0]["resources"]["claims"].push_back({{"name", "second"}});
  f.add_pod(pod);
  claims.add(claim_object("c0", whole_gpu_with_mps(2)), "team-alpha");
  claims.add(claim_object("c1", whole_gpu_with_mps(2)), "team-alpha");
  for (const char* name : {"c0", "c1"}) {
    json resp = f.allocate(claim_object(name, whole_gpu_with_mps(2)));
    INFO(name << ": " << resp.dump());
    REQUIRE(resp["allowed"] == false);
    CHECK(message_of(resp).find("[gpu-cap] pod team-alpha/train: ") != std::string::npos);
    CHECK(message_of(resp).find("[tenant-pool] pod team-alpha/train: ") != std::string::npos);
  }
  // The same two claims under a pod pinned to its pool: MPS in the adversarial pool, whole GPUs in
  // a MIG pool, four GPUs over the cap: each finding whichever claim is allocated.
  f.add_pod([&] {
    json pinned = pod;
    pinned["spec"]["nodeSelector"] = {{"pool", "a100"}};
    return pinned;
  }());
  json resp = f.allocate(claim_object("c1", whole_gpu_with_mps(2)));
  for (const char* rule : {"[gpu-cap]", "[mps-adversarial]", "[mig-profile]"})
    CHECK(message_of(resp).find(rule) != std::string::npos);
  // The legitimate flow: both claims one pinned slice each, within the cap.
  webhook::InputClaims good;
  good.add(claim_object("c0", one_slice()), "team-alpha");
  good.add(claim_object("c1", one_slice()), "team-alpha");
  f.service.set_claim_resolver(&good);
  CHECK(f.allocate(claim_object("c0", one_slice()))["allowed"] == true);
  CHECK(f.allocate(claim_object("c1", one_slice()))["allowed"] == true);
}

TEST_CASE("allocation: the claim the scheduler makes for DRA-backed extended resources is judged with its pod",
          "[admission][allocation]") {
  AllocationFixture f;
  // A pod asking for MIG slices through an extended resource that a DeviceClass serves with DRA:
  // the scheduler made claim train-extended-resources-x for it, named only in the pod's status.
  auto extended_pod = [](int slices_of_7g) {
    json pod = claim_pod("train", "unused");
    pod["spec"].erase("resourceClaims");
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-7g.80gb", slices_of_7g}}}};
    pod["status"]["extendedResourceClaimStatus"] = {
        {"resourceClaimName", "train-extended-resources-x"},
        {"requestMappings",
         {{{"containerName", "main"}, {"resourceName", "nvidia.com/mig-7g.80gb"}, {"requestName", "container-0-request-0"}}}}};
    return pod;
  };
  json devices = json::parse(R"({"requests":[{"name":"container-0-request-0","exactly":{"deviceClassName":
    "mig.nvidia.com","count":1}}]})");
  const json special = claim_object("train-extended-resources-x", devices);
  f.add_pod(extended_pod(1));
  json resp = f.allocate(special);
  INFO(resp.dump());
  CHECK(resp["allowed"] == true);  // its devices are counted once, through the pod's resources
  f.add_pod(extended_pod(3));
  resp = f.allocate(special);
  CHECK(resp["allowed"] == false);
  CHECK(message_of(resp).find("[gpu-cap] pod team-alpha/train: ") != std::string::npos);
  // Without the status naming it, the claim is not the pod's.
  json unnamed = extended_pod(1);
  unnamed["status"].erase("extendedResourceClaimStatus");
  f.add_pod(unnamed);
  resp = f.allocate(special);
  CHECK(resp["allowed"] == false);
  CHECK(message_of(resp).find("does not refer to ResourceClaim train-extended-resources-x") != std::string::npos);
}

TEST_CASE("allocation: while the tenant observes, what would be refused is recorded in the tenant's mode",
          "[admission][allocation][rollout]") {
  AllocationFixture f;
  auto load = webhook::load_policy_text(kPolicy, "codec.yaml", {webhook::unix_now(), policy::Enforcement::Audit});
  REQUIRE(load.ok());
  f.holder.set(load.policy);
  f.add_pod(claim_pod("train", "c1"));
  const json resp = f.allocate(claim("c1", whole_gpus(4)));
  INFO(resp.dump());
  CHECK(resp["allowed"] == true);
  const std::string metrics = f.metrics.serialize();
  INFO(metrics);
  CHECK(metrics.find(R"(gpu_admission_rule_results_total{action="deny",mode="audit",rule="gpu-cap",tenant="alpha"} 1)") !=
        std::string::npos);
  CHECK(metrics.find(R"(mode="enforce",rule="gpu-cap",tenant="alpha"} 1)") == std::string::npos);
}
