// End to end, as a tenant and the scheduler drive it: the real `serve` binary with cluster state
// from the fake API server. A pod is admitted with its claim; the tenant swaps the claim (or
// creates it only after a pod that the webhook never saw); the stand-in scheduler sends the
// claim's status UPDATE that allocates devices for the pod, which is refused naming the pod and
// the rules, while the legitimate flow allocates. Also: a namespace created a moment before its
// pod is fetched, and a review waits at most the lookup timeout in all on a slow API server.
// Commit points end to end: a tenant's gated pod whose claims were swapped for GPUs, re-pointed at
// another tenant's pool and ungated, is refused at every step and at every claim's allocation;
// a namespace whose labels cannot be read has an unknown tenant.
#include <catch2/catch.hpp>

#include <chrono>

#include "cluster_test_support.h"
#include "serve_child.h"
#include "webhook/dra_test_devices.h"
#include "webhook/server/server_test_support.h"

namespace {

using namespace cluster_test;

// Tenant "ml" is chosen by namespace labels; its pool a100 is adversarial and cut with MIG.
constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: allocation}
spec:
  defaults:
    maxGpusPerPod: 2
    unmappedGpuPods: deny
    gpuTaints: []
  mutations: {hide-gpus: false}
  pools:
    - name: a100
      nodeSelector: {pool: a100}
      trust: adversarial
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
    - name: h100
      nodeSelector: {pool: h100}
      trust: cooperative
      gpuModel: H100-SXM5-80GB
      sharing: mps
  tenants:
    - name: ml
      namespaceSelector: {matchLabels: {team: ml}}
      pools: [a100]
      defaultPool: a100
    - name: other
      namespaces: [team-other]
      pools: [h100]
      defaultPool: h100
)";

Json devices_one_slice() { return dra_test::one_mig_slice(); }
Json devices_whole(int count) { return dra_test::whole_gpus(count); }
Json devices_mps() { return dra_test::mps_mig_slice(); }

Json claim(const std::string& name, const Json& devices) {
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-ml"}, {"uid", "uid-" + name}}},
          {"spec", {{"devices", devices}}}};
}

// The pod as /mutate leaves it: tenant labels, pinned to a100, using claim `claim_name`.
Json pod(const std::string& name, const std::string& claim_name) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-ml"}, {"uid", "uid-" + name},
                        {"labels", {{"gpu-admission.io/tenant", "ml"}}}}},
          {"spec", {{"nodeSelector", {{"pool", "a100"}}},
                    {"resourceClaims", Json::array({{{"name", "gpu"}, {"resourceClaimName", claim_name}}})},
                    {"containers", Json::array({{{"name", "train"}, {"image", "cuda"},
                                                 {"resources", {{"claims", Json::array({{{"name", "gpu"}}})}}}}})}}}};
}

Json review(const std::string& uid, const Json& kind, const std::string& resource, const Json& object,
            const std::string& operation, const std::string& username) {
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
          {"request", {{"uid", uid}, {"kind", kind},
                       {"resource", {{"group", kind["group"]}, {"version", kind["version"]}, {"resource", resource}}},
                       {"name", object["metadata"]["name"]}, {"namespace", "team-ml"}, {"operation", operation},
                       {"userInfo", {{"username", username}}}, {"object", object}}}};
}

const Json kPodKind = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
const Json kClaimKind = {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", "ResourceClaim"}};

// What the stand-in scheduler sends when it allocates `object` for `pod_name`.
std::string allocation_review(const std::string& uid, const Json& object, const std::string& pod_name) {
  Json allocated = object;
  allocated["status"] = {{"allocation", {{"devices", {{"results", Json::array()}}}}},
                         {"reservedFor", Json::array({{{"resource", "pods"}, {"name", pod_name}, {"uid", "uid-" + pod_name}}})}};
  Json r = review(uid, kClaimKind, "resourceclaims", allocated, "UPDATE", "system:kube-scheduler");
  r["request"]["subResource"] = "status";
  r["request"]["oldObject"] = object;
  return r.dump();
}

struct Serving {
  FakeApiServer api;
  TempDir dir;
  std::unique_ptr<Child> serve;
  server_test::TlsClient client;
  int metrics_port = 0;

  explicit Serving(const std::string& policy = kPolicy) {
    REQUIRE(api.start());
    api.write_kubeconfig(dir.file("kubeconfig"));
    write_text(dir.file("policy.yaml"), policy);
    serve = std::make_unique<Child>(
        std::vector<std::string>{"serve", "--policy", dir.file("policy.yaml"), "--cluster", "required", "--kubeconfig",
                                 dir.file("kubeconfig"), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                 "--grace-period", "1", "--log-level", "debug"},
        dir.file("stderr.log"));
    const Json serving = serve->log_line("gpu-admission serving");
    INFO(serve->log());
    REQUIRE(serving.is_object());
    metrics_port = serving["metrics_port"];
    REQUIRE(client.connect(serving["port"]));
    REQUIRE(eventually([&] { return client.request("GET", "/readyz").status == 200; }));
  }
  Json validate(const std::string& body) {
    auto response = client.request("POST", "/validate", body);
    REQUIRE(response.status == 200);
    return Json::parse(response.body)["response"];
  }
};

std::string message(const Json& response) { return response["status"].value("message", ""); }

}  // namespace

