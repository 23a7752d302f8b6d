// Metric labels an on-call engineer filters by: tenant (from the policy, "none" otherwise) and
// dry_run on requests, tenant on rule results; the exceptions applied (children made on first
// use, capped); build_info; the last policy load; request errors by class and reason, there at 0
// from the start; cluster decode errors.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "policy/config/compiled_policy.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/build_info.h"
#include "webhook/ops/metrics.h"

using namespace gpu_admission;
using webhook::Metrics;
using webhook::TenantLabel;

namespace {

// The value of one exposition line (labels in the serializer's order: sorted by name), -1 when absent.
double value_of(const std::string& text, const std::string& series) {
  const std::string all = "\n" + text;
  const size_t at = all.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(all.substr(at + series.size() + 2));
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

policy::PolicyPtr policy_with_tenants(const std::string& first, const std::string& second) {
  const std::string text = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: labels}
spec:
  tenants:
    - {name: )" + first + R"(, namespaces: [team-a]}
    - {name: )" + second + R"(, namespaces: [team-b]}
)";
  auto load = webhook::load_policy_text(text, "labels.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  return load.policy;
}

std::string request_series(const std::string& decision, const std::string& tenant, const std::string& dry_run) {
  return "gpu_admission_requests_total{decision=\"" + decision + "\",dry_run=\"" + dry_run +
         "\",endpoint=\"validate\",kind=\"Pod\",operation=\"CREATE\",tenant=\"" + tenant + "\"}";
}

}  // namespace

TEST_CASE("metrics: requests and rule results carry the tenant and dry_run", "[metrics]") {
  Metrics metrics;
  const policy::PolicyPtr policy = policy_with_tenants("alpha", "beta");
  metrics.set_policy(*policy);
  const TenantLabel alpha{0, "alpha"}, beta{1, "beta"};
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, alpha, false);
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, alpha, true);
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, alpha, true);
  metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.001, beta);
  metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.001);  // no tenant
  metrics.count_rule_result(policy::RuleId::Privileged, policy::Action::Deny, alpha);
  metrics.count_rule_result(policy::RuleId::Privileged, policy::Action::Deny);
  const std::string text = metrics.serialize();
  CHECK(value_of(text, request_series("denied", "alpha", "false")) == 1);
  CHECK(value_of(text, request_series("denied", "alpha", "true")) == 2);
  CHECK(value_of(text, request_series("allowed", "beta", "false")) == 1);
  CHECK(value_of(text, request_series("allowed", "none", "false")) == 1);
  CHECK(value_of(text, R"(gpu_admission_rule_results_total{action="deny",mode="enforce",rule="privileged",tenant="alpha"})") == 1);
  CHECK(value_of(text, R"(gpu_admission_rule_results_total{action="deny",mode="enforce",rule="privileged",tenant="none"})") == 1);
  // Pods of no tenant see every rule's series from the first scrape.
  CHECK(value_of(text, R"(gpu_admission_rule_results_total{action="audit",mode="enforce",rule="gpu-cap",tenant="none"})") == 0);
}

TEST_CASE("metrics: a reload that renames tenants relabels by name, never by a stale index", "[metrics]") {
  Metrics metrics;
  const policy::PolicyPtr before = policy_with_tenants("alpha", "beta");
  metrics.set_policy(*before);
  // The new policy swaps the two: index 0 is now beta.
  const policy::PolicyPtr after = policy_with_tenants("beta", "alpha");
  metrics.set_policy(*after);
  // A request judged by the old policy (index 0 = alpha) after the swap still counts as alpha.
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, TenantLabel{0, "alpha"});
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, TenantLabel{0, "beta"});
  // An index beyond the table, and no table at all (a Metrics never told of a policy), also go by name.
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 0.001, TenantLabel{7, "alpha"});
  Metrics untold;
  untold.observe_request("validate", "CREATE", "Pod", "denied", 0.001, TenantLabel{0, "gamma"});
  const std::string text = metrics.serialize();
  CHECK(value_of(text, request_series("denied", "alpha", "false")) == 2);
  CHECK(value_of(text, request_series("denied", "beta", "false")) == 1);
  CHECK(value_of(untold.serialize(), request_series("denied", "gamma", "false")) == 1);
}

