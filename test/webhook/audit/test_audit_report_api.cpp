// `audit --write-reports` in either report API: discovery chooses OpenReports' Reports when the
// cluster serves them, else wgpolicyk8s.io's PolicyReports; --report-api chooses one outright; a
// cluster that serves neither (or not the one asked for) is a clear error; a cluster that gains
// OpenReports has our old PolicyReports retired; kubectl reads the Reports back.
#include <nlohmann/json.hpp>

#include "webhook/cli/cli_test_support.h"
#include "webhook/cluster/cluster_test_support.h"
#include "test_paths.h"

using namespace cluster_test;
using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;

namespace {

const std::string kPolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";
constexpr const char* kOpen = "openreports.io/v1alpha1";
constexpr const char* kWg = "wgpolicyk8s.io/v1alpha2";

// team-alpha: a privileged pod and a passing one; sandbox: a passing pod.
struct Cluster {
  FakeApiServer api;
  TempDir dir;
  std::string kubeconfig;
  Cluster(bool open_reports, bool policy_reports) {
    api.serve_open_reports = open_reports;
    api.serve_policy_reports = policy_reports;
    REQUIRE(api.start());
    kubeconfig = dir.file("kubeconfig");
    api.write_kubeconfig(kubeconfig);
    for (const char* ns : {"team-alpha", "sandbox"}) api.put("namespaces", {{"metadata", {{"name", ns}}}});
    pod("team-alpha", "bad", true);
    pod("team-alpha", "good", false);
    pod("sandbox", "quiet", false);
  }
  void pod(const std::string& ns, const std::string& name, bool privileged) {
    Json meta = {{"name", name}, {"namespace", ns}, {"uid", ns + "-" + name}};
    if (ns == "team-alpha") meta["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
    Json c = {{"name", "main"}, {"image", "registry.example.com/app:1"}};
    if (privileged) c["securityContext"] = {{"privileged", true}};
    api.put("pods", {{"metadata", meta}, {"spec", {{"containers", Json::array({c})}}}});
  }
  CliRun audit(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"audit", "-p", kPolicy, "--kubeconfig", kubeconfig};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  Json report(const std::string& resource) const { return api.stored(resource, "team-alpha", "gpu-admission"); }
};

}  // namespace

TEST_CASE("audit report api: discovery prefers OpenReports, else PolicyReports", "[audit][cluster]") {
  struct Case {
    bool open, wg;
    std::string written, not_written, says;
  };
  for (const Case& c : {Case{true, true, "reports", "policyreports", "OpenReports Reports (openreports.io/v1alpha1): 1 created"},
                        Case{true, false, "reports", "policyreports", "OpenReports Reports (openreports.io/v1alpha1): 1 created"},
                        Case{false, true, "policyreports", "reports", "PolicyReports (wgpolicyk8s.io/v1alpha2): 1 created"}}) {
    Cluster cluster(c.open, c.wg);
    const CliRun r = cluster.audit({"--write-reports"});
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
    const Json report = cluster.report(c.written);
    REQUIRE(report.is_object());
    CHECK(report["apiVersion"] == (c.written == "reports" ? kOpen : kWg));
    CHECK(report["summary"]["fail"] == 1);
    CHECK(report["summary"]["pass"] == 1);
    CHECK(report["results"][0]["resources"][0]["name"] == "bad");
    CHECK(report["results"][0]["policy"] == "gpu-admission");
    CHECK(report.contains("source") == (c.written == "reports"));
    CHECK(cluster.report(c.not_written).is_null());
    CHECK(cluster.api.stored(c.written, "sandbox", "gpu-admission").is_null());
  }
}

TEST_CASE("audit report api: --report-api chooses; an API not served is an error naming its CRD", "[audit][cluster]") {
  Cluster both(true, true);
  CliRun r = both.audit({"--write-reports", "--report-api", kWg});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(both.report("policyreports").is_object());
  CHECK(both.report("reports").is_null());

  Cluster wg_only(false, true);
  r = wg_only.audit({"--write-reports", "--report-api", kOpen});
  CHECK(r.code == 2);
  CHECK(r.err.find("OpenReports Report CRD (reports.openreports.io, v1alpha1) is not installed") != std::string::npos);
  CHECK(r.err.find("--report-api") != std::string::npos);
  CHECK(wg_only.api.counters.creates == 0);

  Cluster neither(false, false);
  r = neither.audit({"--write-reports"});
  CHECK(r.code == 2);
  CHECK(r.err.find("neither report CRD is installed") != std::string::npos);
  CHECK(r.err.find("reports.openreports.io") != std::string::npos);
  CHECK(r.err.find("policyreports.wgpolicyk8s.io") != std::string::npos);
  CHECK(r.err.find("without --write-reports") != std::string::npos);
  CHECK(neither.audit({}).code == 1);  // without --write-reports the audit runs

  // Flags: the API's exact spelling, and only with --write-reports.
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--write-reports", "--report-api", "openreports"}, {"--write-reports", "--report-api", "wgpolicyk8s.io/v1beta1"},
           {"--report-api", kOpen}}) {
    r = both.audit(bad);
    CHECK(r.code == 2);
    CHECK(r.err.find("--report-api") != std::string::npos);
  }
}

