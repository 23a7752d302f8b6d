// `check` and the served webhook answer every object the same way: each rule fixture
// (test/fixtures/<rule-id>/{pass,fail}, single objects) judged offline (evaluate_offline) and sent
// to the admission service as the API server would send its CREATE (a Pod to /mutate first, its
// patch applied, then the mutated Pod to /validate; everything else to /validate) gets the same
// verdict and the same rules reported. A front end that grew its own decision path would drift from the other and fail here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/base/ids.h"
#include "webhook/admission/admission.h"
#include "webhook/cli/offline.h"
#include "webhook/io/manifests.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/base64.h"
#include "test_paths.h"

namespace fs = std::filesystem;
using namespace gpu_admission;
using nlohmann::json;

namespace {

json create_review(const json& object, const std::string& ns) {
  const std::string api_version = object.value("apiVersion", "");
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "11111111-2222-3333-4444-555555555555"},
            {"kind", {{"group", group}, {"version", version}, {"kind", object.value("kind", "")}}},
            {"resource", {{"group", group}, {"version", version}, {"resource", "objects"}}},
            {"namespace", ns},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "alice"}}},
            {"object", object}}}};
}

// The rule IDs a text names ("[gpu-cap] ...", "gpu-cap: ..."): what a response reports.
std::set<std::string> rules_named_in(const std::string& text) {
  std::set<std::string> out;
  for (size_t i = 0; i < policy::kRuleCount; ++i) {
    const std::string id(policy::kRuleNames[i]);
    if (text.find("[" + id + "]") != std::string::npos) out.insert(id);
  }
  return out;
}

std::set<std::string> rules_in(const policy::Decision& decision, bool denying) {
  std::set<std::string> out;
  for (const auto& f : decision.findings)
    if ((f.action == policy::Action::Deny && !f.excepted()) == denying) out.insert(std::string(policy::kRuleNames[static_cast<size_t>(f.rule)]));
  return out;
}

json answer(webhook::AdmissionService& service, webhook::Endpoint endpoint, const json& review) {
  const webhook::HttpReply reply = service.handle(endpoint, review.dump());
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  return json::parse(reply.body)["response"];
}

// The API server's chain for a CREATE: /mutate, its patch applied, then /validate.
json through_the_chain(webhook::AdmissionService& service, json review, bool mutate) {
  if (mutate) {
    const json mutated = answer(service, webhook::Endpoint::Mutate, review);
    REQUIRE(mutated.value("allowed", false));
    if (mutated.contains("patch")) {
      const auto patch = webhook::base64_decode(mutated["patch"].get<std::string>());
      REQUIRE(patch);
      review["request"]["object"] = review["request"]["object"].patch(json::parse(*patch));
    }
  }
  return answer(service, webhook::Endpoint::Validate, review);
}

}  // namespace

TEST_CASE("check and the served webhook judge every rule fixture alike", "[cli][one-path]") {
  const fs::path fixtures = fs::path(test_paths::source_dir()) / "test" / "fixtures";
  webhook::PolicyLoad load = webhook::load_policy_file((fixtures / "policy.yaml").string());
  INFO(load.report());
  REQUIRE(load.ok());
  webhook::PolicyHolder holder;
  holder.set(load.policy);
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, nullptr, &logger};

  size_t compared = 0, denied = 0;
  for (const auto& rule_dir : fs::directory_iterator(fixtures)) {
    if (!rule_dir.is_directory()) continue;
    for (const char* outcome : {"pass", "fail"}) {
      const fs::path dir = rule_dir.path() / outcome;
      if (!fs::is_directory(dir)) continue;
      for (const auto& file : fs::directory_iterator(dir)) {
        webhook::ManifestRead read = webhook::read_manifest_file(file.path().string());
        if (read.error || read.objects.size() != 1) continue;  // pods with claims need cluster facts
        const webhook::ManifestObject& manifest = read.objects.front();
        if (manifest.from_review) continue;  // judged by /validate as it stands: test_cli_check
        const webhook::OfflineResult offline = webhook::evaluate_offline(*load.policy, manifest, "default");
        if (offline.status != webhook::OfflineResult::Status::Evaluated) continue;
        INFO(file.path().string());
        const bool pod = offline.kind == "Pod";
        const json response = through_the_chain(service, create_review(manifest.object, offline.namespace_name), pod);
        CHECK(response.value("allowed", false) == offline.decision.allowed);
        const std::string message = response.contains("status") ? response["status"].value("message", "") : "";
        CHECK(rules_named_in(message) == rules_in(offline.decision, true));
        ++compared;
        denied += offline.decision.allowed ? 0 : 1;
      }
    }
  }
  // Most fixtures are single objects; a count this low means the fixtures were not found or read.
  CHECK(compared >= 40);
  CHECK(denied >= 20);
}
