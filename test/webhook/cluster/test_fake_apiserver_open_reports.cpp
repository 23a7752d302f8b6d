// The fake API server's OpenReports CRD (openreports.io/v1alpha1 Reports and ClusterReports):
// discovered beside wgpolicyk8s.io, written and read like the PolicyReports, checked against its
// own schema (`source` and `configuration` at the top, which a PolicyReport does not keep), the
// report the project's builder writes in that API accepted as it is, and the CRD absent.
#include <catch2/catch.hpp>

#include "fake_apiserver_client.h"
#include "policy/base/ids.h"
#include "webhook/io/policy_report.h"

using namespace cluster_test;

namespace {

const std::string kGroupVersion = "/apis/openreports.io/v1alpha1";
const std::string kReports = kGroupVersion + "/namespaces/team-a/reports";

// The project's own report of one failing subject, in `api`.
Json built(gpu_admission::webhook::ReportApi api) {
  using namespace gpu_admission;
  webhook::PolicyReportOptions options;
  options.api = api;
  options.timestamp_seconds = 1'700'000'000;
  webhook::PolicyReportBuilder builder("team-a", options);
  builder.add({"apps/v1", "Deployment", "web", "dep-web", webhook::ReportSubject::State::Judged,
               {policy::Finding{policy::RuleId::Privileged, policy::Action::Deny,
                                "spec.template.spec.containers[0].securityContext.privileged",
                                "container \"main\" is privileged"}},
               3});
  return builder.build();
}

}  // namespace

TEST_CASE("fake API server: OpenReports Reports are discovered, written and read back", "[cluster][fake]") {
  FakeApiServer server;
  REQUIRE(server.start());
  Client client(server);
  const std::string groups = client.send("GET", "/apis").body.dump();
  CHECK(groups.find("openreports.io") != std::string::npos);
  CHECK(groups.find("wgpolicyk8s.io") != std::string::npos);
  const Json resources = client.send("GET", kGroupVersion).body["resources"];
  std::vector<std::string> names;
  for (const Json& r : resources) names.push_back(r.value("name", "") + "/" + r.value("kind", ""));
  CHECK(names == std::vector<std::string>{"reports/Report", "clusterreports/ClusterReport"});

  const Json report = built(gpu_admission::webhook::ReportApi::OpenReports);
  REQUIRE(report["apiVersion"] == "openreports.io/v1alpha1");
  REQUIRE(report["kind"] == "Report");
  const auto created = client.send("POST", kReports, report);
  INFO(created.body.dump());
  REQUIRE(created.status == 201);
  const Json stored = server.stored("reports", "team-a", "gpu-admission");
  CHECK(stored["source"] == "gpu-admission");
  CHECK(stored["summary"]["fail"] == 1);
  CHECK(stored["results"][0]["rule"] == "privileged");
  CHECK(stored["results"][0]["resources"][0]["name"] == "web");
  CHECK(server.stored("policyreports", "team-a", "gpu-admission").is_null());
  CHECK(client.send("GET", kGroupVersion + "/reports").body["items"].size() == 1);
  CHECK(client.send("DELETE", kReports + "/gpu-admission").status == 200);

  // The PolicyReport of the same content does not keep `source` at its top: the schemas differ.
  const Json policy_report = built(gpu_admission::webhook::ReportApi::WgPolicy);
  CHECK_FALSE(policy_report.contains("source"));
  Json with_source = policy_report;
  with_source["source"] = "gpu-admission";
  REQUIRE(client.send("POST", "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-a/policyreports", with_source).status == 201);
  CHECK_FALSE(server.stored("policyreports", "team-a", "gpu-admission").contains("source"));
  // A PolicyReport is not a Report.
  CHECK(client.send("POST", kReports, policy_report).status == 400);
}

TEST_CASE("fake API server: OpenReports writes are checked against its schema", "[cluster][fake]") {
  FakeApiServer server;
  REQUIRE(server.start());
  Client client(server);
  const Json report = built(gpu_admission::webhook::ReportApi::OpenReports);
  const auto refused = [&](const Json& body) {
    const auto answer = client.send("POST", kReports, body);
    INFO(answer.body.dump());
    CHECK(answer.status == 422);
    return answer.body.value("message", "");
  };
  Json wrong = report;
  wrong["source"] = 7;
  CHECK(refused(wrong).find("source: Invalid value") != std::string::npos);
  wrong = report;
  wrong["configuration"] = Json::object();
  CHECK(refused(wrong).find("configuration.limits: Required value") != std::string::npos);
  wrong["configuration"] = {{"limits", {{"maxResults", "many"}}}};
  CHECK(refused(wrong).find("configuration.limits.maxResults: Invalid value") != std::string::npos);
  wrong = report;
  wrong["results"][0]["result"] = "deny";
  CHECK(refused(wrong).find("results[0].result: Unsupported value: \"deny\"") != std::string::npos);
  // Accepted with a contract on what it holds; unknown fields pruned.
  Json fine = report;
  fine["configuration"] = {{"limits", {{"maxResults", 1000}, {"statusFilter", {"fail", "warn"}}}}};
  fine["extra"] = true;
  REQUIRE(client.send("POST", kReports, fine).status == 201);
  const Json stored = server.stored("reports", "team-a", "gpu-admission");
  CHECK(stored["configuration"]["limits"]["maxResults"] == 1000);
  CHECK_FALSE(stored.contains("extra"));
}

TEST_CASE("fake API server: without the OpenReports CRD its paths are 404, the PolicyReports stay", "[cluster][fake]") {
  FakeApiServer server;
  server.serve_open_reports = false;
  REQUIRE(server.start());
  Client client(server);
  const std::string groups = client.send("GET", "/apis").body.dump();
  CHECK(groups.find("openreports.io") == std::string::npos);
  CHECK(groups.find("wgpolicyk8s.io") != std::string::npos);
  for (const std::string& path : {kGroupVersion, kReports, kGroupVersion + "/reports"}) {
    INFO(path);
    CHECK(client.send("GET", path).status == 404);
  }
  CHECK(client.send("POST", kReports, built(gpu_admission::webhook::ReportApi::OpenReports)).status == 404);
  CHECK(client.send("GET", "/apis/wgpolicyk8s.io/v1alpha2").status == 200);
  server.serve_open_reports = true;
  CHECK(client.send("GET", kGroupVersion).status == 200);
}