TEST_CASE("audit report api: a cluster that gains OpenReports retires our PolicyReports", "[audit][cluster]") {
  Cluster cluster(false, true);
  REQUIRE(cluster.audit({"--write-reports"}).code == 1);
  REQUIRE(cluster.report("policyreports").is_object());
  // Someone else's PolicyReport stays.
  Json other = cluster.report("policyreports");
  other["metadata"] = {{"name", "kyverno-polr"}, {"namespace", "team-alpha"},
                       {"labels", {{"app.kubernetes.io/managed-by", "kyverno"}}}};
  cluster.api.put("policyreports", other);

  cluster.api.serve_open_reports = true;
  const CliRun r = cluster.audit({"--write-reports"});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.err.find("OpenReports Reports (openreports.io/v1alpha1): 1 created, 0 updated, 1 deleted") != std::string::npos);
  CHECK(cluster.report("reports").is_object());
  CHECK(cluster.report("policyreports").is_null());
  CHECK(cluster.api.stored("policyreports", "team-alpha", "kyverno-polr").is_object());
  // An API asked for outright leaves the other alone.
  REQUIRE(cluster.audit({"--write-reports", "--report-api", kWg}).code == 1);
  CHECK(cluster.report("reports").is_object());
  CHECK(cluster.report("policyreports").is_object());
}

TEST_CASE("audit report api: kubectl reads the OpenReports Reports back", "[audit][cluster]") {
  if (std::system("kubectl version --client >/dev/null 2>&1") != 0) {
    WARN("skipped: kubectl not found");
    return;
  }
  Cluster cluster(true, true);
  REQUIRE(cluster.audit({"--write-reports"}).code == 1);
  const std::string out_file = cluster.dir.file("kubectl.out");
  const std::string kubectl = "kubectl --kubeconfig " + cluster.kubeconfig;
  // By plural with group, and by short name (reps).
  for (const std::string what : {"reports.openreports.io -A", "reps -A"}) {
    INFO(what);
    REQUIRE(std::system((kubectl + " get " + what + " > " + out_file + " 2>&1").c_str()) == 0);
    const std::string table = cli_test::slurp(out_file);
    INFO(table);
    CHECK(table.find("team-alpha") != std::string::npos);
    CHECK(table.find("gpu-admission") != std::string::npos);
    CHECK(table.find("sandbox") == std::string::npos);
  }
  REQUIRE(std::system((kubectl + " get reports.openreports.io -n team-alpha gpu-admission -o json > " + out_file +
                       " 2>&1").c_str()) == 0);
  const Json report = Json::parse(cli_test::slurp(out_file), nullptr, false);
  REQUIRE(report.is_object());
  CHECK(report["kind"] == "Report");
  CHECK(report["source"] == "gpu-admission");
  CHECK(report["summary"]["fail"] == 1);
}
