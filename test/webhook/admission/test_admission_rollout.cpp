// A staged rollout through /validate and /mutate: under audit nothing is denied or patched and what
// would have happened is in the audit annotations; under warn nothing changes and the user is told;
// observing judges the pod as /mutate would have left it (enforcement's findings, no more); each
// tenant has its mode and serve's --enforcement caps them; an exception admits what it selects
// (the finding recorded as excepted) and stops doing so when it expires, saying so; /mutate warns
// when whole GPUs become MIG slices.
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
    metrics.set_policy(*load.policy);
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
    CHECK_FALSE(mutated.contains("warnings"));  // the user sees nothing under audit
    const std::string withheld = annotation(mutated, "withheld-mutations");
    CHECK(withheld.find("mig-resources") != std::string::npos);
    CHECK(withheld.find("would have converted nvidia.com/gpu: 4 to nvidia.com/mig-1g.10gb: 4 in pool a100") !=
          std::string::npos);
    const std::string metrics = f.metrics.serialize();
    CHECK(metrics.find(R"(gpu_admission_mutations_withheld_total{mutation="pool-selector",tenant="alpha"} 1)") !=
          std::string::npos);
    // What enforcement would deny is counted as deny, under the tenant's mode.
    CHECK(metrics.find(R"(gpu_admission_rule_results_total{action="deny",mode="audit",rule="privileged",tenant="alpha"} 1)") !=
          std::string::npos);
  }
  // The cap never raises a mode: a policy observing under --enforcement enforce still observes.
  RolloutFixture capped_high(policy_with("  enforcement: audit\n"), policy::Enforcement::Enforce);
  CHECK(capped_high.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(1)))["allowed"] == true);
}

TEST_CASE("rollout: observing judges the pod as /mutate would have left it: enforcement's findings, no more",
          "[admission][rollout]") {
  // A well-behaved tenant pod, as its user wrote it: /mutate would label, pin and convert it.
  const json plain = gpu_pod(1);
  RolloutFixture enforced(kPolicy);
  REQUIRE(enforced.answer(webhook::Endpoint::Mutate, review(plain)).contains("patch"));
  for (const char* mode : {"audit", "warn"}) {
    INFO(mode);
    RolloutFixture f(policy_with(std::string("  enforcement: ") + mode + "\n"));
    // /mutate changed nothing, so the API server sends /validate the pod as written.
    const json validated = f.answer(webhook::Endpoint::Validate, review(plain));
    CHECK(validated["allowed"] == true);
    CHECK_FALSE(validated.contains("warnings"));   // no "not pinned", no "lacks tenant labels"
    CHECK_FALSE(validated.contains("auditAnnotations"));
    const std::string metrics = f.metrics.serialize();
    CHECK(metrics.find(R"(rule="tenant-pool",tenant="alpha"} 1)") == std::string::npos);
    CHECK(metrics.find(R"(rule="tenant-label",tenant="alpha"} 1)") == std::string::npos);
    // What enforcement would refuse, observing reports.
    const json bad = f.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(20)));
    CHECK(bad["allowed"] == true);
    const std::string recorded = bad.dump();
    CHECK(recorded.find("privileged") != std::string::npos);
    CHECK(recorded.find("gpu-cap") != std::string::npos);
  }
}

TEST_CASE("rollout: under warn nothing changes and the user is told what enforcement would do",
          "[admission][rollout]") {
  RolloutFixture f(policy_with("  enforcement: warn\n"));
  const json validated = f.answer(webhook::Endpoint::Validate, review(privileged_gpu_pod(1)));
  CHECK(validated["allowed"] == true);
  REQUIRE(validated.contains("warnings"));
  CHECK(validated["warnings"].dump().find("[privileged] would deny: container \\\"main\\\" is privileged") !=
        std::string::npos);
  const json mutated = f.answer(webhook::Endpoint::Mutate, review(gpu_pod(4)));
  CHECK_FALSE(mutated.contains("patch"));
  REQUIRE(mutated.contains("warnings"));
  const std::string warnings = mutated["warnings"].dump();
  for (const char* change : {"would pin to pool a100", "would convert nvidia.com/gpu: 4 to nvidia.com/mig-1g.10gb: 4",
                             "would label the pod gpu-admission.io/tenant=alpha, cost-center=cc-1"})
    CHECK(warnings.find(change) != std::string::npos);
  for (const auto& w : mutated["warnings"]) CHECK(w.get<std::string>().size() < 120);
}

TEST_CASE("rollout: each tenant has its own mode, and serve's cap is the brake over all", "[admission][rollout]") {
  const std::string two_tenants = std::string(kPolicy) + R"(    - name: beta
      namespaces: [team-beta]
      pools: [a100]
      defaultPool: a100
      enforcement: enforce
  enforcement: audit
)";
  auto pod_in = [](const std::string& ns) {
    json p = privileged_gpu_pod(4);
    p["metadata"]["namespace"] = ns;
    return review(p, "CREATE", "Pod", ns);
  };
  RolloutFixture f(two_tenants);
  // alpha observes (spec.enforcement): admitted, mutations withheld; beta enforces.
  CHECK(f.answer(webhook::Endpoint::Validate, pod_in("team-alpha"))["allowed"] == true);
  CHECK_FALSE(f.answer(webhook::Endpoint::Mutate, pod_in("team-alpha")).contains("patch"));
  CHECK(f.answer(webhook::Endpoint::Validate, pod_in("team-beta"))["allowed"] == false);
  CHECK(f.answer(webhook::Endpoint::Mutate, pod_in("team-beta")).contains("patch"));
  // Under --enforcement warn, beta only warns and is not mutated.
  RolloutFixture braked(two_tenants, policy::Enforcement::Warn);
  const json beta = braked.answer(webhook::Endpoint::Validate, pod_in("team-beta"));
  CHECK(beta["allowed"] == true);
  CHECK(beta.contains("warnings"));
  CHECK_FALSE(braked.answer(webhook::Endpoint::Mutate, pod_in("team-beta")).contains("patch"));
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
  const json refused = expired.answer(webhook::Endpoint::Validate, review(privileged_pod()));
  CHECK(refused["allowed"] == false);
  CHECK(refused["status"]["message"].get<std::string>().find("(exception alice-debug expired 2020-01-01T00:00:00Z)") !=
        std::string::npos);
  CHECK(expired.metrics.serialize().find(
            R"(gpu_admission_exception_expiry_timestamp_seconds{exception="alice-debug"} 1)") != std::string::npos);
}
