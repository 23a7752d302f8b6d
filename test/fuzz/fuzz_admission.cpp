// Fuzz target: arbitrary bytes as an AdmissionReview body to /validate and /mutate. Nothing may
// crash; every answer is either an HTTP error or a JSON AdmissionReview; for a body that is JSON,
// a patch must apply to the request's object (checked with nlohmann::json::patch) and be idempotent.
// The env scan (policy/decoding/env_names.h) must agree, on the whole body, with its definition,
// with and without a policy's own names (spec.gpuEnvVars).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/decoding/env_names.h"
#include "policy/base/tenant_labels.h"
#include "webhook/admission/admission.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/base64.h"

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

// env_may_name_read's definition: a backslash, a device env var or the MPS prefix, anywhere.
bool names_env_read(std::string_view text) {
  if (text.find('\\') != std::string_view::npos || text.find(policy::kMpsEnvPrefix) != std::string_view::npos)
    return true;
  for (auto var : policy::kDeviceEnvVars)
    if (text.find(var) != std::string_view::npos) return true;
  return false;
}

// A policy's own names: one without the "A_" of the built-in names, one short enough to occur.
const std::vector<std::string> kPolicyNames = {"SITE_GPU_DEVICES", "HX"};

bool names_env_read_with_policy(std::string_view text) {
  if (names_env_read(text)) return true;
  for (const auto& name : kPolicyNames)
    if (text.find(name) != std::string_view::npos) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  webhook::AdmissionService service(holder(), nullptr, nullptr);
  std::string_view body(reinterpret_cast<const char*>(data), size);
  {
    std::string padded(body);
    padded.append(64, 'S');  // the padding spells the end of NVIDIA_VISIBLE_DEVICES: never counted
    if (policy::env_may_name_read(std::string_view(padded.data(), size)) != names_env_read(body))
      fail("env scan disagrees with its definition");
    if (policy::env_may_name_read(std::string_view(padded.data(), size), kPolicyNames) !=
        names_env_read_with_policy(body))
      fail("env scan with a policy's names disagrees with its definition");
  }
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
