// `gpu-admission audit` against an API server, as a platform team runs it: discovery, paged
// lists of every kind (an ML CRD when it is installed, a note when it is not), owner chains,
// PolicyReports written only when they change and read back by kubectl, a fixed workload
// leaving the next report, a cluster without the PolicyReport CRD, and --interval's metrics.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "webhook/cli/cli_test_support.h"
#include "webhook/cluster/cluster_test_support.h"
#include "webhook/spawn_binary.h"
#include "test_paths.h"

using namespace cluster_test;
using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using nlohmann::json;

namespace {

const std::string kPolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";

Json meta(const std::string& ns, const std::string& name, const std::string& uid, const Json& owner = nullptr) {
  Json m = {{"name", name}, {"namespace", ns}, {"uid", uid}};
  // What /mutate gave the pods of the fixture policy's tenants (stored pods without them violate tenant-label).
  if (ns == "team-alpha") m["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  if (ns == "beta-dev")
    m["labels"] = {{"gpu-admission.io/tenant", "beta"}, {"cost-center", "cc-2077"}, {"example.com/team", "beta"}};
  if (!owner.is_null()) m["ownerReferences"] = Json::array({owner});
  return m;
}

Json owner(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true}};
}

Json pod_spec(bool privileged) {
  Json c = {{"name", "main"}, {"image", "registry.example.com/app:1"}};
  if (privileged) c["securityContext"] = {{"privileged", true}};
  return {{"containers", Json::array({c})}};
}

// team-alpha: Deployment web (privileged) -> ReplicaSet -> 3 pods; 4 passing pods of their own.
// beta-dev: a PyTorchJob whose 2 workers are privileged. sandbox: nothing wrong.
void populate(FakeApiServer& api, bool with_pytorch_crd) {
  api.put("namespaces", {{"metadata", {{"name", "team-alpha"}}}});
  api.put("namespaces", {{"metadata", {{"name", "beta-dev"}}}});
  api.put("namespaces", {{"metadata", {{"name", "sandbox"}}}});
  api.put("deployments", {{"metadata", meta("team-alpha", "web", "dep-web")},
                          {"spec", {{"template", {{"spec", pod_spec(true)}}}}}});
  api.put("replicasets", {{"metadata", meta("team-alpha", "web-1", "rs-web", owner("apps/v1", "Deployment", "web", "dep-web"))},
                          {"spec", {{"template", {{"spec", pod_spec(true)}}}}}});
  for (int i = 0; i < 3; ++i)
    api.put("pods", {{"metadata", meta("team-alpha", "web-1-" + std::to_string(i), "pw" + std::to_string(i),
                                       owner("apps/v1", "ReplicaSet", "web-1", "rs-web"))},
                     {"spec", pod_spec(true)}, {"status", {{"phase", "Running"}}}});
  for (int i = 0; i < 4; ++i)
    api.put("pods", {{"metadata", meta("team-alpha", "ok-" + std::to_string(i), "ok" + std::to_string(i))},
                     {"spec", pod_spec(false)}});
  api.put("pods", {{"metadata", meta("sandbox", "quiet", "q1")}, {"spec", pod_spec(false)}});
  if (with_pytorch_crd) {
    api.add_resource({"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"});
    api.put("pytorchjobs",
            {{"metadata", meta("beta-dev", "llama", "pt-1")},
             {"spec", {{"pytorchReplicaSpecs", {{"Worker", {{"replicas", 2}, {"template", {{"spec", pod_spec(true)}}}}}}}}}});
  }
  for (int i = 0; i < 2; ++i)
    api.put("pods", {{"metadata", meta("beta-dev", "llama-worker-" + std::to_string(i), "pt-w" + std::to_string(i),
                                       owner("kubeflow.org/v1", "PyTorchJob", "llama", "pt-1"))},
                     {"spec", pod_spec(true)}});
}

struct Cluster {
  FakeApiServer api;
  TempDir dir;
  std::string kubeconfig;
  explicit Cluster(bool with_pytorch_crd = true) {
    REQUIRE(api.start());
    kubeconfig = dir.file("kubeconfig");
    api.write_kubeconfig(kubeconfig);
    populate(api, with_pytorch_crd);
  }
  CliRun audit(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"audit", "-p", kPolicy, "--kubeconfig", kubeconfig};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  int writes() const { return api.counters.creates + api.counters.updates + api.counters.deletes; }
};

