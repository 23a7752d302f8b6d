// Commit points: an UPDATE that starts or moves a pod (the last scheduling gate removed; its
// nodeSelector, affinity, tolerations or resourceClaims changed) is judged in full, as if the pod
// were created now, so nothing a tenant arranged earlier (a pod admitted while nothing was
// enforced, claims swapped under a gated pod) is excused. Every other UPDATE is refused only for
// findings the old object did not have, where a finding is the same only when its rule, field and
// message are: a violation that grows is new.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission_test_support.h"
#include "webhook/cli/input_claims.h"
#include "webhook/dra_test_devices.h"

using namespace admission_test;

namespace {

// Tenant alpha's pod as /mutate leaves it in pool a100 (labels, pin, the GPU taint tolerated),
// asking for one MIG slice, held back by a scheduling gate.
json gated_pod() {
  json pod = gpu_pod();
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1"}};
  pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  pod["spec"]["schedulingGates"] = {{{"name", "example.com/queue"}}};
  pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  return pod;
}

json update(const json& object, const json& old_object, const std::string& kind = "Pod") {
  json r = review(object, "UPDATE", kind);
  r["request"]["oldObject"] = old_object;
  return r;
}

json validate(Fixture& f, const json& body) { return call(f, webhook::Endpoint::Validate, body)["response"]; }

std::string message_of(const json& response) { return response["status"].value("message", ""); }

json without_gates(json pod) {
  pod["spec"].erase("schedulingGates");
  return pod;
}

}  // namespace

TEST_CASE("commit points: the ungating UPDATE is judged in full, other updates only for what they add",
          "[admission][commit-point]") {
  Fixture f;
  // Admitted when privileged was not enforced (or by an exemption that no longer applies).
  json old_pod = gated_pod();
  old_pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};

  // Another label on it: not a commit point, the old finding stays excused.
  json labelled = old_pod;
  labelled["metadata"]["labels"]["example.com/note"] = "x";
  CHECK(validate(f, update(labelled, old_pod))["allowed"] == true);

  // One of two gates removed: still gated, nothing starts.
  json two_gates = old_pod;
  two_gates["spec"]["schedulingGates"].push_back({{"name", "example.com/quota"}});
  CHECK(validate(f, update(old_pod, two_gates))["allowed"] == true);

  // The last gate removed: the pod starts, so it is judged as if created now.
  json refused = validate(f, update(without_gates(old_pod), old_pod));
  INFO(refused.dump());
  REQUIRE(refused["allowed"] == false);
  CHECK(message_of(refused).find("[privileged] container \"main\" is privileged") != std::string::npos);
  CHECK(message_of(refused).find("judged in full: this update removes the pod's last scheduling gate") !=
        std::string::npos);

  // The legitimate flow: a good pod is ungated.
  CHECK(validate(f, update(without_gates(gated_pod()), gated_pod()))["allowed"] == true);
}

TEST_CASE("commit points: every field that moves a pod makes its UPDATE a commit point", "[admission][commit-point]") {
  Fixture f;
  json old_pod = gated_pod();
  old_pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  struct Change {
    const char* what;
    void (*apply)(json&);
  };
  const Change changes[] = {
      {"changes spec.nodeSelector", [](json& p) { p["spec"]["nodeSelector"]["zone"] = "a"; }},
      {"changes spec.affinity",
       [](json& p) {
         p["spec"]["affinity"] = json::parse(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
           {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}})");
       }},
      {"changes spec.tolerations", [](json& p) { p["spec"]["tolerations"].push_back({{"operator", "Exists"}}); }},
      {"changes spec.resourceClaims",
       [](json& p) { p["spec"]["resourceClaims"] = {{{"name", "x"}, {"resourceClaimName", "x"}}}; }},
      {"changes the pod's scheduling group",
       [](json& p) { p["spec"]["schedulingGroup"] = {{"podGroupName", "g"}}; }},
  };
  for (const Change& change : changes) {
    json moved = old_pod;
    change.apply(moved);
    json answer = validate(f, update(moved, old_pod));
    INFO(change.what << ": " << answer.dump());
    CHECK(answer["allowed"] == false);
    CHECK(message_of(answer).find("[privileged]") != std::string::npos);
    CHECK(message_of(answer).find(change.what) != std::string::npos);
  }
  // The same fields through pods/ephemeralcontainers: the API server keeps only the ephemeral
  // containers of such an update, so it moves nothing and is judged for what it adds.
  json debug = old_pod;
  debug["spec"]["nodeSelector"]["zone"] = "a";
  debug["spec"]["ephemeralContainers"] = {{{"name", "debug"}, {"image", "busybox"}}};
  json ephemeral = update(debug, old_pod);
  ephemeral["request"]["subResource"] = "ephemeralcontainers";
  CHECK(validate(f, ephemeral)["allowed"] == true);
}

