// The real `serve` binary with cluster state: `--cluster required --kubeconfig FILE` against the
// fake API server (readyz after the first lists, pods judged with their templates' GPU counts,
// the GET fallback, cluster metrics, serving on after the API server stops), PodGroups from the
// cluster (a pod of a group judged with the group's claims, a group judged on its own), and the
// start-up errors of --cluster.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <sstream>

#include "cluster_test_support.h"
#include "serve_child.h"
#include "webhook/server/server_test_support.h"

namespace {

using namespace cluster_test;

std::string pod_review(const std::string& uid, const std::string& ns, const std::string& template_name) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", "p-" + uid}, {"namespace", ns}}},
              {"spec", {{"resourceClaims", Json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", template_name}}})},
                        {"containers", Json::array({{{"name", "c"}, {"image", "cuda"},
                                                     {"resources", {{"claims", Json::array({{{"name", "gpus"}}})}}}}})}}}};
  Json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", {{"uid", uid}, {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                              {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                              {"namespace", ns}, {"operation", "CREATE"}, {"userInfo", {{"username", "alice"}}},
                              {"object", pod}}}};
  return review.dump();
}

// A review of `object` (kind `kind` of `group`/`version`, resource `resource`) created in `ns`.
std::string create_review(const std::string& uid, const std::string& ns, const Json& object, const std::string& group,
                          const std::string& version, const std::string& kind, const std::string& resource) {
  Json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", {{"uid", uid}, {"kind", {{"group", group}, {"version", version}, {"kind", kind}}},
                              {"resource", {{"group", group}, {"version", version}, {"resource", resource}}},
                              {"namespace", ns}, {"operation", "CREATE"}, {"userInfo", {{"username", "alice"}}},
                              {"object", object}}}};
  return review.dump();
}

Json pod_group_object(const std::string& ns, const std::string& name, const std::string& template_name) {
  return {{"apiVersion", "scheduling.k8s.io/v1alpha2"}, {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"schedulingPolicy", {{"basic", Json::object()}}},
                    {"resourceClaims", Json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", template_name}}})}}}};
}

}  // namespace

TEST_CASE("cluster serve binary: --cluster required --kubeconfig, readyz, claims from the cluster", "[cluster][binary]") {
  FakeApiServer api;
  api.put("namespaces", namespace_object("research", {{"team", "research"}}));
  api.put("resourceclaimtemplates", claim_object(true, "research", "sixteen", 16));
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));

  Child serve({"serve", "--cluster", "required", "--kubeconfig", dir.file("kubeconfig"), "--listen", "127.0.0.1:0",
               "--metrics-listen", "127.0.0.1:0", "--grace-period", "1"},
              dir.file("stderr.log"));
  const Json serving = serve.log_line("gpu-admission serving");
  INFO(serve.log());
  REQUIRE(serving.is_object());
  const int port = serving["port"];
  const int metrics_port = serving["metrics_port"];
  CHECK(serve.log().find("cluster state on") != std::string::npos);

  server_test::TlsClient client;
  REQUIRE(client.connect(port));
  CHECK(eventually([&] { return client.request("GET", "/readyz").status == 200; }));
  CHECK(serve.log().find("cluster state synced") != std::string::npos);

  // A template from the cache: 16 GPUs, over the default cap of 8.
  auto response = client.request("POST", "/validate", pod_review("u1", "research", "sixteen"));
  CHECK(response.status == 200);
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("gpu-cap") != std::string::npos);
  CHECK(response.body.find("16") != std::string::npos);
  // A template the watch has not delivered: fetched with one GET.
  api.put("resourceclaimtemplates", claim_object(true, "research", "late", 12), false);
  response = client.request("POST", "/validate", pod_review("u2", "research", "late"));
  CHECK(response.body.find("12") != std::string::npos);
  CHECK(api.counters.gets == 1);
  // No such template: not found, never a silent zero.
  response = client.request("POST", "/validate", pod_review("u3", "research", "missing"));
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("not found") != std::string::npos);

  const std::string metrics = scrape(metrics_port);
  CHECK(metrics.find("gpu_admission_cluster_synced{resource=\"namespaces\"} 1") != std::string::npos);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"fetched\"} 1") != std::string::npos);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"absent\"} 0") == std::string::npos);
  CHECK(api.counters.gets == 2);  // one GET per miss, however often the evaluator asks

  // The API server goes away: still ready, still judging with the last known state.
  api.stop();
  std::this_thread::sleep_for(300ms);
  CHECK(client.request("GET", "/readyz").status == 200);
  response = client.request("POST", "/validate", pod_review("u4", "research", "sixteen"));
  CHECK(response.body.find("16") != std::string::npos);
  CHECK(serve.log_line("cluster watch failed").is_object());
}

