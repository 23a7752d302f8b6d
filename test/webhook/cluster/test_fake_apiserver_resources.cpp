// The fake API server as the audit command reads it: discovery of every served group (custom
// resources added and removed), paged lists of many objects cluster-wide and per namespace in
// etcd's order (remainingItemCount as objects come and go), what it served (/fake/counters),
// label and field selectors, expired continue tokens, watches of one namespace, and the real
// kubectl reading pods, workloads, custom resources and PolicyReports back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "webhook/cluster/kube_client.h"

#include "fake_apiserver_client.h"

using namespace cluster_test;

TEST_CASE("fake API server: discovery names every served group, version and resource", "[cluster][fake]") {
  FakeApiServer server;
  server.add_resource(kPyTorchJobs);
  REQUIRE(server.start());
  Client client(server);

  const auto versions = client.send("GET", "/api");
  CHECK(versions.body["kind"] == "APIVersions");
  CHECK(versions.body["versions"] == Json::array({"v1"}));
  CHECK(versions.content_type == "application/json");
  const auto core = client.send("GET", "/api/v1");
  REQUIRE(core.status == 200);
  const auto& core_resources = core.body["resources"];
  const auto pods =
      std::find_if(core_resources.begin(), core_resources.end(), [](const Json& r) { return r["name"] == "pods"; });
  REQUIRE(pods != core_resources.end());
  CHECK((*pods)["kind"] == "Pod");
  CHECK((*pods)["singularName"] == "pod");
  CHECK((*pods)["namespaced"] == true);
  CHECK((*pods)["shortNames"] == Json::array({"po"}));
  CHECK(std::count((*pods)["verbs"].begin(), (*pods)["verbs"].end(), "list") == 1);
  std::set<std::string> core_names;
  for (const Json& r : core_resources) core_names.insert(r["name"]);
  CHECK(core_names == std::set<std::string>{"namespaces", "pods", "replicationcontrollers", "podtemplates", "secrets"});

  const auto groups = client.send("GET", "/apis");
  REQUIRE(groups.status == 200);
  std::map<std::string, Json> by_name;
  for (const Json& g : groups.body["groups"]) by_name[g["name"]] = g;
  for (const char* group : {"apps", "batch", "resource.k8s.io", "wgpolicyk8s.io", "kubeflow.org", "admissionregistration.k8s.io"})
    CHECK(by_name.count(group) == 1);
  CHECK(by_name["resource.k8s.io"]["preferredVersion"]["version"] == "v1");
  CHECK(by_name["resource.k8s.io"]["versions"].size() == 3);
  CHECK(by_name["kubeflow.org"]["preferredVersion"]["groupVersion"] == "kubeflow.org/v1");

  const auto apps = client.send("GET", "/apis/apps");
  CHECK(apps.body["kind"] == "APIGroup");
  CHECK(apps.body["preferredVersion"]["groupVersion"] == "apps/v1");
  const auto apps_v1 = client.send("GET", "/apis/apps/v1");
  CHECK(apps_v1.body["groupVersion"] == "apps/v1");
  CHECK(apps_v1.body["resources"].size() == 4);
  const auto reports = client.send("GET", "/apis/wgpolicyk8s.io/v1alpha2");
  REQUIRE(reports.status == 200);
  CHECK(reports.body["resources"][0]["name"] == "policyreports");
  CHECK(reports.body["resources"][0]["shortNames"] == Json::array({"polr"}));
  const auto jobs = client.send("GET", "/apis/kubeflow.org/v1");
  CHECK(jobs.body["resources"][0]["kind"] == "PyTorchJob");
  CHECK(jobs.body["resources"][0]["namespaced"] == true);

  // A CRD uninstalled: its group is gone from discovery, and everything under it is 404.
  CHECK(server.remove_resource("pytorchjobs"));
  for (const char* path : {"/apis/kubeflow.org", "/apis/kubeflow.org/v1", "/apis/kubeflow.org/v1/pytorchjobs"}) {
    const auto gone = client.send("GET", path);
    INFO(path);
    CHECK(gone.status == 404);
    CHECK(gone.body["kind"] == "Status");
    CHECK(gone.body["reason"] == "NotFound");
  }
  CHECK(client.send("GET", "/apis").body.dump().find("kubeflow.org") == std::string::npos);
  CHECK_FALSE(server.remove_resource("pytorchjobs"));
  CHECK_FALSE(server.put("pytorchjobs", pod("team-a", "x")));

  // Unknown versions and paths are 404 with a Status, and every path wants the token.
  CHECK(client.send("GET", "/api/v2").status == 404);
  CHECK(client.send("GET", "/apis/apps/v2").status == 404);
  CHECK(client.send("GET", "/apis/apps/v1/deployments/x/y/z").body["reason"] == "NotFound");
  client.token = "wrong";
  CHECK(client.send("GET", "/apis").status == 401);
  CHECK(client.send("GET", "/api/v1/pods").status == 401);
}

