// PodGroups (scheduling.k8s.io, Kubernetes 1.36+) through the admission service: a group is
// judged on CREATE in every served version (its claims as each of its pods will have them), on
// UPDATE only for what it adds, never on /mutate or its status; a pod of a group is judged with
// the group's claims (resolved through the service's PodGroupResolver) and fails closed when the
// group cannot be found; a claim reserved for a group is judged with the group when allocated.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/admission_test_support.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_groups.h"
#include "webhook/dra_test_devices.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

using namespace admission_test;

json claim(const std::string& name, const json& devices) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-alpha"}}},
          {"spec", {{"devices", devices}}}};
}

json pod_group(const std::string& version, const json& claims, const std::string& name = "g") {
  json entries = json::array();
  for (const auto& c : claims) entries.push_back({{"name", "e-" + c.get<std::string>()}, {"resourceClaimName", c}});
  return {{"apiVersion", "scheduling.k8s.io/" + version},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "team-alpha"}, {"uid", "group-uid"}}},
          {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", 2}}}}}, {"resourceClaims", entries}}}};
}

json group_review(const json& object, const std::string& operation, const std::string& version = "v1alpha2") {
  json r = review(object, operation, "PodGroup");
  r["request"]["kind"] = {{"group", "scheduling.k8s.io"}, {"version", version}, {"kind", "PodGroup"}};
  r["request"]["resource"] = {{"group", "scheduling.k8s.io"}, {"version", version}, {"resource", "podgroups"}};
  r["request"]["name"] = object["metadata"]["name"];
  return r;
}

// A pod of group `group` in the adversarial MIG pool, asking for nothing itself.
json member_pod(const std::string& group) {
  json pod = gpu_pod(0);
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1"}};
  pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  pod["spec"]["containers"][0].erase("resources");
  pod["spec"]["schedulingGroup"] = {{"podGroupName", group}};
  return pod;
}

struct GroupFixture : Fixture {
  webhook::InputClaims claims;
  webhook::InputGroups groups;
  GroupFixture() {
    claims.add(claim("slice", dra_test::one_mig_slice()), "team-alpha");
    claims.add(claim("four", dra_test::whole_gpus(4)), "team-alpha");
    claims.add(claim("mps", dra_test::mps_mig_slice()), "team-alpha");
    service.set_claim_resolver(&claims);
    service.set_group_resolver(&groups);
  }
  json validate(const json& body) { return call(*this, webhook::Endpoint::Validate, body)["response"]; }
};

std::string message_of(const json& response) { return response["status"]["message"].get<std::string>(); }

}  // namespace

TEST_CASE("podgroup: CREATE is judged in every served version", "[admission][podgroup]") {
  GroupFixture f;
  for (const char* version : {"v1alpha2", "v1alpha3", "v1beta1"}) {
    INFO(version);
    json resp = f.validate(group_review(pod_group(version, {"four"}), "CREATE", version));
    INFO(resp.dump());
    REQUIRE(resp["allowed"] == false);
    CHECK(resp["status"]["code"] == 403);
    CHECK(message_of(resp).find("[gpu-cap]") != std::string::npos);
    CHECK(message_of(resp).find("[mig-profile]") != std::string::npos);

    resp = f.validate(group_review(pod_group(version, {"mps"}), "CREATE", version));
    REQUIRE(resp["allowed"] == false);
    CHECK(message_of(resp).find("[mps-adversarial]") != std::string::npos);

    resp = f.validate(group_review(pod_group(version, {"slice"}), "CREATE", version));
    CHECK(resp["allowed"] == true);
  }
  // A claim of the group that cannot be found fails closed.
  json resp = f.validate(group_review(pod_group("v1alpha2", {"missing"}), "CREATE"));
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("ResourceClaim missing: not found") != std::string::npos);
  // A PodGroup of a version that serves none cannot be read.
  resp = f.validate(group_review(pod_group("v1", {"slice"}), "CREATE", "v1"));
  CHECK(resp["allowed"] == false);
}

TEST_CASE("podgroup: UPDATE is refused only for what it adds; /mutate and status are not judged",
          "[admission][podgroup]") {
  GroupFixture f;
  json bad = pod_group("v1beta1", {"four"});
  json r = group_review(bad, "UPDATE", "v1beta1");
  r["request"]["oldObject"] = bad;
  CHECK(f.validate(r)["allowed"] == true);
  r["request"]["oldObject"] = pod_group("v1beta1", {"slice"});
  CHECK(f.validate(r)["allowed"] == false);

  json status = group_review(bad, "UPDATE", "v1beta1");
  status["request"]["subResource"] = "status";
  status["request"]["oldObject"] = pod_group("v1beta1", {"slice"});
  CHECK(f.validate(status)["allowed"] == true);

  json mutated = call(f, webhook::Endpoint::Mutate, group_review(bad, "CREATE"))["response"];
  CHECK(mutated["allowed"] == true);
  CHECK_FALSE(mutated.contains("patch"));
}

TEST_CASE("podgroup: a pod of a group is judged with the group's claims", "[admission][podgroup]") {
  GroupFixture f;
  f.groups.add(pod_group("v1alpha2", {"mps"}, "shares-mps"), "team-alpha");
  f.groups.add(pod_group("v1alpha3", {"slice"}, "shares-slice"), "team-alpha");

  json resp = f.validate(review(member_pod("shares-mps")));
  INFO(resp.dump());
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("[mps-adversarial]") != std::string::npos);
  CHECK(message_of(resp).find("of PodGroup shares-mps") != std::string::npos);

  CHECK(f.validate(review(member_pod("shares-slice")))["allowed"] == true);

  // Its group cannot be found: refused, saying what to do.
  resp = f.validate(review(member_pod("not-yet")));
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("PodGroup not-yet: not found") != std::string::npos);
  CHECK(message_of(resp).find("create the PodGroup before its pods") != std::string::npos);
}

TEST_CASE("podgroup: a claim reserved for a group is judged with the group when allocated",
          "[admission][podgroup][allocation]") {
  GroupFixture f;
  f.groups.add(pod_group("v1beta1", {"c1"}), "team-alpha");
  auto allocate = [&](const json& devices, const std::string& group) {
    json object = claim("c1", devices);
    json updated = object;
    updated["status"]["allocation"] = {{"devices", {{"results", json::array()}}}};
    updated["status"]["reservedFor"] = json::array(
        {{{"apiGroup", "scheduling.k8s.io"}, {"resource", "podgroups"}, {"name", group}, {"uid", "group-uid"}}});
    json r = review(updated, "UPDATE", "ResourceClaim");
    r["request"]["kind"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", "ResourceClaim"}};
    r["request"]["resource"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"resource", "resourceclaims"}};
    r["request"]["subResource"] = "status";
    r["request"]["name"] = "c1";
    r["request"]["userInfo"]["username"] = "system:kube-scheduler";
    r["request"]["oldObject"] = object;
    return f.validate(r);
  };
  CHECK(allocate(dra_test::one_mig_slice(), "g")["allowed"] == true);
  json resp = allocate(dra_test::whole_gpus(4), "g");
  INFO(resp.dump());
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("[gpu-cap] PodGroup team-alpha/g: ") != std::string::npos);
  // A group cluster state does not know cannot be judged: refused, the scheduler retries.
  resp = allocate(dra_test::one_mig_slice(), "unknown");
  REQUIRE(resp["allowed"] == false);
  CHECK(message_of(resp).find("PodGroup team-alpha/unknown: not found") != std::string::npos);
}