TEST_CASE("metrics: exceptions applied, made on first use and capped", "[metrics]") {
  Metrics metrics;
  metrics.exception_applied("team-a-migration", "gpu-cap");
  metrics.exception_applied("team-a-migration", "gpu-cap");
  metrics.exception_applied("team-a-migration", "privileged");
  std::string text = metrics.serialize();
  CHECK(value_of(text, R"(gpu_admission_exceptions_applied_total{exception="team-a-migration",rule="gpu-cap"})") == 2);
  CHECK(value_of(text, R"(gpu_admission_exceptions_applied_total{exception="team-a-migration",rule="privileged"})") ==
        1);
  // Past 1,000 label pairs, new exceptions share exception="other" (per rule ID; anything else: other).
  for (int i = 0; i < 1100; ++i) metrics.exception_applied("exception-" + std::to_string(i), "gpu-cap");
  metrics.exception_applied("one-more", "not-a-rule");
  text = metrics.serialize();
  CHECK(count_of(text, "\ngpu_admission_exceptions_applied_total{") <= 1000 + policy::kRuleCount + 1);
  CHECK(value_of(text, R"(gpu_admission_exceptions_applied_total{exception="exception-0",rule="gpu-cap"})") == 1);
  CHECK(value_of(text, R"(gpu_admission_exceptions_applied_total{exception="other",rule="gpu-cap"})") >= 100);
  CHECK(value_of(text, R"(gpu_admission_exceptions_applied_total{exception="other",rule="other"})") == 1);
  // Pairs that got a series of their own keep counting there.
  metrics.exception_applied("team-a-migration", "gpu-cap");
  CHECK(value_of(metrics.serialize(),
                 R"(gpu_admission_exceptions_applied_total{exception="team-a-migration",rule="gpu-cap"})") == 3);
}

TEST_CASE("metrics: build info, the last policy load, request errors, cluster decode errors", "[metrics]") {
  Metrics metrics;
  const webhook::BuildInfo& build = webhook::build_info();
  CHECK(!build.version.empty());
  CHECK(!build.commit.empty());
  std::string text = metrics.serialize();
  CHECK(value_of(text, "gpu_admission_build_info{commit=\"" + std::string(build.commit) + "\",version=\"" +
                           std::string(build.version) + "\"}") == 1);
  CHECK(value_of(text, "gpu_admission_policy_last_reload_success") == 0);  // nothing loaded yet

  const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  metrics.set_policy(*policy_with_tenants("alpha", "beta"));
  text = metrics.serialize();
  CHECK(value_of(text, "gpu_admission_policy_last_reload_success") == 1);
  CHECK(value_of(text, "gpu_admission_policy_last_reload_timestamp_seconds") == Approx(now).margin(60));
  CHECK(text.find("gpu_admission_policy_info{hash=") != std::string::npos);
  metrics.count_policy_reload(false);
  text = metrics.serialize();
  CHECK(value_of(text, "gpu_admission_policy_last_reload_success") == 0);
  CHECK(value_of(text, R"(gpu_admission_policy_reloads_total{result="failure"})") == 1);
  CHECK(value_of(text, "gpu_admission_policy_last_reload_timestamp_seconds") == Approx(now).margin(60));

  // Every class and reason from the start; counted by kind.
  for (const auto& kind : webhook::kRequestErrors)
    CHECK(value_of(text, "gpu_admission_request_errors_total{class=\"" + std::string(kind.error_class) +
                             "\",reason=\"" + std::string(kind.reason) + "\"}") == 0);
  metrics.count_request_error(webhook::RequestErrorKind::UnsupportedMediaType);
  metrics.count_request_error(webhook::RequestErrorKind::EvaluationError);
  text = metrics.serialize();
  CHECK(value_of(text, R"(gpu_admission_request_errors_total{class="client",reason="unsupported_media_type"})") == 1);
  CHECK(value_of(text, R"(gpu_admission_request_errors_total{class="server",reason="evaluation_error"})") == 1);

  metrics.precreate_cluster_series();
  metrics.count_cluster_decode_error("resourceclaims");
  text = metrics.serialize();
  CHECK(value_of(text, R"(gpu_admission_cluster_decode_errors_total{resource="resourceclaims"})") == 1);
  CHECK(value_of(text, R"(gpu_admission_cluster_decode_errors_total{resource="namespaces"})") == 0);
}
