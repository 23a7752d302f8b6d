// /validate of the webhook's own policy ConfigMap (webhook/admission/policy_review.h): a ConfigMap
// labelled gpu-admission.io/policy: "true" is refused with lint's errors, each naming its data key
// and line:column inside the key's value, and its lint warnings come back as admission warnings;
// any other ConfigMap, a DELETE and /mutate are allowed untouched. The checker is the one serve
// installs (io's check_configmap_policy).
#include <string>

#include "admission_test_support.h"
#include "webhook/io/policy_configmap.h"

namespace {

using namespace admission_test;
namespace wh = gpu_admission::webhook;

// Line 9 (`pools: [b100]`, column 14) names a pool that does not exist.
constexpr const char* kBrokenPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: broken}
spec:
  pools:
    - {name: a100, nodeSelector: {pool: a100}, trust: adversarial, gpuModel: A100, sharing: none}
  tenants:
    - name: alpha
      pools: [b100]
      namespaces: [team-alpha]
)";

// Valid, and lint has nothing to say about it.
constexpr const char* kCleanPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: clean}
spec:
  pools:
    - {name: a100, nodeSelector: {pool: a100}, trust: adversarial, gpuModel: A100, sharing: none}
  tenants:
    - {name: alpha, pools: [a100], defaultPool: a100, namespaces: [team-alpha]}
)";

// Valid, with two lint warnings: every namespace exempt, and gpu-cap not denying (a long one).
constexpr const char* kWarnedPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: warned}
spec:
  exemptions: {namespaces: ["*"]}
  rules: {gpu-cap: warn}
)";

json configmap(const std::string& policy, bool labelled = true, const std::string& key = "policy.yaml",
               const std::string& label_value = "true") {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "gpu-admission-policy"}, {"namespace", "gpu-admission"}}},
             {"data", {{key, policy}}}};
  if (labelled) cm["metadata"]["labels"] = {{"gpu-admission.io/policy", label_value}, {"app", "x"}};
  return cm;
}

json configmap_review(const json& object, const std::string& operation = "CREATE") {
  json r = review(object, operation, "ConfigMap", "gpu-admission");
  r["request"]["kind"] = {{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}};
  r["request"]["resource"] = {{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}};
  r["request"]["name"] = "gpu-admission-policy";
  if (operation == "UPDATE" || operation == "DELETE") r["request"]["oldObject"] = object;
  if (operation == "DELETE") r["request"].erase("object");
  return r;
}

struct PolicyFixture : Fixture {
  PolicyFixture() {
    service.set_policy_checker([](std::string_view text) {
      wh::ConfigMapPolicyCheck checked = wh::check_configmap_policy(text);
      wh::PolicyCheck out;
      out.errors = checked.errors;
      out.warnings = checked.warnings;
      out.key = checked.key;
      return out;
    });
  }
};

std::string message_of(const json& response) { return response["response"]["status"].value("message", ""); }

}  // namespace

TEST_CASE("policy ConfigMap: a valid policy is allowed, CREATE and UPDATE", "[admission][policy-configmap]") {
  PolicyFixture f;
  for (const char* operation : {"CREATE", "UPDATE"}) {
    INFO(operation);
    const json out = call(f, wh::Endpoint::Validate, configmap_review(configmap(kCleanPolicy), operation));
    CHECK(out["response"]["allowed"] == true);
    CHECK_FALSE(out["response"].contains("warnings"));
    CHECK_FALSE(out["response"].contains("patch"));
  }
}