TEST_CASE("fake API server: resource names, plain or with their group", "[cluster][fake]") {
  FakeApiServer server;
  CHECK(server.put("deployments", pod("team-a", "web")));
  CHECK(server.stored("deployments.apps", "team-a", "web")["kind"] == "Deployment");
  CHECK(server.stored("deployments", "team-a", "web")["apiVersion"] == "apps/v1");
  CHECK(server.stored("resourceclaims", "team-a", "web").is_null());
  // A plural two groups serve needs its group.
  server.add_resource({"batch.volcano.sh", "v1alpha1", "jobs", "Job"});
  CHECK_FALSE(server.put("jobs", pod("team-a", "j")));
  CHECK(server.put("jobs.batch", pod("team-a", "j")));
  CHECK(server.put("jobs.batch.volcano.sh", pod("team-a", "j")));
  CHECK(server.stored("jobs.batch.volcano.sh", "team-a", "j")["apiVersion"] == "batch.volcano.sh/v1alpha1");
  CHECK(server.stored("jobs.batch", "team-a", "j")["apiVersion"] == "batch/v1");
  // The server fills what it owns.
  const Json stored = server.stored("jobs.batch", "team-a", "j");
  CHECK_FALSE(stored["metadata"].value("uid", "").empty());
  CHECK_FALSE(stored["metadata"].value("creationTimestamp", "").empty());
  CHECK_FALSE(stored["metadata"].value("resourceVersion", "").empty());
}

TEST_CASE("fake API server: 2,500 pods page by page in etcd's order, cluster-wide and per namespace",
          "[cluster][fake]") {
  FakeApiServer server;
  // Put in a shuffled order; etcd lists by key, namespace/name as bytes (team-a-x/ before team-a/).
  const std::vector<std::string> namespaces = {"team-a", "team-a-x", "default", "team-b", "z"};
  std::vector<std::string> expected, in_team_a;
  for (int i = 0; i < 2500; ++i) {
    const std::string ns = namespaces[static_cast<size_t>(i) % namespaces.size()];
    expected.push_back(ns + "/pod-" + std::to_string(i));
    if (ns == "team-a") in_team_a.push_back(expected.back());
  }
  std::vector<std::string> order = expected;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (const std::string& key : order) {
    const size_t slash = key.find('/');
    REQUIRE(server.put("pods", pod(key.substr(0, slash), key.substr(slash + 1))));
  }
  std::sort(expected.begin(), expected.end());
  std::sort(in_team_a.begin(), in_team_a.end());
  REQUIRE(server.start());
  Client client(server);

  const Listed thousands = list_all(client, "/api/v1/pods", 1000);
  CHECK(thousands.pages == 3);
  CHECK(thousands.keys == expected);
  CHECK_FALSE(thousands.typed_items);
  const Listed sevens = list_all(client, "/api/v1/pods", 7);
  CHECK(sevens.pages == 358);
  CHECK(sevens.keys == expected);
  CHECK(server.list_pages_of("pods") == 3 + 358);
  CHECK(server.lists_of("pods") == 2);

  const Listed team_a = list_all(client, "/api/v1/namespaces/team-a/pods", 7);
  CHECK(team_a.keys == in_team_a);
  CHECK(team_a.pages == 72);  // 500 pods
  CHECK(list_all(client, "/api/v1/namespaces/nobody/pods", 7).keys.empty());

  // A page says how many are left when nothing filters it; a limit past the cap is capped.
  const auto first = client.send("GET", "/api/v1/pods?limit=100");
  CHECK(first.body["metadata"]["remainingItemCount"] == 2400);
  CHECK(first.body["kind"] == "PodList");
  CHECK(first.body["apiVersion"] == "v1");
  CHECK(client.send("GET", "/api/v1/pods?limit=5000").body["items"].size() == 1000);
  CHECK(client.send("GET", "/api/v1/pods?limit=ten").status == 400);
}