TEST_CASE("allocation end to end: the legitimate flow allocates, a swapped claim is refused at allocation",
          "[cluster][binary][allocation]") {
  Serving s;
  // The namespace was created a moment before the pod: not in the cache, fetched with one GET.
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}), false);
  s.api.put("resourceclaims", claim("c1", devices_one_slice()));
  const Json train = pod("train", "c1");
  Json admitted = s.validate(review("p1", kPodKind, "pods", train, "CREATE", "alice").dump());
  INFO(admitted.dump());
  REQUIRE(admitted["allowed"] == true);
  s.api.put("pods", train, false);  // stored as admitted

  // The scheduler allocates the claim the pod was admitted with.
  Json allowed = s.validate(allocation_review("a1", claim("c1", devices_one_slice()), "train"));
  INFO(allowed.dump());
  CHECK(allowed["allowed"] == true);
  CHECK(s.api.counters.pod_gets == 1);

  // The tenant deletes the claim and makes another of the same name before allocation.
  for (const Json& swapped : {devices_whole(4), devices_mps()}) {
    s.api.remove("resourceclaims", "team-ml", "c1");
    s.api.put("resourceclaims", claim("c1", swapped));
    Json refused = s.validate(allocation_review("a2", claim("c1", swapped), "train"));
    INFO(refused.dump());
    CHECK(refused["allowed"] == false);
    CHECK(refused["status"]["code"] == 403);
    CHECK(message(refused).find("pod team-ml/train: ") != std::string::npos);
    if (swapped == devices_mps()) CHECK(message(refused).find("[mps-adversarial]") != std::string::npos);
    else CHECK(message(refused).find("[gpu-cap]") != std::string::npos);
  }
  const Json denied_line = s.serve->log_line("\"denied\"");
  CHECK(denied_line.value("name", "") == "c1");
  CHECK(denied_line.value("kind", "") == "ResourceClaim");

  const std::string metrics = scrape(s.metrics_port);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"namespaces\",result=\"fetched\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"pods\",result=\"fetched\"} 3") != std::string::npos);
}

TEST_CASE("allocation end to end: a claim created after a pod the webhook never judged is refused at allocation",
          "[cluster][binary][allocation]") {
  Serving s;
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}));
  // The pod got in while the webhook was not asked (failurePolicy Ignore, webhook down); its
  // claim comes only now, asking for 8 whole GPUs.
  s.api.put("pods", pod("early", "later"), false);
  const Json later = claim("later", devices_whole(8));
  Json created = s.validate(review("c1", kClaimKind, "resourceclaims", later, "CREATE", "alice").dump());
  CHECK(created["allowed"] == false);  // the claim alone is over the cap...
  // ...and were it created anyway (the webhook down again), its allocation is refused.
  s.api.put("resourceclaims", later);
  Json refused = s.validate(allocation_review("a1", later, "early"));
  INFO(refused.dump());
  CHECK(refused["allowed"] == false);
  CHECK(message(refused).find("[gpu-cap] pod team-ml/early: ") != std::string::npos);
  CHECK(message(refused).find("[mig-profile] pod team-ml/early: ") != std::string::npos);
  // A pod that is gone, or another pod under the same name: refused, the scheduler retries.
  Json gone = s.validate(allocation_review("a2", claim("c9", devices_one_slice()), "nobody"));
  CHECK(gone["allowed"] == false);
  CHECK(message(gone).find("cannot judge pod team-ml/nobody: not found") != std::string::npos);
}

