// The audit's outputs: text (totals, then violating objects), JSON, and PolicyReports (one per
// namespace with findings, pods in the result properties, passing objects in the summary,
// bounded in size; fingerprints that ignore result timestamps so an unchanged report is not
// written again).
#include "audit_test_support.h"

#include "webhook/audit/audit_output.h"
#include "webhook/audit/report_writer.h"

using namespace audit_test;
using gpu_admission::Json;

namespace {

std::string privileged_pods(const std::string& ns, int count, const std::string& owner = "") {
  std::string yaml;
  for (int i = 0; i < count; ++i)
    yaml += "apiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) + ", namespace: " + ns + ", uid: " + ns +
            std::to_string(i) + labels_for(ns) + (owner.empty() ? "" : ", " + owner_ref("apps/v1", "StatefulSet", owner, ns + owner)) +
            "}\nspec:\n" + container_spec("  ", "securityContext: {privileged: true}") + "---\n";
  return yaml;
}

std::vector<Json> reports_of(const AuditResult& r) {
  std::vector<Json> out;
  for_each_policy_report(r, 1'800'000'000, [&](Json&& report) { out.push_back(std::move(report)); });
  return out;
}

}  // namespace

TEST_CASE("audit output: one PolicyReport per namespace with findings", "[audit][report]") {
  const std::string passing = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: team-alpha, uid: ok, " + kAlphaLabels +
                              "}\nspec:\n" +
                              container_spec("  ");
  const std::string elsewhere = "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: quiet, uid: q}\nspec:\n" +
                                container_spec("  ");
  const AuditResult r = audit_yaml(privileged_pods("team-alpha", 3, "db") + passing + "---\n" + elsewhere);
  const auto reports = reports_of(r);
  REQUIRE(reports.size() == 1);  // "quiet" has no findings: no report
  const Json& report = reports[0];
  CHECK(report["apiVersion"] == "wgpolicyk8s.io/v1alpha2");
  CHECK(report["kind"] == "PolicyReport");
  CHECK(report["metadata"]["name"] == "gpu-admission");
  CHECK(report["metadata"]["namespace"] == "team-alpha");
  CHECK(report["summary"]["fail"] == 1);  // the StatefulSet's one finding
  CHECK(report["summary"]["pass"] == 1);  // the passing pod
  REQUIRE(report["results"].size() == 1);
  const Json& result = report["results"][0];
  CHECK(result["rule"] == "privileged");
  CHECK(result["result"] == "fail");
  CHECK(result["resources"][0]["kind"] == "StatefulSet");
  CHECK(result["properties"]["pods"] == "3");
  CHECK(result["timestamp"]["seconds"] == 1'800'000'000);
}

TEST_CASE("audit output: reports stay under 1 MiB and say what they left out", "[audit][report]") {
  // 1,200 violating pods of their own with long container names.
  std::string yaml;
  const std::string long_name(200, 'x');
  for (int i = 0; i < 1200; ++i)
    yaml += "apiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) + "-" + long_name +
            ", namespace: big, uid: u" + std::to_string(i) + "}\nspec:\n  containers: [{name: c" + long_name +
            ", image: i, securityContext: {privileged: true}}]\n---\n";
  const AuditResult r = audit_yaml(yaml);
  const auto reports = reports_of(r);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].dump().size() <= kMaxReportBytes);
  CHECK(reports[0]["results"].size() <= 1000);
  CHECK(reports[0]["summary"]["fail"] == 1200);  // the summary counts every one
  CHECK(reports[0]["metadata"]["annotations"]["gpu-admission.io/results-truncated"].get<std::string>().find("of 1200") !=
        std::string::npos);
}

TEST_CASE("audit output: bound_report_size drops results from the end", "[audit][report]") {
  Json report = {{"metadata", {{"name", "gpu-admission"}}}, {"summary", {{"fail", 100}, {"warn", 0}}}, {"results", Json::array()}};
  for (int i = 0; i < 100; ++i) report["results"].push_back({{"message", std::string(1000, 'm')}, {"n", i}});
  CHECK(bound_report_size(report, 20'000));
  CHECK(report.dump().size() <= 20'000);
  CHECK(report["results"].size() < 100);
  CHECK(report["results"][0]["n"] == 0);
}

TEST_CASE("audit output: a report's fingerprint ignores result timestamps only", "[audit][report]") {
  const AuditResult r = audit_yaml(privileged_pods("team-alpha", 2));
  std::vector<Json> first, second;
  for_each_policy_report(r, 1'800'000'000, [&](Json&& j) { first.push_back(std::move(j)); });
  for_each_policy_report(r, 1'900'000'000, [&](Json&& j) { second.push_back(std::move(j)); });
  REQUIRE(first.size() == 1);
  CHECK(first[0] != second[0]);
  CHECK(report_fingerprint(first[0]) == report_fingerprint(second[0]));
  Json changed = first[0];
  changed["summary"]["pass"] = 5;
  CHECK(report_fingerprint(changed) != report_fingerprint(first[0]));
  changed = first[0];
  changed["results"][0]["message"] = "another message";
  CHECK(report_fingerprint(changed) != report_fingerprint(first[0]));
}

TEST_CASE("audit output: text and JSON carry the totals and the objects", "[audit]") {
  const AuditResult r = audit_yaml(privileged_pods("team-alpha", 2, "db"));
  const std::string text = audit_text(r);
  CHECK(text.find("alpha") != std::string::npos);
  CHECK(text.find("team-alpha/StatefulSet/db (tenant alpha, 2 pods, 2 violating)") != std::string::npos);
  CHECK(text.find("deny privileged:") != std::string::npos);
  const Json json = audit_json(r);
  REQUIRE(json["totals"].size() == 1);
  CHECK(json["totals"][0] == Json({{"tenant", "alpha"}, {"rule", "privileged"}, {"action", "deny"}, {"objects", 1}, {"pods", 2}}));
  REQUIRE(json["objects"].size() == 1);
  CHECK(json["objects"][0]["kind"] == "StatefulSet");
  CHECK(json["objects"][0]["pods"] == 2);
  CHECK(json["judged"]["Pod"] == 2);
}