const json* total(const json& out, const std::string& tenant, const std::string& rule) {
  for (const auto& t : out["totals"])
    if (t["tenant"] == tenant && t["rule"] == rule && t["action"] == "deny") return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("audit cluster: paged lists, owner chains and an ML CRD, counted per tenant and rule", "[audit][cluster]") {
  Cluster cluster;
  const CliRun r = cluster.audit({"-o", "json", "--page-size", "2"});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const json out = json::parse(r.out);
  CHECK(out["judged"]["Pod"] == 10);
  CHECK(out["judged"]["Deployment"] == 1);
  CHECK(out["judged"]["PyTorchJob.kubeflow.org"] == 1);
  const json* alpha = total(out, "alpha", "privileged");
  const json* beta = total(out, "beta", "privileged");
  REQUIRE(alpha);
  REQUIRE(beta);
  CHECK((*alpha)["objects"] == 1);
  CHECK((*alpha)["pods"] == 3);
  CHECK((*beta)["objects"] == 1);
  CHECK((*beta)["pods"] == 2);
  REQUIRE(out["objects"].size() == 2);
  CHECK(out["objects"][0]["kind"] == "PyTorchJob");  // beta-dev sorts first
  CHECK(out["objects"][1]["kind"] == "Deployment");
  CHECK(out["objects"][1]["pods"] == 3);
  CHECK(cluster.api.list_pages_of("pods") >= 5);  // 10 pods, 2 a page
}

TEST_CASE("audit cluster: a kind the cluster does not serve is noted, not an error", "[audit][cluster]") {
  Cluster cluster(false);
  const CliRun r = cluster.audit({"-o", "json"});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const json out = json::parse(r.out);
  bool noted = false;
  for (const auto& note : out["notes"])
    noted = noted || note.get<std::string>().find("PyTorchJob.kubeflow.org") != std::string::npos;
  CHECK(noted);
  // The workers are reported at their owner all the same (named by their ownerReference).
  CHECK(out["objects"][0]["kind"] == "PyTorchJob");
  CHECK(out["objects"][0]["pods"] == 2);
}

TEST_CASE("audit cluster: --write-reports writes what changed, kubectl reads it, a fix leaves the report", "[audit][cluster]") {
  Cluster cluster;
  cluster.api.serve_open_reports = false;  // PolicyReports: the OpenReports cases are test_audit_report_api.cpp's
  CliRun r = cluster.audit({"--write-reports"});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  CHECK(cluster.api.counters.creates == 2);  // team-alpha and beta-dev; sandbox has no findings
  Json alpha = cluster.api.stored("policyreports", "team-alpha", "gpu-admission");
  REQUIRE(alpha.is_object());
  CHECK(alpha["summary"]["fail"] == 1);
  CHECK(alpha["summary"]["pass"] == 4);
  CHECK(alpha["results"][0]["resources"][0]["name"] == "web");
  CHECK(alpha["results"][0]["properties"]["pods"] == "3");

  // Nothing changed: nothing is written.
  const int before = cluster.writes();
  r = cluster.audit({"--write-reports"});
  REQUIRE(r.code == 1);
  CHECK(cluster.writes() == before);
  CHECK(r.err.find("0 created, 0 updated, 0 deleted, 2 unchanged") != std::string::npos);

  if (std::system("kubectl version --client >/dev/null 2>&1") != 0) {
    WARN("skipped: kubectl not found (reading the reports back)");
  } else {
    const std::string kubectl = "kubectl --kubeconfig " + cluster.kubeconfig + " get policyreports -A";
    const std::string out_file = cluster.dir.file("kubectl.out");
    REQUIRE(std::system((kubectl + " > " + out_file + " 2>&1").c_str()) == 0);
    const std::string table = cli_test::slurp(out_file);
    INFO(table);
    CHECK(table.find("team-alpha") != std::string::npos);
    CHECK(table.find("beta-dev") != std::string::npos);
    CHECK(table.find("gpu-admission") != std::string::npos);
    REQUIRE(std::system((kubectl + " -o json > " + out_file + " 2>&1").c_str()) == 0);
    const json items = json::parse(cli_test::slurp(out_file))["items"];
    CHECK(items.size() == 2);
  }

  // beta-dev fixes its job: the workers are replaced by unprivileged ones. Its report goes.
  cluster.api.put("pytorchjobs",
                  {{"metadata", meta("beta-dev", "llama", "pt-1")},
                   {"spec", {{"pytorchReplicaSpecs", {{"Worker", {{"replicas", 2}, {"template", {{"spec", pod_spec(false)}}}}}}}}}});
  for (int i = 0; i < 2; ++i)
    cluster.api.put("pods", {{"metadata", meta("beta-dev", "llama-worker-" + std::to_string(i), "pt-w" + std::to_string(i),
                                               owner("kubeflow.org/v1", "PyTorchJob", "llama", "pt-1"))},
                             {"spec", pod_spec(false)}});
  // team-alpha scales its Deployment's old pods down to one: its report changes.
  cluster.api.remove("pods", "team-alpha", "web-1-0");
  r = cluster.audit({"--write-reports", "-o", "json"});
  REQUIRE(r.code == 1);
  CHECK(cluster.api.counters.deletes == 1);
  CHECK(cluster.api.counters.updates == 1);
  CHECK(cluster.api.stored("policyreports", "beta-dev", "gpu-admission").is_null());
  alpha = cluster.api.stored("policyreports", "team-alpha", "gpu-admission");
  CHECK(alpha["results"][0]["properties"]["pods"] == "2");
  const json out = json::parse(r.out);
  REQUIRE(out["objects"].size() == 1);
  CHECK(out["objects"][0]["name"] == "web");
}

TEST_CASE("audit cluster: without the PolicyReport CRD, --write-reports says what to do", "[audit][cluster]") {
  Cluster cluster;
  cluster.api.serve_policy_reports = false;
  const CliRun r = cluster.audit({"--write-reports", "--report-api", "wgpolicyk8s.io/v1alpha2"});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("PolicyReport CRD") != std::string::npos);
  CHECK(r.err.find("without --write-reports") != std::string::npos);
  CHECK(cluster.writes() == 0);
  // Without --write-reports the same cluster audits fine.
  CHECK(cluster.audit({}).code == 1);
}

