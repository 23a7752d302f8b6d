// Reviews in sequence on one thread, as one event loop answers them: each body lives in its own
// buffer that is freed once answered (as a connection's buffer is reused), so a view of an
// earlier request that survived into a later one reads freed memory (caught by ASan) or names
// another tenant's object. Every kind of review must log and answer with its own object.
#include <catch2/catch.hpp>

#include <stdio.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/admission_test_support.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

using namespace admission_test;

// The service of admission_test::Fixture, logging at info into a temporary file.
struct LoggedFixture {
  FILE* file = tmpfile();
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Info, fileno(file)};
  webhook::AdmissionService service{holder, &metrics, &logger};
  LoggedFixture() {
    auto load = webhook::load_policy_text(kPolicy, "codec.yaml");
    REQUIRE(load.ok());
    holder.set(load.policy);
  }
  ~LoggedFixture() { fclose(file); }

  // The body in a buffer of its own with the padding after it, answered where it lies (as the
  // server does), then overwritten and freed.
  json answer(webhook::Endpoint endpoint, const std::string& body) {
    const size_t size = body.size();
    auto buffer = std::make_unique<char[]>(size + webhook::AdmissionService::kBodyPadding);
    std::memcpy(buffer.get(), body.data(), size);
    std::memset(buffer.get() + size, ' ', webhook::AdmissionService::kBodyPadding);
    webhook::HttpReply reply = service.handle(endpoint, std::string_view(buffer.get(), size), true);
    std::memset(buffer.get(), 'X', size);  // what a reused buffer would hold next
    buffer.reset();
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    return json::parse(reply.body);
  }

  // Log lines written since the last call.
  std::vector<json> new_lines() {
    std::vector<json> lines;
    const off_t end = lseek(fileno(file), 0, SEEK_END);
    std::string text(static_cast<size_t>(end - read_), '\0');
    REQUIRE(pread(fileno(file), text.data(), text.size(), read_) == static_cast<ssize_t>(text.size()));
    read_ = end;
    size_t start = 0;
    while (start < text.size()) {
      const size_t newline = text.find('\n', start);
      lines.push_back(json::parse(text.substr(start, newline - start)));
      start = newline == std::string::npos ? text.size() : newline + 1;
    }
    return lines;
  }

 private:
  off_t read_ = 0;
};

json claim_review(const json& object, const std::string& kind) {
  json r = review(object, "CREATE", kind);
  const std::string resource = kind == "ResourceClaim" ? "resourceclaims" : "resourceclaimtemplates";
  r["request"]["kind"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", kind}};
  r["request"]["resource"] = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"resource", resource}};
  r["request"]["name"] = object["metadata"]["name"];
  return r;
}

json admin_claim(const std::string& name) {
  return json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":")" + name + R"(","namespace":"team-alpha"},
    "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","adminAccess":true}}]}}})");
}

json big_claim_template(const std::string& name) {
  return json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
    "metadata":{"name":")" + name + R"(","namespace":"team-alpha"},
    "spec":{"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","count":9}}]}}}})");
}

// A privileged GPU pod named `name` with `annotation_bytes` of annotations (a large body).
json large_pod(const std::string& name, size_t annotation_bytes) {
  json pod = gpu_pod();
  pod["metadata"]["name"] = name;
  pod["metadata"]["annotations"] = {{"notes", std::string(annotation_bytes, 'a')}};
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  return pod;
}

// The name the one "denied" or "admitted with findings" line of the last request gives.
std::string logged_name(LoggedFixture& f) {
  std::vector<json> lines = f.new_lines();
  std::string name;
  int decisions = 0;
  for (const auto& line : lines) {
    if (line["msg"] != "denied" && line["msg"] != "admitted with findings") continue;
    ++decisions;
    name = line["name"].get<std::string>();
  }
  CHECK(decisions == 1);
  return name;
}

}  // namespace