TEST_CASE("a review waits at most the lookup timeout on a slow API server, however many misses it has",
          "[cluster][binary][deadline]") {
  Serving s;
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}));
  // Only the claims are to miss: wait until the watched namespace is in serve's cache (at once on
  // a fast machine; an emulated or loaded one may still be applying the event when the review comes).
  REQUIRE(eventually([&] {
    return scrape(s.metrics_port).find("gpu_admission_cluster_objects{resource=\"namespaces\"} 1") != std::string::npos;
  }));
  s.api.get_delay_ms = 3000;  // every single-object GET answers after 3 s
  Json two = pod("slow", "missing-a");
  two["spec"]["resourceClaims"].push_back({{"name", "other"}, {"resourceClaimName", "missing-b"}});
  // The old object had one claim, also missing: the UPDATE adds an unresolved claim at
  // spec.resourceClaims[1] (refused), and three distinct misses share the one allowance.
  Json old_two = pod("slow", "missing-c");
  Json update = review("u1", kPodKind, "pods", two, "UPDATE", "alice");
  update["request"]["oldObject"] = old_two;
  const auto started = std::chrono::steady_clock::now();
  Json answer = s.validate(update.dump());
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(answer.dump());
  INFO(s.serve->log());
  INFO(scrape(s.metrics_port));
  CHECK(answer["allowed"] == false);  // unresolved claims fail closed
  CHECK(took < 1800ms);               // one allowance of 1 s for all its lookups, not 1 s each
}

namespace {

Json update_review(const std::string& uid, const Json& object, const Json& old_object, const std::string& username) {
  Json r = review(uid, kPodKind, "pods", object, "UPDATE", username);
  r["request"]["oldObject"] = old_object;
  return r;
}

// The tenant's pod as admitted: labelled, gated, two claims, pinned to `pool` ("" for none).
Json gated_pod(const std::string& pool) {
  Json p = pod("train", "c0");
  if (pool.empty()) p["spec"].erase("nodeSelector");
  else p["spec"]["nodeSelector"] = {{"pool", pool}};
  p["spec"]["schedulingGates"] = Json::array({{{"name", "example.com/queue"}}});
  p["spec"]["resourceClaims"].push_back({{"name", "second"}, {"resourceClaimName", "c1"}});
  p["spec"]["containers"][0]["resources"]["claims"].push_back({{"name", "second"}});
  return p;
}

Json ungated(Json p) {
  p["spec"].erase("schedulingGates");
  return p;
}

Json whole_gpu_with_mps() {
  Json devices = devices_whole(1);
  devices["config"] = devices_mps()["config"];
  devices["config"][0]["opaque"]["parameters"]["kind"] = "GpuConfig";
  return devices;
}

}  // namespace

TEST_CASE("commit points end to end: claims swapped under a gated pod, re-pointed and ungated, never start",
          "[cluster][binary][allocation][commit-point]") {
  Serving s;
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}));
  const Json nic = Json::parse(R"({"requests":[{"name":"nic","exactly":{"deviceClassName":"nic.example.com"}}]})");
  s.api.put("resourceclaims", claim("c0", nic));
  s.api.put("resourceclaims", claim("c1", nic));
  // Two NIC claims: not a GPU pod, so /mutate never pinned it.
  const Json admitted = gated_pod("");
  REQUIRE(eventually([&] {  // once serve's cache has the claims
    return s.validate(review("p1", kPodKind, "pods", admitted, "CREATE", "alice").dump())["allowed"] == true;
  }));
  Json answer;
  s.api.put("pods", admitted);
  // Deleted and made again as one whole GPU with MPS each (alone within the cap of 2).
  for (const char* name : {"c0", "c1"}) {
    s.api.remove("resourceclaims", "team-ml", name);
    s.api.put("resourceclaims", claim(name, whole_gpu_with_mps()));
  }
  REQUIRE(eventually([&] {  // serve's cache has the swapped claims
    const Json probe = s.validate(review("p2", kPodKind, "pods", gated_pod(""), "CREATE", "alice").dump());
    return probe["allowed"] == false;
  }));
  // Re-pointed at another tenant's MPS pool: refused, naming the pool.
  const Json repointed = gated_pod("h100");
  answer = s.validate(update_review("u1", repointed, admitted, "alice").dump());
  INFO(answer.dump());
  CHECK(answer["allowed"] == false);
  CHECK(message(answer).find("[tenant-pool] tenant \"ml\" may not use pool \"h100\"") != std::string::npos);
  // Ungated where it stands: refused, the claims counted as they now are.
  answer = s.validate(update_review("u2", ungated(admitted), admitted, "alice").dump());
  CHECK(answer["allowed"] == false);
  CHECK(message(answer).find("removes the pod's last scheduling gate") != std::string::npos);
  CHECK(message(answer).find("[tenant-pool]") != std::string::npos);
  // Had it started anyway (the webhook was down), neither claim's allocation goes through.
  s.api.put("pods", ungated(repointed));
  for (const char* name : {"c0", "c1"}) {
    answer = s.validate(allocation_review(std::string("a-") + name, claim(name, whole_gpu_with_mps()), "train"));
    INFO(name << ": " << answer.dump());
    CHECK(answer["allowed"] == false);
    CHECK(message(answer).find("[tenant-pool] pod team-ml/train: ") != std::string::npos);
  }
  const Json denied = s.serve->log_line("\"commitPoint\"");
  CHECK(denied.value("decision", "") == "denied");
}

