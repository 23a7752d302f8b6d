// The fake API server's PolicyReport CRD (wgpolicyk8s.io/v1alpha2): create, get, list, update
// and delete with the real server's answers (201, 409 AlreadyExists and Conflict, 404, 200 with
// a Status), the checks of what is written (kind, namespace, name, the CRD's schema, 3 MiB), the
// report the project's own builder writes accepted as it is, and the CRD absent.
#include <catch2/catch.hpp>

#include "fake_apiserver_client.h"
#include "webhook/io/policy_report.h"

using namespace cluster_test;

namespace {
const std::string kReports = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-a/policyreports";
const std::string kTeamBReports = "/apis/wgpolicyk8s.io/v1alpha2/namespaces/team-b/policyreports";
Json report(const std::string& ns, const std::string& result = "fail") { return policy_report_object(ns, result); }
}  // namespace

TEST_CASE("fake API server: PolicyReports are created, read, updated and deleted as on a real server",
          "[cluster][fake]") {
  FakeApiServer server;
  REQUIRE(server.start());
  Client client(server);

  const auto created = client.send("POST", kReports, report("team-a"));
  INFO(created.body.dump());
  REQUIRE(created.status == 201);
  const Json& metadata = created.body["metadata"];
  CHECK(metadata["name"] == "gpu-admission");
  CHECK(metadata["namespace"] == "team-a");
  CHECK_FALSE(metadata.value("uid", "").empty());
  CHECK_FALSE(metadata.value("resourceVersion", "").empty());
  CHECK_FALSE(metadata.value("creationTimestamp", "").empty());
  CHECK(server.stored("policyreports", "team-a", "gpu-admission") == created.body);
  CHECK(server.counters.creates == 1);

  const auto again = client.send("POST", kReports, report("team-a"));
  CHECK(again.status == 409);
  CHECK(again.body["reason"] == "AlreadyExists");
  CHECK(again.body["details"]["name"] == "gpu-admission");
  CHECK(client.send("GET", kReports + "/gpu-admission").body == created.body);

  // Updates: a stale resourceVersion conflicts, the current one or none goes through.
  Json changed = created.body;
  changed["summary"]["fail"] = 2;
  const auto updated = client.send("PUT", kReports + "/gpu-admission", changed);
  REQUIRE(updated.status == 200);
  CHECK(updated.body["summary"]["fail"] == 2);
  CHECK(updated.body["metadata"]["uid"] == metadata["uid"]);
  CHECK(updated.body["metadata"]["resourceVersion"] != metadata["resourceVersion"]);
  CHECK(updated.body["metadata"]["generation"] == 2);
  const auto stale = client.send("PUT", kReports + "/gpu-admission", changed);
  CHECK(stale.status == 409);
  CHECK(stale.body["reason"] == "Conflict");
  changed["metadata"].erase("resourceVersion");
  CHECK(client.send("PUT", kReports + "/gpu-admission", changed).status == 200);
  CHECK(server.counters.updates == 2);
  CHECK(client.send("PUT", kReports + "/other", changed).status == 400);  // name differs from the URL
  Json other_uid = changed;
  other_uid["metadata"]["uid"] = "another-object";
  CHECK(client.send("PUT", kReports + "/gpu-admission", other_uid).body["reason"] == "Conflict");
  Json absent = report("team-a");
  absent["metadata"]["name"] = "absent";
  CHECK(client.send("PUT", kReports + "/absent", absent).body["reason"] == "NotFound");

  // Lists, with a label selector, per namespace and cluster-wide.
  REQUIRE(client.send("POST", kTeamBReports, report("team-b")).status == 201);
  Json other = report("team-b");
  other["metadata"]["name"] = "someone-else";
  other["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "kyverno"}};
  REQUIRE(client.send("POST", kTeamBReports, other).status == 201);
  const std::string ours = "?labelSelector=" + escaped("app.kubernetes.io/managed-by=gpu-admission");
  CHECK(list_all(client, "/apis/wgpolicyk8s.io/v1alpha2/policyreports" + ours, 1).keys ==
        std::vector<std::string>{"team-a/gpu-admission", "team-b/gpu-admission"});
  CHECK(list_all(client, "/apis/wgpolicyk8s.io/v1alpha2/policyreports", 10).keys.size() == 3);
  CHECK(list_all(client, kReports, 10).keys.size() == 1);

  // DeleteOptions preconditions are checked.
  const Json stale_precondition = {
      {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"preconditions", {{"uid", "not-it"}}}};
  CHECK(client.send("DELETE", kReports + "/gpu-admission", stale_precondition).status == 409);
  const Json precondition = {{"preconditions", {{"uid", metadata["uid"]}}}};
  const auto deleted = client.send("DELETE", kReports + "/gpu-admission", precondition);
  CHECK(deleted.status == 200);
  CHECK(deleted.body["kind"] == "Status");
  CHECK(deleted.body["status"] == "Success");
  CHECK(client.send("DELETE", kReports + "/gpu-admission").status == 404);
  CHECK(client.send("GET", kReports + "/gpu-admission").status == 404);
  CHECK(server.counters.deletes == 1);

  // Every write is kept, with its body and answer.
  const auto writes = server.writes();
  REQUIRE(writes.size() == 13);
  CHECK(writes[0].method == "POST");
  CHECK(writes[0].path == kReports);
  CHECK(Json::parse(writes[0].body) == report("team-a"));
  CHECK(writes[0].status == 201);
  CHECK(writes.back().status == 404);
}

TEST_CASE("fake API server: PolicyReport writes are checked like the real server checks them", "[cluster][fake]") {
  FakeApiServer server;
  REQUIRE(server.start());
  Client client(server);
  const auto refused = [&](const Json& body, const std::string& path = kReports) {
    const auto answer = client.send("POST", path, body);
    INFO(answer.body.dump());
    CHECK(answer.body["kind"] == "Status");
    return std::pair{answer.status, answer.body.value("message", "")};
  };
  Json wrong = report("team-a");
  wrong["kind"] = "ClusterPolicyReport";
  CHECK(refused(wrong).first == 400);
  wrong = report("team-a");
  wrong["apiVersion"] = "wgpolicyk8s.io/v1beta1";
  CHECK(refused(wrong).first == 400);
  CHECK(refused(report("team-b")).second.find("does not match the namespace") != std::string::npos);
  CHECK(refused(Json::array()).first == 400);
  wrong = report("team-a");
  wrong["metadata"].erase("name");
  CHECK(refused(wrong).first == 422);
  wrong["metadata"]["name"] = "Not_A_Name";
  CHECK(refused(wrong).first == 422);

  // The CRD's schema: enums, required fields, types.
  const auto [status, message] = refused(report("team-a", "deny"));
  CHECK(status == 422);
  CHECK(message.find("results[0].result: Unsupported value: \"deny\"") != std::string::npos);
  wrong = report("team-a");
  wrong["results"][0].erase("policy");
  wrong["summary"]["fail"] = "one";
  wrong["results"][0]["properties"]["count"] = 3;
  const auto [status2, message2] = refused(wrong);
  CHECK(status2 == 422);
  CHECK(message2.find("results[0].policy: Required value") != std::string::npos);
  CHECK(message2.find("summary.fail: Invalid value") != std::string::npos);
  CHECK(message2.find("results[0].properties") != std::string::npos);
  // A body past the API server's 3 MiB limit.
  Json huge = report("team-a");
  huge["results"][0]["message"] = std::string(3u << 20, 'x');
  CHECK(refused(huge).first == 413);
  // A resourceVersion on create is the server's to set.
  wrong = report("team-a");
  wrong["metadata"]["resourceVersion"] = "5";
  CHECK(refused(wrong).first == 500);
  CHECK(server.counters.creates == 0);

  // Unknown fields are dropped; what the project's own report builder writes is accepted as it is.
  Json extra = report("team-a");
  extra["results"][0]["unknown"] = "dropped";
  extra["spec"] = {{"x", 1}};
  const auto pruned = client.send("POST", kReports, extra);
  REQUIRE(pruned.status == 201);
  CHECK_FALSE(pruned.body.contains("spec"));
  CHECK_FALSE(pruned.body["results"][0].contains("unknown"));
  gpu_admission::webhook::ReportSubject subject{"v1", "Pod", "train", "uid-1", {}, {}, {}};
  subject.findings.push_back({});
  subject.findings.back().action = gpu_admission::policy::Action::Deny;
  subject.findings.back().message = "16 GPUs is over the cap of 8";
  gpu_admission::webhook::PolicyReportOptions options;
  options.timestamp_seconds = 1700000000;
  const Json built = gpu_admission::webhook::policy_report("team-b", {subject}, options);
  const auto accepted = client.send("POST", kTeamBReports, built);
  INFO(accepted.body.dump());
  CHECK(accepted.status == 201);
  CHECK(accepted.body["results"] == built["results"]);

  // The wrong token, a PATCH: refused.
  CHECK(client.send("PATCH", kReports + "/gpu-admission", Json::object()).status == 405);
  client.token = "wrong";
  CHECK(client.send("POST", kReports, report("team-a")).status == 401);
}

TEST_CASE("fake API server: without the PolicyReport CRD every report path is 404", "[cluster][fake]") {
  FakeApiServer server;
  server.serve_policy_reports = false;
  REQUIRE(server.start());
  Client client(server);
  CHECK(client.send("GET", "/apis").body.dump().find("wgpolicyk8s.io") == std::string::npos);
  for (const std::string& path :
       std::vector<std::string>{"/apis/wgpolicyk8s.io", "/apis/wgpolicyk8s.io/v1alpha2", kReports,
                                kReports + "/gpu-admission", "/apis/wgpolicyk8s.io/v1alpha2/policyreports"}) {
    INFO(path);
    const auto answer = client.send("GET", path);
    CHECK(answer.status == 404);
    CHECK(answer.body["kind"] == "Status");
  }
  const auto post = client.send("POST", kReports, report("team-a"));
  CHECK(post.status == 404);
  CHECK(post.body["reason"] == "NotFound");
  CHECK(client.send("PUT", kReports + "/gpu-admission", report("team-a")).status == 404);
  CHECK(client.send("DELETE", kReports + "/gpu-admission").status == 404);
  CHECK(server.counters.creates == 0);

  // Installed again; then only its namespaced kind removed: the group stays for the other.
  server.serve_policy_reports = true;
  CHECK(client.send("POST", kReports, report("team-a")).status == 201);
  CHECK(server.remove_resource("policyreports"));
  CHECK(client.send("GET", kReports).status == 404);
  // The cluster-scoped kind: no namespace in its path or on the stored object.
  Json cluster_report = report("");
  cluster_report["kind"] = "ClusterPolicyReport";
  const auto cluster_created =
      client.send("POST", "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports", cluster_report);
  CHECK(cluster_created.status == 201);
  CHECK_FALSE(cluster_created.body["metadata"].contains("namespace"));
  CHECK(client.send("GET", "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports").body["items"].size() == 1);
  CHECK(client.send("GET", "/apis/wgpolicyk8s.io/v1alpha2").body["resources"].size() == 1);
}