TEST_CASE("fake API server: remainingItemCount per namespace as objects come and go; GET /fake/counters",
          "[cluster][fake]") {
  FakeApiServer server;
  // Neighbours on both sides of team-a's keys: team-a-x/ sorts before team-a/, team-a0/ after.
  for (const char* ns : {"team-a", "team-a-x", "team-a0", "team-b"})
    for (int i = 0; i < 10; ++i) REQUIRE(server.put("pods", pod(ns, "pod-" + std::to_string(i))));
  REQUIRE(server.start());
  Client client(server);
  const auto remaining = [&](const std::string& path) {
    const auto answer = client.send("GET", path);
    REQUIRE(answer.status == 200);
    return answer.body["metadata"].value("remainingItemCount", -1);
  };
  CHECK(remaining("/api/v1/namespaces/team-a/pods?limit=3") == 7);
  CHECK(remaining("/api/v1/pods?limit=3") == 37);
  // An object put as text and removed ones count as the store holds them now.
  REQUIRE(server.put_raw("pods", "team-a", "raw", R"({"metadata":{"name":"raw","namespace":"team-a"}})"));
  CHECK(remaining("/api/v1/namespaces/team-a/pods?limit=3") == 8);
  server.remove("pods", "team-a", "pod-0");
  server.remove("pods", "team-b", "pod-0");
  CHECK(remaining("/api/v1/namespaces/team-a/pods?limit=3") == 7);
  CHECK(remaining("/api/v1/pods?limit=3") == 36);
  const auto whole = client.send("GET", "/api/v1/namespaces/team-a/pods?limit=10");
  CHECK(whole.body["items"].size() == 10);
  CHECK_FALSE(whole.body["metadata"].contains("remainingItemCount"));
  CHECK_FALSE(whole.body["metadata"].contains("continue"));

  // What it served: 6 lists of one page each, 25 items; the counters' own request counts too.
  const auto counted = client.send("GET", "/fake/counters");
  REQUIRE(counted.status == 200);
  CHECK(counted.body["requests"] == 7);
  CHECK(counted.body["lists"] == 6);
  CHECK(counted.body["listPages"] == 6);
  CHECK(counted.body["items"] == 25);
  CHECK(counted.body["bytes"].get<long long>() > 25 * 50);
  CHECK(counted.body["unauthorized"] == 0);
  client.token = "wrong";
  CHECK(client.send("GET", "/fake/counters").status == 401);
  CHECK(server.counters.unauthorized == 1);
}

TEST_CASE("fake API server: workloads and custom resources list like pods", "[cluster][fake]") {
  FakeApiServer server;
  server.add_resource(kPyTorchJobs);
  server.add_resource({"ray.io", "v1", "rayjobs", "RayJob"});
  for (int i = 0; i < 30; ++i) {
    server.put("deployments", pod(i % 2 ? "team-a" : "team-b", "web-" + std::to_string(i)));
    server.put("pytorchjobs.kubeflow.org", pod("team-a", "train-" + std::to_string(i)));
  }
  server.put("rayjobs", pod("team-c", "ray"));
  REQUIRE(server.start());
  Client client(server);
  CHECK(list_all(client, "/apis/apps/v1/deployments", 7).keys.size() == 30);
  CHECK(list_all(client, "/apis/apps/v1/namespaces/team-a/deployments", 4).keys.size() == 15);
  const Listed jobs = list_all(client, "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs", 8);
  CHECK(jobs.keys.size() == 30);
  CHECK(jobs.pages == 4);
  CHECK(server.list_pages_of("pytorchjobs") == 4);
  CHECK(server.list_pages_of("deployments.apps") > 0);
  const auto ray = client.send("GET", "/apis/ray.io/v1/rayjobs");
  REQUIRE(ray.body["items"].size() == 1);
  CHECK(ray.body["kind"] == "RayJobList");
  const auto one = client.send("GET", "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs/train-3");
  CHECK(one.status == 200);
  CHECK(one.body["kind"] == "PyTorchJob");
  CHECK(client.send("GET", "/apis/kubeflow.org/v1/namespaces/team-b/pytorchjobs/train-3").body["reason"] == "NotFound");
  // Only the writable resources take writes.
  CHECK(client.send("POST", "/api/v1/namespaces/team-a/pods", pod("team-a", "new")).status == 405);
  CHECK(client.send("DELETE", "/apis/apps/v1/namespaces/team-a/deployments/web-1").status == 405);
}

