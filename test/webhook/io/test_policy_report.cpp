// PolicyReport building (webhook/io/policy_report.h) without the CLI: counting, severities,
// the 1,000-result cap (fails kept first, the summary counting all) and the resource reference.
#include <catch2/catch.hpp>

#include "policy/base/ids.h"
#include "webhook/io/policy_report.h"

namespace {

using gpu_admission::Json;
using gpu_admission::policy::Action;
using gpu_admission::policy::Finding;
using gpu_admission::policy::RuleId;
using gpu_admission::webhook::policy_report;
using gpu_admission::webhook::PolicyReportOptions;
using gpu_admission::webhook::ReportSubject;

Finding finding(RuleId rule, Action action, std::string field = "spec") {
  return Finding{rule, action, std::move(field), "message of " + std::string(gpu_admission::policy::name_of(rule))};
}

ReportSubject pod(std::string name, std::vector<Finding> findings,
                  ReportSubject::State state = ReportSubject::State::Judged) {
  return ReportSubject{"v1", "Pod", std::move(name), "", state, std::move(findings), std::nullopt};
}

}  // namespace

TEST_CASE("policy report: summary, results and severities", "[io][policyreport]") {
  const Json report = policy_report(
      "team-a", {pod("clean", {}),
                 pod("bad", {finding(RuleId::Privileged, Action::Deny, "spec.containers[0].securityContext.privileged"),
                             finding(RuleId::TenantPool, Action::Deny), finding(RuleId::TenantLabel, Action::Warn),
                             finding(RuleId::GpuCap, Action::Audit), finding(RuleId::GpuSharing, Action::Warn)}),
                 pod("exempt", {}, ReportSubject::State::Exempt), pod("broken", {}, ReportSubject::State::Error)});
  CHECK(report["apiVersion"] == "wgpolicyk8s.io/v1alpha2");
  CHECK(report["kind"] == "PolicyReport");
  CHECK(report["metadata"]["name"] == "gpu-admission");
  CHECK(report["metadata"]["namespace"] == "team-a");
  CHECK(!report["metadata"].contains("annotations"));
  CHECK(report["summary"] == Json{{"pass", 1}, {"fail", 2}, {"warn", 3}, {"error", 1}, {"skip", 1}});
  const Json& results = report["results"];
  REQUIRE(results.size() == 5);
  // In the order found; severity high only for deny findings of security rules.
  CHECK(results[0]["rule"] == "privileged");
  CHECK(results[0]["result"] == "fail");
  CHECK(results[0]["severity"] == "high");
  CHECK(results[0]["properties"]["field"] == "spec.containers[0].securityContext.privileged");
  CHECK(results[0]["properties"]["action"] == "deny");
  CHECK(results[0]["resources"] == Json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", "team-a"}, {"name", "bad"}}}));
  CHECK(results[1]["rule"] == "tenant-pool");
  CHECK(results[1]["severity"] == "medium");
  CHECK(results[2]["result"] == "warn");
  CHECK(results[3]["rule"] == "gpu-cap");
  CHECK(results[3]["result"] == "warn");
  CHECK(results[3]["properties"]["action"] == "audit");
  CHECK(results[4]["rule"] == "gpu-sharing");
  CHECK(results[4]["severity"] == "medium");  // a security rule, but only warned
  for (const auto& r : results) {
    CHECK(r["policy"] == "gpu-admission");
    CHECK(r["message"].get<std::string>().rfind("message of ", 0) == 0);
    CHECK(!r.contains("timestamp"));
  }
}

TEST_CASE("policy report: at most 1,000 results, fails first, the summary counts all", "[io][policyreport]") {
  std::vector<ReportSubject> subjects;
  for (int i = 0; i < 700; ++i) subjects.push_back(pod("w" + std::to_string(i), {finding(RuleId::TenantLabel, Action::Warn)}));
  for (int i = 0; i < 800; ++i) subjects.push_back(pod("f" + std::to_string(i), {finding(RuleId::GpuCap, Action::Deny)}));
  const Json report = policy_report("big", subjects);
  CHECK(report["summary"]["fail"] == 800);
  CHECK(report["summary"]["warn"] == 700);
  const Json& results = report["results"];
  REQUIRE(results.size() == 1000);
  for (size_t i = 0; i < 800; ++i) CHECK(results[i]["result"] == "fail");
  for (size_t i = 800; i < 1000; ++i) CHECK(results[i]["result"] == "warn");
  CHECK(report["metadata"]["annotations"]["gpu-admission.io/results-truncated"] == "1000 of 1500 results listed");

  SECTION("a smaller cap, a uid and a timestamp") {
    PolicyReportOptions options;
    options.max_results = 2;
    options.timestamp_seconds = 1700000000;
    ReportSubject s = pod("p", {finding(RuleId::Privileged, Action::Deny), finding(RuleId::HostNamespaces, Action::Deny),
                                finding(RuleId::MigProfile, Action::Deny)});
    s.uid = "u-1";
    const Json small = policy_report("ns", {s}, options);
    CHECK(small["summary"]["fail"] == 3);
    REQUIRE(small["results"].size() == 2);
    CHECK(small["results"][0]["resources"][0]["uid"] == "u-1");
    CHECK(small["results"][0]["timestamp"] == Json{{"seconds", 1700000000}, {"nanos", 0}});
  }
}

TEST_CASE("policy report: only_fail keeps fail results, counts the rest", "[io][policyreport]") {
  PolicyReportOptions options;
  options.only_fail = true;
  const Json report =
      policy_report("ns", {pod("p", {finding(RuleId::Privileged, Action::Deny), finding(RuleId::TenantLabel, Action::Warn)})}, options);
  CHECK(report["summary"]["warn"] == 1);
  REQUIRE(report["results"].size() == 1);
  CHECK(report["results"][0]["result"] == "fail");
  CHECK(!report["metadata"].contains("annotations"));
}

TEST_CASE("policy report: names are bounded like messages, a Kubernetes name whole", "[io][policyreport][bounded]") {
  const std::string name253(253, 'n');
  const std::string big(1400000, 'a');
  const Json report = policy_report("team-a", {pod(name253, {finding(RuleId::Privileged, Action::Deny)}),
                                               pod(big, {finding(RuleId::Privileged, Action::Deny)})});
  REQUIRE(report["results"].size() == 2);
  CHECK(report["results"][0]["resources"][0]["name"] == name253);
  CHECK(report["results"][1]["resources"][0]["name"] == std::string(256, 'a') + "\u2026 (1.4 MB)");
  CHECK(report.dump().size() < 4096);
}

TEST_CASE("policy report: the same content as an OpenReports Report; report APIs by name", "[io][policyreport]") {
  using gpu_admission::webhook::ReportApi;
  using gpu_admission::webhook::report_api_info;
  using gpu_admission::webhook::report_api_named;
  const std::vector<ReportSubject> subjects = {
      pod("clean", {}), pod("bad", {finding(RuleId::Privileged, Action::Deny), finding(RuleId::TenantLabel, Action::Warn)})};
  PolicyReportOptions options;
  options.timestamp_seconds = 1'700'000'000;
  Json wg = policy_report("team-a", subjects, options);
  options.api = ReportApi::OpenReports;
  Json open = policy_report("team-a", subjects, options);
  CHECK(open["apiVersion"] == "openreports.io/v1alpha1");
  CHECK(open["kind"] == "Report");
  CHECK(open["source"] == "gpu-admission");
  CHECK(open["results"][0]["source"] == "gpu-admission");
  CHECK_FALSE(wg.contains("source"));
  // Apart from the type and the report's source, the two are the same.
  open.erase("source");
  for (Json* r : {&wg, &open}) {
    r->erase("apiVersion");
    r->erase("kind");
  }
  CHECK(open == wg);

  CHECK(report_api_named("openreports.io/v1alpha1") == ReportApi::OpenReports);
  CHECK(report_api_named("wgpolicyk8s.io/v1alpha2") == ReportApi::WgPolicy);
  for (const char* wrong : {"openreports.io", "openreports", "wgpolicyk8s.io/v1beta1", "OpenReports.io/v1alpha1", ""})
    CHECK_FALSE(report_api_named(wrong));
  CHECK(report_api_info(ReportApi::OpenReports).resource == "reports");
  CHECK(report_api_info(ReportApi::WgPolicy).resource == "policyreports");
}
