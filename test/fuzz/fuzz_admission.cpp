// Fuzz target: arbitrary bytes as an AdmissionReview body to /validate and /mutate. Nothing may
// crash; every answer is either an HTTP error or a JSON AdmissionReview; for a body that is JSON,
// a patch must apply to the request's object (checked with nlohmann::json::patch) and be idempotent.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "webhook/admission/admission.h"
#include "webhook/admission/base64.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

webhook::PolicyHolder& holder() {
  static webhook::PolicyHolder h(webhook::load_policy_file("").policy);
  return h;
}

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "fuzz_admission invariant broken: %s\n", why);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  webhook::AdmissionService service(holder(), nullptr, nullptr);
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto endpoint : {webhook::Endpoint::Validate, webhook::Endpoint::Mutate}) {
    webhook::HttpReply reply = service.handle(endpoint, body);
    if (reply.status != 200) {
      if (reply.status != 400) fail("unexpected HTTP status");
      continue;
    }
    nlohmann::json out = nlohmann::json::parse(reply.body, nullptr, false);
    if (out.is_discarded() || !out.contains("response")) fail("reply is not an AdmissionReview");
    const auto& response = out["response"];
    if (!response.contains("uid") || !response.contains("allowed")) fail("response lacks uid or allowed");
    if (!response.contains("patch")) continue;
    auto patch_text = webhook::base64_decode(response["patch"].get<std::string>());
    if (!patch_text) fail("patch is not base64");
    // Values the webhook does not read are skipped, not validated (docs/hardening.md): a body
    // malformed only there is answered on what was read. The API server never sends one; the
    // patch invariant is checked on bodies that are JSON.
    nlohmann::json request = nlohmann::json::parse(body, nullptr, false);
    if (request.is_discarded() || !request.is_object() || !request.contains("request") ||
        !request["request"].is_object() || !request["request"].contains("object"))
      continue;
    nlohmann::json object = request["request"]["object"];
    nlohmann::json mutated;
    try {
      mutated = object.patch(nlohmann::json::parse(*patch_text));
    } catch (const std::exception&) {
      fail("patch does not apply to the object");
    }
    request["request"]["object"] = mutated;
    webhook::HttpReply again = service.handle(webhook::Endpoint::Mutate, request.dump());
    if (again.body.find("\"patch\"") != std::string::npos) fail("mutation is not idempotent");
  }
  return 0;
}