TEST_CASE("fake API server: label and field selectors, also across pages", "[cluster][fake]") {
  FakeApiServer server;
  for (int i = 0; i < 40; ++i)
    server.put("pods", pod("team-" + std::to_string(i % 2), "p-" + std::to_string(i),
                           {{"app", i % 4 == 0 ? "train" : "serve"}, {"tier", std::to_string(i % 3)}}));
  server.put("pods", pod("team-0", "bare"));
  REQUIRE(server.start());
  Client client(server);
  const auto count = [&](const std::string& selector, int limit = 500) {
    return list_all(client, "/api/v1/pods?labelSelector=" + escaped(selector), limit).keys.size();
  };
  CHECK(count("app=train") == 10);
  CHECK(count("app==train,tier=0") == 4);   // i % 12 == 0
  CHECK(count("app!=train") == 31);         // the bare pod has no app label
  CHECK(count("app") == 40);
  CHECK(count("!app") == 1);
  CHECK(count("tier in (0,1)") == 27);
  CHECK(count("tier notin (0, 1),app=serve") == 10);
  CHECK(count("app=train", 3) == 10);  // the pages follow each other past the filtered-out items
  CHECK(list_all(client, "/api/v1/namespaces/team-0/pods?labelSelector=app%3Dtrain", 3).keys.size() == 10);
  CHECK(list_all(client, "/api/v1/pods?fieldSelector=metadata.namespace%3Dteam-1", 7).keys.size() == 20);
  CHECK(list_all(client, "/api/v1/pods?fieldSelector=metadata.name%21%3Dbare", 7).keys.size() == 40);
  for (const char* bad : {"app=(x", "=x", "tier in 0", "a b"}) {
    INFO(bad);
    const auto refused = client.send("GET", "/api/v1/pods?labelSelector=" + escaped(bad));
    CHECK(refused.status == 400);
    CHECK(refused.body["reason"] == "BadRequest");
  }
  CHECK(client.send("GET", "/api/v1/pods?fieldSelector=spec.image%3Dx").status == 400);
  CHECK(client.send("GET", "/api/v1/pods?fieldSelector=status.phase%3DRunning").status == 200);
}

TEST_CASE("fake API server: an expired continue token answers 410 Gone", "[cluster][fake]") {
  FakeApiServer server;
  for (int i = 0; i < 20; ++i) server.put("pods", pod("team-a", "p-" + std::to_string(i)));
  REQUIRE(server.start());
  Client client(server);
  const auto first = client.send("GET", "/api/v1/pods?limit=5");
  const std::string token = first.body["metadata"].value("continue", "");
  REQUIRE_FALSE(token.empty());
  CHECK(client.send("GET", "/api/v1/pods?limit=5&continue=" + escaped(token)).status == 200);

  server.expire_continue_tokens();
  const auto gone = client.send("GET", "/api/v1/pods?limit=5&continue=" + escaped(token));
  CHECK(gone.status == 410);
  CHECK(gone.body["kind"] == "Status");
  CHECK(gone.body["reason"] == "Expired");
  CHECK(gone.body["code"] == 410);
  // A new list starts over and pages through.
  CHECK(list_all(client, "/api/v1/pods", 5).keys.size() == 20);
  CHECK(client.send("GET", "/api/v1/pods?limit=5&continue=garbage").status == 400);
}

TEST_CASE("fake API server: a watch of one namespace sees that namespace's events only", "[cluster][fake]") {
  FakeApiServer server;
  server.add_resource(kPyTorchJobs);
  server.put("pytorchjobs", pod("team-a", "a"));
  server.put("pytorchjobs", pod("team-b", "b"));
  server.put("pytorchjobs", pod("team-a-x", "x"));
  server.put("pytorchjobs", pod("team-a", "c"));
  server.remove("pytorchjobs", "team-a", "a");
  REQUIRE(server.start());
  cl::KubeClient client(config_for(server));
  std::string error;
  REQUIRE(client.init(error));
  std::string stream;
  const auto result = client.stream(
      "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs?watch=1&resourceVersion=0&timeoutSeconds=1", 5s,
      [&](const char* data, size_t size) {
        stream.append(data, size);
        return true;
      },
      nullptr);
  INFO(result.describe() << "\n" << stream);
  CHECK(result.status == 200);
  std::vector<std::string> events;
  std::istringstream lines(stream);
  for (std::string line; std::getline(lines, line);) {
    const Json event = Json::parse(line, nullptr, false);
    REQUIRE(event.is_object());
    if (event["type"] != "BOOKMARK")
      events.push_back(event["type"].get<std::string>() + " " + event["object"]["metadata"]["name"].get<std::string>());
  }
  CHECK(events == std::vector<std::string>{"ADDED a", "ADDED c", "DELETED a"});
  CHECK(server.counters.watches == 1);
  // Watches are not filtered: a selector is refused rather than ignored.
  Client plain(server);
  CHECK(plain.send("GET", "/apis/kubeflow.org/v1/pytorchjobs?watch=1&labelSelector=a%3Db").status == 400);
}