TEST_CASE("policy ConfigMap: a broken policy is refused with lint's errors at their lines in the key",
          "[admission][policy-configmap]") {
  PolicyFixture f;
  for (const char* operation : {"CREATE", "UPDATE"}) {
    INFO(operation);
    const json out = call(f, wh::Endpoint::Validate, configmap_review(configmap(kBrokenPolicy), operation));
    INFO(out.dump());
    CHECK(out["response"]["allowed"] == false);
    CHECK(out["response"]["status"]["code"] == 403);
    const std::string message = message_of(out);
    CHECK(message.find("ConfigMap gpu-admission/gpu-admission-policy, key policy.yaml") != std::string::npos);
    CHECK(message.find("1 error;") != std::string::npos);
    CHECK(message.find("policy.yaml:9:") != std::string::npos);
    CHECK(message.find("spec.tenants[0].pools[0]") != std::string::npos);
    CHECK(message.find("b100") != std::string::npos);
    CHECK(message.find("keeps its last good policy") != std::string::npos);
    CHECK(message.find("fix the policy and apply it again (check it first: gpu-admission policy lint") !=
          std::string::npos);
  }
  // The same ConfigMap without the label, or with another value: not the policy, not checked.
  for (const json& cm : {configmap(kBrokenPolicy, false), configmap(kBrokenPolicy, true, "policy.yaml", "false")}) {
    const json out = call(f, wh::Endpoint::Validate, configmap_review(cm));
    CHECK(out["response"]["allowed"] == true);
    CHECK_FALSE(out["response"].contains("warnings"));
    CHECK_FALSE(out["response"].contains("status"));
  }
  // DELETE and /mutate are never refused.
  CHECK(call(f, wh::Endpoint::Validate, configmap_review(configmap(kBrokenPolicy), "DELETE"))["response"]["allowed"] ==
        true);
  CHECK(call(f, wh::Endpoint::Mutate, configmap_review(configmap(kBrokenPolicy)))["response"]["allowed"] == true);
}

TEST_CASE("policy ConfigMap: the key is named, whatever it is called", "[admission][policy-configmap]") {
  PolicyFixture f;
  json cm = configmap(kBrokenPolicy, true, "gpu-policy.yaml");
  cm["data"]["README"] = "not a policy";
  const json out = call(f, wh::Endpoint::Validate, configmap_review(cm));
  CHECK(out["response"]["allowed"] == false);
  CHECK(message_of(out).find("key gpu-policy.yaml") != std::string::npos);
  CHECK(message_of(out).find("gpu-policy.yaml:9:") != std::string::npos);
}

TEST_CASE("policy ConfigMap: YAML errors, no data and a second policy key refuse it", "[admission][policy-configmap]") {
  PolicyFixture f;
  // A YAML syntax error on line 4 of the value.
  json out = call(f, wh::Endpoint::Validate,
                  configmap_review(configmap("apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\n"
                                             "metadata: {name: x}\nspec: [unclosed\n")));
  CHECK(out["response"]["allowed"] == false);
  CHECK(message_of(out).find("policy.yaml:") != std::string::npos);
  // No data at all.
  json empty = configmap(kPolicy);
  empty.erase("data");
  out = call(f, wh::Endpoint::Validate, configmap_review(empty));
  CHECK(out["response"]["allowed"] == false);
  CHECK(message_of(out).find("has no data") != std::string::npos);
  // Two keys holding a policy: which one would serve read?
  json two = configmap(kPolicy);
  two["data"]["other.yaml"] = kPolicy;
  out = call(f, wh::Endpoint::Validate, configmap_review(two));
  CHECK(out["response"]["allowed"] == false);
  CHECK(message_of(out).find("several data keys") != std::string::npos);
}

TEST_CASE("policy ConfigMap: lint warnings come back as admission warnings under 120 characters",
          "[admission][policy-configmap]") {
  PolicyFixture f;
  const json out = call(f, wh::Endpoint::Validate, configmap_review(configmap(kWarnedPolicy)));
  INFO(out.dump());
  CHECK(out["response"]["allowed"] == true);
  const json& warnings = out["response"]["warnings"];
  REQUIRE(warnings.size() == 2);
  bool star = false, cap = false;
  for (const auto& w : warnings) {
    const std::string text = w.get<std::string>();
    CHECK(text.size() < 120);
    CHECK(text.find('\n') == std::string::npos);
    CHECK(text.rfind("policy.yaml:", 0) == 0);
    star = star || text.find("spec.exemptions.namespaces[0]: exempts every namespace") != std::string::npos;
    cap = cap || text.find("spec.rules.gpu-cap") != std::string::npos;
  }
  CHECK(star);
  CHECK(cap);
}

TEST_CASE("policy ConfigMap: without a checker, an object that cannot be read", "[admission][policy-configmap]") {
  Fixture plain;  // no checker: allowed unchecked
  CHECK(call(plain, wh::Endpoint::Validate, configmap_review(configmap(kBrokenPolicy)))["response"]["allowed"] == true);
  PolicyFixture f;
  json r = configmap_review(configmap(kPolicy));
  r["request"].erase("object");
  const json out = call(f, wh::Endpoint::Validate, r);
  CHECK(out["response"]["allowed"] == false);
  CHECK(out["response"]["status"]["code"] == 400);
}