TEST_CASE("commit points end to end: the legitimate flow is admitted, ungated and allocated",
          "[cluster][binary][allocation][commit-point]") {
  Serving s;
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}));
  s.api.put("resourceclaims", claim("c0", devices_one_slice()));
  s.api.put("resourceclaims", claim("c1", devices_one_slice()));
  const Json gated = gated_pod("a100");
  REQUIRE(eventually([&] {
    return s.validate(review("p1", kPodKind, "pods", gated, "CREATE", "alice").dump())["allowed"] == true;
  }));
  s.api.put("pods", gated);
  Json answer = s.validate(update_review("u1", ungated(gated), gated, "kueue").dump());
  INFO(answer.dump());
  CHECK(answer["allowed"] == true);
  s.api.put("pods", ungated(gated));
  for (const char* name : {"c0", "c1"})
    CHECK(s.validate(allocation_review(std::string("a-") + name, claim(name, devices_one_slice()), "train"))["allowed"] ==
          true);
  // Running with a finding it had from before (privileged, say, admitted while observing): a label
  // added later is not a commit point.
  Json running = ungated(gated);
  running["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  Json labelled = running;
  labelled["metadata"]["labels"]["example.com/owner"] = "alice";
  CHECK(s.validate(update_review("u2", labelled, running, "alice").dump())["allowed"] == true);
}

TEST_CASE("a namespace whose labels cannot be read has an unknown tenant: its GPU pods are refused",
          "[cluster][binary][deadline]") {
  std::string policy = kPolicy;
  policy.replace(policy.find("unmappedGpuPods: deny"), 21, "unmappedGpuPods: allow");
  Serving s(policy);
  // Created a moment ago (not announced): the review must GET it, and the API server is slow.
  s.api.put("namespaces", namespace_object("team-ml", {{"team", "ml"}}), false);
  s.api.get_delay_ms = 3000;
  Json gpu = pod("train", "c0");
  Json answer = s.validate(review("p1", kPodKind, "pods", gpu, "CREATE", "alice").dump());
  INFO(answer.dump());
  CHECK(answer["allowed"] == false);
  CHECK(message(answer).find("[tenant-pool] GPU pod in namespace \"team-ml\", whose tenant cannot be told") !=
        std::string::npos);
  // A pod without GPUs there is judged as in a namespace of no tenant.
  Json plain = pod("web", "c0");
  plain["metadata"].erase("labels");  // a tenant's label would claim a tenant nobody can confirm
  plain["spec"].erase("resourceClaims");
  plain["spec"]["containers"][0].erase("resources");
  CHECK(s.validate(review("p2", kPodKind, "pods", plain, "CREATE", "alice").dump())["allowed"] == true);
  // Once the labels can be read, the namespace is tenant ml's.
  s.api.get_delay_ms = 0;
  s.api.put("resourceclaims", claim("c0", devices_one_slice()), false);
  answer = s.validate(review("p3", kPodKind, "pods", gpu, "CREATE", "alice").dump());
  INFO(answer.dump());
  CHECK(answer["allowed"] == true);
}