namespace {

struct Kubectl {
  int status = -1;
  std::string output;  // stdout
  std::string log;     // stderr
};

bool kubectl_installed() { return std::system("kubectl version --client >/dev/null 2>&1") == 0; }

// Whether a line of `table` holds these cells, in this order.
bool has_row(const std::string& table, const std::vector<std::string>& cells) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    size_t at = 0;
    for (const std::string& cell : cells) at = at == std::string::npos ? at : line.find(cell, at);
    if (at != std::string::npos) return true;
  }
  return false;
}

// kubectl against `server` with its own HOME (a fresh discovery cache), `arguments` appended.
Kubectl kubectl(const TempDir& dir, const std::string& arguments) {
  const std::string command = "HOME=" + dir.path.string() + " kubectl --kubeconfig " + dir.file("kubeconfig") +
                              " --request-timeout=5s " + arguments + " > " + dir.file("out") + " 2> " + dir.file("err");
  Kubectl result;
  result.status = std::system(command.c_str());
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  result.output = read(dir.file("out"));
  result.log = read(dir.file("err"));
  return result;
}

}  // namespace

TEST_CASE("fake API server: kubectl lists pods, workloads, custom resources and PolicyReports",
          "[cluster][fake][kubectl]") {
  if (!kubectl_installed()) {
    WARN("skipped: kubectl not found");
    return;
  }
  FakeApiServer server;
  server.add_resource(kPyTorchJobs);
  server.put("namespaces", namespace_object("team-a"));
  server.put("namespaces", namespace_object("team-b"));
  server.put("pods", pod("team-a", "train-0"));
  server.put("pods", pod("team-b", "serve-0"));
  server.put("deployments", pod("team-a", "web"));
  server.put("deployments", pod("team-b", "other-web"));
  server.put("pytorchjobs", pod("team-b", "bert"));
  Json built = policy_report_object("team-a");
  server.put("policyreports", built);
  built["metadata"]["namespace"] = "team-b";
  server.put("policyreports", built);
  REQUIRE(server.start());
  TempDir dir;
  server.write_kubeconfig(dir.file("kubeconfig"));

  // The table view: kubectl asks for a Table, gets a plain list, and prints it anyway.
  auto got = kubectl(dir, "get policyreports -A -v=8");
  INFO(got.output << got.log);
  CHECK(got.status == 0);
  CHECK(got.log.find("as=Table") != std::string::npos);
  CHECK(has_row(got.output, {"NAMESPACE", "NAME"}));
  CHECK(has_row(got.output, {"team-a", "gpu-admission"}));
  CHECK(has_row(got.output, {"team-b", "gpu-admission"}));
  got = kubectl(dir, "get polr -n team-b");
  CHECK(has_row(got.output, {"gpu-admission"}));
  CHECK_FALSE(has_row(got.output, {"team-a"}));

  got = kubectl(dir, "get policyreports -A -o json");
  CHECK(got.status == 0);
  const Json listed = Json::parse(got.output, nullptr, false);
  REQUIRE(listed.is_object());
  REQUIRE(listed["items"].size() == 2);
  CHECK(listed["items"][0]["kind"] == "PolicyReport");
  CHECK(listed["items"][0]["metadata"]["namespace"] == "team-a");
  CHECK(listed["items"][1]["metadata"]["namespace"] == "team-b");
  CHECK(listed["items"][0]["results"][0]["rule"] == "gpu-cap");

  got = kubectl(dir, "get pods -A");
  CHECK(got.status == 0);
  CHECK(has_row(got.output, {"team-a", "train-0"}));
  CHECK(has_row(got.output, {"team-b", "serve-0"}));
  got = kubectl(dir, "get deployments.apps -n team-a");
  CHECK(got.status == 0);
  CHECK(has_row(got.output, {"web"}));
  CHECK_FALSE(has_row(got.output, {"other-web"}));
  got = kubectl(dir, "get pytorchjobs -A");
  CHECK(got.status == 0);
  CHECK(has_row(got.output, {"team-b", "bert"}));

  // A CRD that is not installed: kubectl says the server does not have the resource.
  server.serve_policy_reports = false;
  TempDir fresh;
  server.write_kubeconfig(fresh.file("kubeconfig"));
  got = kubectl(fresh, "get policyreports -A");
  CHECK(got.status != 0);
  CHECK(got.log.find("the server doesn't have a resource type \"policyreports\"") != std::string::npos);
}