TEST_CASE("cluster serve binary: PodGroups from the cluster", "[cluster][binary][podgroup]") {
  FakeApiServer api;
  api.add_resource({"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false});
  api.add_resource({"scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup"});
  api.put("namespaces", namespace_object("research", {{"team", "research"}}));
  api.put("resourceclaimtemplates", claim_object(true, "research", "sixteen", 16));
  api.put("podgroups", pod_group_object("research", "trainers", "sixteen"));
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));
  Child serve({"serve", "--cluster", "required", "--kubeconfig", dir.file("kubeconfig"), "--listen", "127.0.0.1:0",
               "--metrics-listen", "127.0.0.1:0", "--grace-period", "1"},
              dir.file("stderr.log"));
  const Json serving = serve.log_line("gpu-admission serving");
  INFO(serve.log());
  REQUIRE(serving.is_object());
  server_test::TlsClient client;
  REQUIRE(client.connect(serving["port"]));
  CHECK(eventually([&] { return client.request("GET", "/readyz").status == 200; }));
  CHECK(serve.log().find("PodGroups in scheduling.k8s.io/v1alpha2") != std::string::npos);

  // A pod of the group asks for nothing itself: the group's 16 GPUs are over the cap.
  const Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"},
                    {"metadata", {{"name", "worker-0"}, {"namespace", "research"}}},
                    {"spec", {{"schedulingGroup", {{"podGroupName", "trainers"}}},
                              {"containers", Json::array({{{"name", "c"}, {"image", "cuda"}}})}}}};
  auto response = client.request("POST", "/validate", create_review("u1", "research", pod, "", "v1", "Pod", "pods"));
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("of PodGroup trainers") != std::string::npos);
  CHECK(api.counters.gets == 0);  // from the watch's cache
  // A pod of a group that does not exist: refused, saying to create the group first.
  Json stray = pod;
  stray["spec"]["schedulingGroup"]["podGroupName"] = "not-yet";
  response = client.request("POST", "/validate", create_review("u2", "research", stray, "", "v1", "Pod", "pods"));
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("create the PodGroup before its pods") != std::string::npos);
  // The group itself, on CREATE.
  response = client.request("POST", "/validate",
                            create_review("u3", "research", pod_group_object("research", "more", "sixteen"),
                                          "scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups"));
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("gpu-cap") != std::string::npos);
}

TEST_CASE("cluster serve binary: --cluster start-up errors exit 2 with a clear message", "[cluster][binary]") {
  TempDir dir;
  {
    Child serve({"serve", "--cluster", "sometimes"}, dir.file("a.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("--cluster must be auto, off or required") != std::string::npos);
  }
  {
    Child serve({"serve", "--cluster", "required", "--kubeconfig", dir.file("missing"), "--listen", "127.0.0.1:0",
                 "--metrics-listen", ""},
                dir.file("b.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("cluster state: kubeconfig " + dir.file("missing")) != std::string::npos);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) {
    Child serve({"serve", "--cluster", "required", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, dir.file("c.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("--cluster required, but there is no cluster configuration") != std::string::npos);
  }
}