TEST_CASE("a claim after a large pod on the same thread names the claim, never the freed pod",
          "[admission][sequence]") {
  LoggedFixture f;
  for (size_t pod_bytes : {size_t{100}, size_t{200} << 10, size_t{2} << 20}) {
    INFO("pod annotations of " << pod_bytes << " bytes");
    json denied = f.answer(webhook::Endpoint::Validate, review(large_pod("other-tenant-pod", pod_bytes)).dump());
    CHECK(denied["response"]["allowed"] == false);
    CHECK(logged_name(f) == "other-tenant-pod");

    json claim = f.answer(webhook::Endpoint::Validate, claim_review(admin_claim("my-claim"), "ResourceClaim").dump());
    CHECK(claim["response"]["allowed"] == true);  // gpu-device-access is on audit in this policy
    CHECK(claim["response"]["auditAnnotations"].contains("gpu-device-access"));
    CHECK(logged_name(f) == "my-claim");

    json templ = f.answer(webhook::Endpoint::Validate,
                          claim_review(big_claim_template("nine-gpus"), "ResourceClaimTemplate").dump());
    CHECK(templ["response"]["allowed"] == false);
    CHECK(logged_name(f) == "nine-gpus");
  }
}

TEST_CASE("every kind of review after a large pod names its own object", "[admission][sequence]") {
  LoggedFixture f;
  const json pod = large_pod("big-pod", 300 << 10);
  json deployment = {{"apiVersion", "apps/v1"},
                     {"kind", "Deployment"},
                     {"metadata", {{"name", "web"}, {"namespace", "team-alpha"}}},
                     {"spec", {{"template", {{"metadata", {{"labels", {{"app", "web"}}}}}, {"spec", pod["spec"]}}}}}};
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata", {{"name", "torch"}, {"namespace", "team-alpha"}}},
              {"spec", {{"pytorchReplicaSpecs", {{"Master", {{"template", {{"spec", pod["spec"]}}}}}}}}}};
  json job_review = review(job, "CREATE", "PyTorchJob");
  job_review["request"]["kind"] = {{"group", "kubeflow.org"}, {"version", "v1"}, {"kind", "PyTorchJob"}};
  json generated = large_pod("", 10);
  generated["metadata"].erase("name");
  generated["metadata"]["generateName"] = "gen-";

  const std::vector<std::pair<json, std::string>> sequence = {
      {review(pod), "big-pod"},
      {review(deployment, "CREATE", "Deployment"), "web"},
      {review(pod), "big-pod"},
      {job_review, "torch"},
      {review(pod), "big-pod"},
      {claim_review(admin_claim("c1"), "ResourceClaim"), "c1"},
      {review(generated), "gen-"},
      {claim_review(big_claim_template("t1"), "ResourceClaimTemplate"), "t1"},
  };
  for (int round = 0; round < 2; ++round) {
    for (const auto& [body, name] : sequence) {
      f.answer(webhook::Endpoint::Validate, body.dump());
      CHECK(logged_name(f) == name);
    }
  }
}

TEST_CASE("a review that cannot be read after a large pod names only what it carries", "[admission][sequence]") {
  LoggedFixture f;
  f.answer(webhook::Endpoint::Validate, review(large_pod("big-pod", 300 << 10)).dump());
  f.new_lines();
  // A claim whose object cannot be read: refused with 400, and nothing of the pod is reused.
  json claim = admin_claim("broken");
  claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = "many";
  json bad = f.answer(webhook::Endpoint::Validate, claim_review(claim, "ResourceClaim").dump());
  CHECK(bad["response"]["status"]["code"] == 400);
  for (const auto& line : f.new_lines()) CHECK(line.dump().find("big-pod") == std::string::npos);
  // A /mutate of a claim (never patched) and a DELETE: allowed, no findings.
  CHECK_FALSE(f.answer(webhook::Endpoint::Mutate, claim_review(admin_claim("c2"), "ResourceClaim").dump())["response"]
                  .contains("patch"));
}