TEST_CASE("commit points: a pod banked while observing cannot start once enforcement begins",
          "[admission][commit-point]") {
  Fixture f;
  // Admitted unpinned and unlabelled while /mutate withheld its changes (observe mode): an
  // adversarial-pool tenant's GPU pod, privileged, hostIPC, 8 whole GPUs.
  json banked = gpu_pod(8);
  banked["spec"]["schedulingGates"] = {{{"name", "example.com/queue"}}};
  banked["spec"]["hostIPC"] = true;
  banked["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  json repointed = banked;
  repointed["spec"]["nodeSelector"] = {{"pool", "a100"}};
  json answer = validate(f, update(repointed, banked));
  CHECK(answer["allowed"] == false);
  answer = validate(f, update(without_gates(repointed), repointed));
  INFO(answer.dump());
  REQUIRE(answer["allowed"] == false);
  for (const char* rule : {"[privileged]", "[gpu-cap]", "[mig-profile]", "[tenant-label]"})
    CHECK(message_of(answer).find(rule) != std::string::npos);
  // Ungated where it stands, unpinned: tenant-pool too.
  answer = validate(f, update(without_gates(banked), banked));
  CHECK(message_of(answer).find("[tenant-pool]") != std::string::npos);
}

TEST_CASE("commit points: the ungating UPDATE counts the pod's claims as they now are", "[admission][commit-point]") {
  Fixture f;
  webhook::InputClaims claims;
  f.service.set_claim_resolver(&claims);
  auto put_claims = [&](const json& devices) {
    for (const char* name : {"c0", "c1"})
      claims.add({{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", "team-alpha"}}},
                  {"spec", {{"devices", devices}}}},
                 "team-alpha");
  };
  // Admitted with two claims of a NIC class: no GPU pod, so never pinned.
  json pod = gated_pod();
  pod["spec"].erase("nodeSelector");
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "a"}}, {{"name", "b"}}}}};
  pod["spec"]["resourceClaims"] = {{{"name", "a"}, {"resourceClaimName", "c0"}},
                                   {{"name", "b"}, {"resourceClaimName", "c1"}}};
  put_claims(json::parse(R"({"requests":[{"name":"nic","exactly":{"deviceClassName":"nic.example.com"}}]})"));
  CHECK(validate(f, update(without_gates(pod), pod))["allowed"] == true);
  // Swapped for whole GPUs with MPS: now a GPU pod over the cap, not pinned (a new resolver: the
  // claims are found by their new content).
  webhook::InputClaims swapped;
  f.service.set_claim_resolver(&swapped);
  json devices = dra_test::whole_gpus(2);
  devices["config"] = dra_test::mps_mig_slice()["config"];
  for (const char* name : {"c0", "c1"})
    swapped.add({{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "ResourceClaim"},
                 {"metadata", {{"name", name}, {"namespace", "team-alpha"}}},
                 {"spec", {{"devices", devices}}}},
                "team-alpha");
  json answer = validate(f, update(without_gates(pod), pod));
  INFO(answer.dump());
  CHECK(answer["allowed"] == false);
  CHECK(message_of(answer).find("[gpu-cap]") != std::string::npos);
  CHECK(message_of(answer).find("[tenant-pool]") != std::string::npos);
}

TEST_CASE("a violation that grows on UPDATE is new: same rule, field and message only", "[admission][update]") {
  Fixture f;
  // Whole A100s as 7g.80gb slices (templates are judged after mig-resources, which leaves these).
  auto deployment = [](int gpus) {
    json spec = gpu_pod()["spec"];
    spec["nodeSelector"] = {{"pool", "a100"}};
    spec["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-7g.80gb", gpus}};
    return json{{"apiVersion", "apps/v1"},
                {"kind", "Deployment"},
                {"metadata", {{"name", "train"}, {"namespace", "team-alpha"}}},
                {"spec", {{"template", {{"metadata", {{"labels", {{"app", "train"}}}}}, {"spec", spec}}}}}};
  };
  // 9 GPUs grandfathered (the cap came later): a label change is fine...
  json nine = deployment(9);
  REQUIRE(validate(f, review(nine, "CREATE", "Deployment"))["allowed"] == false);
  json relabelled = nine;
  relabelled["metadata"]["labels"] = {{"team", "x"}};
  json same = validate(f, update(relabelled, nine, "Deployment"));
  INFO(same.dump());
  CHECK(same["allowed"] == true);
  // ...9 becoming 64 is not the same finding, though rule and field are.
  json grown = validate(f, update(deployment(64), nine, "Deployment"));
  INFO(grown.dump());
  CHECK(grown["allowed"] == false);
  CHECK(message_of(grown).find("[gpu-cap]") != std::string::npos);
  CHECK(message_of(grown).find("64") != std::string::npos);
}