TEST_CASE("audit cluster: --namespace limits the audit and the reports it touches", "[audit][cluster]") {
  Cluster cluster;
  const CliRun r = cluster.audit({"-o", "json", "-n", "beta-dev,sandbox"});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const json out = json::parse(r.out);
  CHECK(out["judged"]["Pod"] == 3);
  REQUIRE(out["objects"].size() == 1);
  CHECK(out["objects"][0]["namespace"] == "beta-dev");
  CHECK(cluster.audit({"-n", "nowhere"}).code == 2);
}

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  auto res = client.Get("/metrics");
  return res && res->status == 200 ? res->body : "";
}

}  // namespace

TEST_CASE("audit cluster: --interval serves the last run's metrics and drops fixed series", "[audit][cluster]") {
  Cluster cluster;
  const int port = free_port();
  const std::string log = cluster.dir.file("audit.log");
  const pid_t pid = webhook_test::spawn_binary({"audit", "-p", kPolicy, "--kubeconfig", cluster.kubeconfig, "--interval",
                                               "1s", "--metrics-listen", "127.0.0.1:" + std::to_string(port)},
                                              log);
  REQUIRE(pid > 0);
  const std::string beta_series = R"(gpu_admission_audit_violations{action="deny",rule="privileged",tenant="beta"} 1)";
  std::string metrics;
  CHECK(eventually([&] { return (metrics = scrape(port)).find(beta_series) != std::string::npos; }, 20s));
  INFO(metrics << cli_test::slurp(log));
  CHECK(metrics.find("gpu_admission_audit_last_run_success 1") != std::string::npos);
  CHECK(metrics.find(R"(gpu_admission_audit_objects{kind="Pod"} 10)") != std::string::npos);
  CHECK(metrics.find("gpu_admission_audit_duration_seconds") != std::string::npos);
  CHECK(metrics.find("gpu_admission_build_info{") != std::string::npos);

  for (int i = 0; i < 2; ++i) cluster.api.remove("pods", "beta-dev", "llama-worker-" + std::to_string(i));
  cluster.api.remove("pytorchjobs", "beta-dev", "llama");
  CHECK(eventually([&] {
    metrics = scrape(port);
    return !metrics.empty() && metrics.find(R"(tenant="beta")") == std::string::npos;
  }, 20s));

  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string lines = cli_test::slurp(log);
  CHECK(lines.find("audit: run complete") != std::string::npos);
}
