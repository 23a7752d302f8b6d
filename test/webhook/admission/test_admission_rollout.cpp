// A staged rollout through /validate and /mutate: under enforcement audit nothing is denied or
// patched and what would have happened is in the audit annotations; serve's override replaces the
// file's enforcement; an exception admits what it selects (the finding recorded as excepted) and
// stops doing so when it expires; /mutate warns when whole GPUs become MIG slices.
#include <string>

#include "test/webhook/admission/admission_test_support.h"

using namespace admission_test;

namespace {

std::string policy_with(const std::string& extra) {
  return std::string(kPolicy) + extra;
}

struct RolloutFixture {
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, &metrics, &logger};
  explicit RolloutFixture(const std::string& text, std::optional<policy::Enforcement> enforcement = std::nullopt) {
    auto load = webhook::load_policy_text(text, "rollout.yaml", {webhook::unix_now(), enforcement});
    INFO(load.report());
    REQUIRE(load.ok());
    holder.set(load.policy);
  }
  json answer(webhook::Endpoint endpoint, const json& body) {
    webhook::HttpReply reply = service.handle(endpoint, body.dump());
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  }
};

json privileged_gpu_pod(int gpus) {
  json p = gpu_pod(gpus);
  p["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  return p;
}

json privileged_pod() {
  json p = privileged_gpu_pod(1);
  p["spec"]["containers"][0].erase("resources");
  p["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1"}};  // as /mutate leaves it
  return p;
}

std::string annotation(const json& response, const std::string& key) {
  if (!response.contains("auditAnnotations") || !response["auditAnnotations"].contains(key)) return "";
  return response["auditAnnotations"][key].get<std::string>();
}

}  // namespace

TEST_CASE("rollout: under audit /validate admits and /mutate patches nothing, recording both", "[admission][rollout]") {
  for (bool from_flag : {false, true}) {
    INFO((from_flag ? "serve --enforcement audit" : "spec.enforcement: audit"));
    RolloutFixture f = from_flag ? RolloutFixture(kPolicy, policy::Enforcement::Audit)
                                 : RolloutFixture(policy_with("  enforcement: audit\n"));
    const json validated = f.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(4)));
    CHECK(validated["allowed"] == true);
    CHECK_FALSE(validated.contains("status"));
    CHECK(annotation(validated, "privileged").find("privileged") != std::string::npos);
    CHECK_FALSE(validated.contains("warnings"));  // host-namespaces: warn becomes audit too

    const json mutated = f.answer(webhook::Endpoint::Mutate, review(gpu_pod(4)));
    CHECK(mutated["allowed"] == true);
    CHECK_FALSE(mutated.contains("patch"));
    CHECK_FALSE(mutated.contains("patchType"));
    const std::string withheld = annotation(mutated, "withheld-mutations");
    CHECK(withheld.find("mig-resources") != std::string::npos);
    CHECK(withheld.find("would have converted nvidia.com/gpu: 4 to nvidia.com/mig-1g.10gb: 4 in pool a100") !=
          std::string::npos);
  }
  // The override wins over the file both ways.
  RolloutFixture enforced(policy_with("  enforcement: audit\n"), policy::Enforcement::Enforce);
  CHECK(enforced.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(1)))["allowed"] == false);
}

TEST_CASE("rollout: under warn a deny is a warning and the mutations apply", "[admission][rollout]") {
  RolloutFixture f(policy_with("  enforcement: warn\n"));
  const json validated = f.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(1)));
  CHECK(validated["allowed"] == true);
  REQUIRE(validated.contains("warnings"));
  CHECK(validated["warnings"].dump().find("[privileged]") != std::string::npos);
  CHECK(f.answer(webhook::Endpoint::Mutate, review(gpu_pod(1))).contains("patch"));
}

TEST_CASE("rollout: /mutate warns when whole GPUs become MIG slices", "[admission][rollout]") {
  RolloutFixture f(kPolicy);
  const json mutated = f.answer(webhook::Endpoint::Mutate, review(gpu_pod(4)));
  REQUIRE(mutated.contains("patch"));
  REQUIRE(mutated.contains("warnings"));
  CHECK(mutated["warnings"] == json::array({"converted nvidia.com/gpu: 4 to nvidia.com/mig-1g.10gb: 4 in pool a100"}));
  json slices = gpu_pod(1);
  slices["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  CHECK_FALSE(f.answer(webhook::Endpoint::Mutate, review(slices)).contains("warnings"));
}

TEST_CASE("rollout: an exception admits what it selects until it expires", "[admission][rollout]") {
  const std::string exception = R"(  exceptions:
    - name: alice-debug
      reason: "INC-7: alice debugs the driver"
      rules: [privileged]
      tenants: [alpha]
      usernames: [alice]
      expires: "EXPIRES"
)";
  auto with_expiry = [&](const std::string& when) {
    std::string text = policy_with(exception);
    text.replace(text.find("EXPIRES"), 7, when);
    return text;
  };
  RolloutFixture live(with_expiry("2999-01-01T00:00:00Z"));
  const json admitted = live.answer(webhook::Endpoint::Validate, review(privileged_pod()));
  CHECK(admitted["allowed"] == true);
  CHECK(annotation(admitted, "excepted-privileged").find("exception alice-debug (would deny)") != std::string::npos);
  CHECK(live.metrics.serialize().find("gpu_admission_exceptions_applied_total{exception=\"alice-debug\",rule=\"privileged\"} 1") !=
        std::string::npos);
  // Another user is not excepted.
  json bob = review(privileged_pod());
  bob["request"]["userInfo"]["username"] = "bob";
  CHECK(live.answer(webhook::Endpoint::Validate, bob)["allowed"] == false);
  // An excepted finding never reaches the denial's message; the others still deny.
  const json over_cap = live.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(20)));
  CHECK(over_cap["allowed"] == false);
  const std::string message = over_cap["status"]["message"];
  CHECK(message.find("[gpu-cap]") != std::string::npos);
  CHECK(message.find("[privileged]") == std::string::npos);

  RolloutFixture expired(with_expiry("2020-01-01T00:00:00Z"));
  CHECK(expired.answer(webhook::Endpoint::Validate, review(privileged_pod()))["allowed"] == false);
}
