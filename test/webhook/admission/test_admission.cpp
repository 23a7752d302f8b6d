// The AdmissionReview codec and the admission service, without HTTP: contract fields, patches
// applied with nlohmann::json::patch(), UPDATE semantics, bad input.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <future>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/admission_review.h"
#include "webhook/ops/base64.h"
#include "webhook/io/policy_file.h"
#include "webhook/admission/admission_test_support.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

using namespace admission_test;

// The pod as the API server stores it after /mutate (what /validate then receives).
json through_mutate(Fixture& f, const json& pod) {
  json resp = call(f, webhook::Endpoint::Mutate, review(pod))["response"];
  if (!resp.contains("patch")) return pod;
  auto patch_text = webhook::base64_decode(resp["patch"].get<std::string>());
  REQUIRE(patch_text);
  return pod.patch(json::parse(*patch_text));
}

}  // namespace

TEST_CASE("mutate returns a base64 JSON Patch that applies and is idempotent", "[admission]") {
  Fixture f;
  json pod = gpu_pod();
  json out = call(f, webhook::Endpoint::Mutate, review(pod));
  CHECK(out["apiVersion"] == "admission.k8s.io/v1");
  CHECK(out["kind"] == "AdmissionReview");
  const json& resp = out["response"];
  CHECK(resp["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(resp["allowed"] == true);
  REQUIRE(resp["patchType"] == "JSONPatch");
  auto patch_text = webhook::base64_decode(resp["patch"].get<std::string>());
  REQUIRE(patch_text);
  json mutated = pod.patch(json::parse(*patch_text));
  CHECK(mutated["metadata"]["labels"]["gpu-admission.io/tenant"] == "alpha");
  CHECK(mutated["metadata"]["labels"]["cost-center"] == "cc-1");
  CHECK(mutated["spec"]["nodeSelector"]["pool"] == "a100");
  CHECK(mutated["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == 1);
  CHECK_FALSE(mutated["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));

  json again = call(f, webhook::Endpoint::Mutate, review(mutated));
  CHECK_FALSE(again["response"].contains("patch"));
  CHECK_FALSE(again["response"].contains("patchType"));
}

TEST_CASE("validate denies with 403 Forbidden listing each violation", "[admission]") {
  Fixture f;
  json pod = gpu_pod(3 * 7 * 10);  // far over the cap even as 1g.10gb slices
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  json resp = call(f, webhook::Endpoint::Validate, review(pod))["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 403);
  CHECK(resp["status"]["reason"] == "Forbidden");
  std::string message = resp["status"]["message"];
  CHECK(message.find("[gpu-cap] ") != std::string::npos);
  CHECK(message.find("[privileged] container \"main\" is privileged") != std::string::npos);
  CHECK_FALSE(resp.contains("patch"));  // /validate never patches
}

TEST_CASE("warn and audit actions admit with warnings and audit annotations", "[admission]") {
  Fixture f;
  json pod = gpu_pod();
  pod["spec"]["hostNetwork"] = true;
  pod["metadata"]["annotations"] = {{"cdi.k8s.io/gpu", "nvidia.com/gpu=all"}};
  json resp = call(f, webhook::Endpoint::Validate, review(through_mutate(f, pod)))["response"];
  CHECK(resp["allowed"] == true);
  REQUIRE(resp["warnings"].size() == 1);
  std::string warning = resp["warnings"][0];
  CHECK(warning.rfind("[host-namespaces] ", 0) == 0);
  CHECK(warning.size() < 120);
  CHECK(resp["auditAnnotations"].contains("gpu-device-access"));
}

TEST_CASE("/validate judges a pod as it arrives: what /mutate would fix is refused until it is fixed",
          "[admission]") {
  Fixture f;
  json pod = gpu_pod();
  json resp = call(f, webhook::Endpoint::Validate, review(pod))["response"];
  CHECK(resp["allowed"] == false);
  std::string message = resp["status"]["message"];
  INFO(message);
  CHECK(message.find("[tenant-pool] GPU pod is not pinned") != std::string::npos);
  CHECK(message.find("/mutate would have pinned it to pool \"a100\"") != std::string::npos);
  CHECK(message.find("[tenant-label] lacks label gpu-admission.io/tenant") != std::string::npos);
  CHECK_FALSE(resp.contains("patch"));
  // Pinned by hand but not converted: whole GPUs in the MIG pool.
  json pinned = pod;
  pinned["spec"]["nodeSelector"] = {{"pool", "a100"}};
  std::string pinned_message = call(f, webhook::Endpoint::Validate, review(pinned))["response"]["status"]["message"];
  CHECK(pinned_message.find("[mig-profile] container \"main\" requests whole GPUs") != std::string::npos);
  CHECK(pinned_message.find("[tenant-pool]") == std::string::npos);

  json mutated = through_mutate(f, pod);
  CHECK(call(f, webhook::Endpoint::Validate, review(mutated))["response"]["allowed"] == true);
  // A later webhook undoing one change brings the refusal back.
  json undone = mutated;
  undone["spec"].erase("nodeSelector");
  json again = call(f, webhook::Endpoint::Validate, review(undone))["response"];
  CHECK(again["allowed"] == false);
  CHECK(again["status"]["message"].get<std::string>().find("[tenant-pool]") != std::string::npos);
}

TEST_CASE("UPDATE that removes a tenant label is refused, one that keeps it is not", "[admission]") {
  Fixture f;
  json old_pod = through_mutate(f, gpu_pod());
  json updated = old_pod;
  updated["metadata"]["labels"].erase("cost-center");
  json r = review(updated, "UPDATE");
  r["request"]["oldObject"] = old_pod;
  json resp = call(f, webhook::Endpoint::Validate, r)["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["message"].get<std::string>().find("[tenant-label] removes label cost-center") != std::string::npos);

  json kept = review(old_pod, "UPDATE");
  kept["request"]["oldObject"] = old_pod;
  CHECK(call(f, webhook::Endpoint::Validate, kept)["response"]["allowed"] == true);
}

TEST_CASE("warnings stay under 120 characters on one line, in valid UTF-8", "[admission]") {
  std::string long_text = "[rule] " + std::string(200, 'x') + "\nsecond line";
  std::string w = webhook::warning_text(long_text);
  CHECK(w.size() < 120);
  CHECK(w.find('\n') == std::string::npos);
  std::string utf8 = std::string(116, 'a') + "\xC3\xA9\xC3\xA9\xC3\xA9";
  std::string cut = webhook::warning_text(utf8);
  CHECK(cut.size() < 120);
  CHECK((static_cast<unsigned char>(cut[cut.size() - 4]) & 0xC0) != 0xC0);  // no dangling lead byte

  // The API server drops a warning with a control character: C0, DEL and C1 become spaces.
  CHECK(webhook::warning_text("a\x1b[2K\rb\x7f\xc2\x85" "c\xc2\xa0" "d") == "a [2K b  c\xc2\xa0" "d");
  // A 1.4 MB message is read only as far as it is shown.
  const std::string big = "[rule] " + std::string(1400000, 'a');
  CHECK(webhook::warning_text(big) == "[rule] " + std::string(109, 'a') + "...");
  CHECK(webhook::warning_text(std::string(119, 'a')) == std::string(119, 'a'));
  CHECK(webhook::warning_text(std::string(120, 'a')) == std::string(116, 'a') + "...");
}

TEST_CASE("bad bodies get HTTP 400, unreadable objects get allowed=false code 400", "[admission]") {
  Fixture f;
  CHECK(f.service.handle(webhook::Endpoint::Validate, "not json").status == 400);
  CHECK(f.service.handle(webhook::Endpoint::Validate, R"({"kind":"Pod"})").status == 400);
  CHECK(f.service.handle(webhook::Endpoint::Validate, R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE"}})").status == 400);
  CHECK(f.service.handle(webhook::Endpoint::Validate, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}})").status == 400);

  json pod = gpu_pod();
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", "yes"}};
  json resp = call(f, webhook::Endpoint::Validate, review(pod))["response"];
  CHECK(resp["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 400);
  CHECK(resp["status"]["message"].get<std::string>().find("spec.containers[0].securityContext.privileged") != std::string::npos);

  json no_object = call(f, webhook::Endpoint::Validate, review(nullptr))["response"];
  CHECK(no_object["allowed"] == false);
  CHECK(no_object["status"]["code"] == 400);
}

TEST_CASE("DELETE, other kinds and exempt namespaces or users are allowed", "[admission]") {
  Fixture f;
  json bad = gpu_pod();
  bad["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  CHECK(call(f, webhook::Endpoint::Validate, review(nullptr, "DELETE"))["response"]["allowed"] == true);
  CHECK(call(f, webhook::Endpoint::Validate, review(json{{"kind", "ConfigMap"}}, "CREATE", "ConfigMap"))["response"]["allowed"] == true);
  CHECK(call(f, webhook::Endpoint::Validate, review(bad, "CREATE", "Pod", "kube-system"))["response"]["allowed"] == true);
  json by_admin = review(bad);
  by_admin["request"]["userInfo"]["username"] = "system:admin";
  CHECK(call(f, webhook::Endpoint::Validate, by_admin)["response"]["allowed"] == true);
  CHECK(call(f, webhook::Endpoint::Validate, review(bad))["response"]["allowed"] == false);
}

TEST_CASE("UPDATE is refused only for what it adds (kubectl debug path)", "[admission]") {
  Fixture f;
  json old_pod = gpu_pod();
  old_pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  old_pod["spec"]["tolerations"] = json::array();  // admitted before the taint rule existed
  json new_pod = old_pod;
  new_pod["metadata"]["labels"] = {{"app", "x"}};
  json r = review(new_pod, "UPDATE");
  r["request"]["oldObject"] = old_pod;
  CHECK(call(f, webhook::Endpoint::Validate, r)["response"]["allowed"] == true);

  json debug = old_pod;
  debug["spec"]["ephemeralContainers"] = {{{"name", "debugger"}, {"image", "busybox"}, {"securityContext", {{"privileged", true}}}}};
  json e = review(debug, "UPDATE");
  e["request"]["subResource"] = "ephemeralcontainers";
  e["request"]["oldObject"] = old_pod;
  json resp = call(f, webhook::Endpoint::Validate, e)["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["message"].get<std::string>().find("ephemeral container \"debugger\" is privileged") != std::string::npos);
}

TEST_CASE("workload templates are validated on /validate and never patched on /mutate", "[admission]") {
  Fixture f;
  json deploy = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "web"}, {"namespace", "team-alpha"}}},
                 {"spec", {{"template", {{"spec", gpu_pod()["spec"]}}}}}};
  deploy["spec"]["template"]["spec"]["hostPID"] = true;
  deploy["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  json resp = call(f, webhook::Endpoint::Validate, review(deploy, "CREATE", "Deployment"))["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["message"].get<std::string>().find("[privileged]") != std::string::npos);
  json mresp = call(f, webhook::Endpoint::Mutate, review(deploy, "CREATE", "Deployment"))["response"];
  CHECK(mresp["allowed"] == true);
  CHECK_FALSE(mresp.contains("patch"));
}

TEST_CASE("a response without policy fails closed", "[admission]") {
  webhook::PolicyHolder empty;
  webhook::AdmissionService service(empty, nullptr, nullptr);
  webhook::HttpReply reply = service.handle(webhook::Endpoint::Validate, review(gpu_pod()).dump());
  json resp = json::parse(reply.body)["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 500);
}

TEST_CASE("duplicate keys anywhere in the review are refused as ambiguous", "[admission]") {
  Fixture f;
  std::string body = review(gpu_pod()).dump();
  // Hide a second, privileged securityContext behind the first: parsers disagree on which wins.
  std::string needle = "\"name\":\"main\"";
  auto pos = body.find(needle);
  REQUIRE(pos != std::string::npos);
  body.insert(pos + needle.size(), ",\"securityContext\":{\"privileged\":false},\"securityContext\":{\"privileged\":true}");
  // Refused in the AdmissionReview (allowed: false whatever the failurePolicy), naming the field.
  webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, body);
  CHECK(reply.status == 200);
  json resp = json::parse(reply.body)["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 400);
  const std::string message = resp["status"]["message"];
  CHECK(message.find("duplicate key \"securityContext\"") != std::string::npos);
  CHECK(message.find("request.object field spec.containers[0]") != std::string::npos);
}

TEST_CASE("duplicate keys in a very large object are found without comparing every pair", "[admission]") {
  // 200,000 labels: a quadratic check would take minutes (a denial of service with one
  // 5 MB request); sorted, it is milliseconds.
  Fixture f;
  json pod = gpu_pod();
  for (int i = 0; i < 200000; ++i) pod["metadata"]["labels"]["label-" + std::to_string(i)] = "x";
  const std::string clean = review(pod).dump();
  json resp = json::parse(f.service.handle(webhook::Endpoint::Validate, clean).body)["response"];
  CHECK(resp["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");

  std::string body = clean;
  const std::string needle = "\"labels\":{";
  const auto pos = body.find(needle);
  REQUIRE(pos != std::string::npos);
  body.insert(pos + needle.size(), "\"label-123456\":\"y\",");
  // A hang guard, not a speed target: the quadratic check took 33 s here, the sorted one 10 ms.
  auto answer = std::async(std::launch::async, [&] { return f.service.handle(webhook::Endpoint::Validate, body); });
  if (answer.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    FAIL_CHECK("the duplicate-key check of 200,000 keys ran for over 30 s");
    std::_Exit(1);  // it would go on for minutes
  }
  json refused = json::parse(answer.get().body)["response"];
  CHECK(refused["allowed"] == false);
  const std::string message = refused["status"]["message"];
  CHECK(message.find("duplicate key \"label-123456\"") != std::string::npos);
  CHECK(message.find("request.object field metadata.labels") != std::string::npos);
}

TEST_CASE("an exception during evaluation fails closed with code 500, and serving goes on", "[admission]") {
  Fixture f;
  f.service.set_evaluation_probe([] { throw std::runtime_error("injected fault"); });
  json resp = call(f, webhook::Endpoint::Validate, review(gpu_pod()))["response"];
  CHECK(resp["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 500);
  CHECK(resp["status"]["message"].get<std::string>().find("injected fault") != std::string::npos);
  CHECK(f.metrics.serialize().find("gpu_admission_internal_errors_total 1") != std::string::npos);

  f.service.set_evaluation_probe(nullptr);
  CHECK(call(f, webhook::Endpoint::Validate, review(through_mutate(f, gpu_pod())))["response"]["allowed"] == true);
}

TEST_CASE("/validate judges ResourceClaims and ResourceClaimTemplates of resource.k8s.io on CREATE and UPDATE",
          "[admission][dra]") {
  Fixture f;
  json claim = json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
    "metadata":{"name":"many","namespace":"team-alpha"},
    "spec":{"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":3}}]}}}})");
  auto claim_review = [&](const json& object, const std::string& operation, const std::string& group) {
    json r = review(object, operation, "ResourceClaimTemplate");
    r["request"]["kind"] = {{"group", group}, {"version", "v1"}, {"kind", "ResourceClaimTemplate"}};
    r["request"]["resource"] = {{"group", group}, {"version", "v1"}, {"resource", "resourceclaimtemplates"}};
    return r;
  };
  json resp = call(f, webhook::Endpoint::Validate, claim_review(claim, "CREATE", "resource.k8s.io"))["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["message"].get<std::string>().find("[gpu-cap] claim template asks for 3 GPUs") != std::string::npos);
  // UPDATE: refused only for what it adds.
  json update = claim_review(claim, "UPDATE", "resource.k8s.io");
  update["request"]["oldObject"] = claim;
  CHECK(call(f, webhook::Endpoint::Validate, update)["response"]["allowed"] == true);
  // A custom resource of the same kind in another group is not ours to judge; /mutate never patches claims.
  CHECK(call(f, webhook::Endpoint::Validate, claim_review(claim, "CREATE", "example.com"))["response"]["allowed"] == true);
  CHECK_FALSE(call(f, webhook::Endpoint::Mutate, claim_review(claim, "CREATE", "resource.k8s.io"))["response"].contains("patch"));
  // A claim that cannot be read is refused naming the field.
  claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = "three";
  json bad = call(f, webhook::Endpoint::Validate, claim_review(claim, "CREATE", "resource.k8s.io"))["response"];
  CHECK(bad["status"]["code"] == 400);
  CHECK(bad["status"]["message"].get<std::string>().find("spec.spec.devices.requests[0].exactly.count") != std::string::npos);
}

TEST_CASE("without cluster state a pod's DRA claim is unresolved: a GPU pod that gpu-cap refuses", "[admission][dra]") {
  Fixture f;
  json pod = gpu_pod();
  pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
  pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "one-gpu"}}};
  json resp = call(f, webhook::Endpoint::Validate, review(through_mutate(f, pod)))["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["message"].get<std::string>().find(
            "[gpu-cap] cannot count the GPUs of ResourceClaimTemplate one-gpu: not found") != std::string::npos);
}
