// Red-team tests of two checks of gpu-device-access (policy/evaluation/rules/
// gpu_runtime_and_tolerations.cpp): the runtime class of GPU pods (spec.runtimeClasses, overridden
// per pool; a pod without one runs with the node's default handler and is refused where a list
// applies), and the tolerations of DRA GPU requests in every claim shape, judged for pods through
// their resolved claims and for claims on their own.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/base/ids.h"
#include "policy/evaluation/decision.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/offline.h"
#include "webhook/io/manifests.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

// Pools: `kata` lists its own classes, `plain` none (spec.runtimeClasses applies), `empty` lists
// none explicitly (inherits too). Tenant t may use all three; namespace nowhere has no tenant.
const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: runtime}
spec:
  mutations: {hide-gpus: false}
  runtimeClasses: [nvidia, nvidia-cdi]
  deviceTolerations:
    - {key: example.com/maintenance, operator: Exists}
    - {key: example.com/reserved, operator: Equal, value: t, effect: NoSchedule}
  pools:
    - {name: kata, nodeSelector: {pool: kata}, runtimeClasses: [kata-nvidia]}
    - {name: plain, nodeSelector: {pool: plain}}
    - {name: empty, nodeSelector: {pool: empty}, runtimeClasses: []}
  tenants:
    - {name: t, namespaces: [team], pools: [kata, plain, empty], defaultPool: plain}
  defaults:
    unmappedGpuPods: allow
)";

const policy::CompiledPolicy& the_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(kPolicy, "runtime.yaml");
  if (!load.ok()) FAIL("the policy does not load:\n" << load.report());
  return *load.policy;
}

webhook::OfflineResult judge(const Json& object, const webhook::InputClaims* claims = nullptr, bool mutate = true) {
  webhook::ManifestObject m;
  m.object = object;
  m.source = "test_gpu_runtime_and_tolerations.cpp";
  policy::ExternalFacts facts;
  facts.claims = claims;
  webhook::OfflineResult r = webhook::evaluate_offline(the_policy(), m, "team", mutate, facts);
  INFO(r.note);
  REQUIRE(r.status == webhook::OfflineResult::Status::Evaluated);
  return r;
}

std::vector<policy::Finding> access_findings(const policy::Decision& d) {
  std::vector<policy::Finding> out;
  for (const auto& f : d.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) out.push_back(f);
  return out;
}

std::string shown(const policy::Decision& d) {
  std::string out;
  for (const auto& f : d.findings) out += std::string(policy::name_of(f.rule)) + " " + f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

// A pod in `pool` ("" for none) with one container asking for `gpus` nvidia.com/gpu.
Json gpu_pod(const std::string& pool, const char* runtime_class, int gpus = 1, const std::string& ns = "team") {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1"}]}})");
  pod["metadata"]["namespace"] = ns;
  if (!pool.empty()) pod["spec"]["nodeSelector"] = {{"pool", pool}};
  if (runtime_class) pod["spec"]["runtimeClassName"] = runtime_class;
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus;
  return pod;
}

}  // namespace

TEST_CASE("runtime classes: the pool's list, else spec.runtimeClasses, for GPU pods only", "[gpu-device-access][runtime-class]") {
  struct Case {
    std::string pool, ns;
    const char* runtime_class;
    int gpus;
    bool refused;
    std::string words;  // in the message when refused
  };
  const Case cases[] = {
      {"kata", "team", "kata-nvidia", 1, false, ""},
      {"kata", "team", "nvidia", 1, true, "pool \"kata\" allows only \"kata-nvidia\""},  // the pool's list replaces the global one
      {"kata", "team", nullptr, 1, true, "sets no runtimeClassName, so it runs with the node's default runtime handler"},
      {"kata", "team", "runc", 0, false, ""},  // no GPU: not judged
      {"plain", "team", "nvidia-cdi", 1, false, ""},
      {"plain", "team", "kata-nvidia", 1, true, "spec.runtimeClasses allows only \"nvidia\", \"nvidia-cdi\""},
      {"plain", "team", nullptr, 2, true, "node's default runtime handler"},
      {"empty", "team", "nvidia", 1, false, ""},  // runtimeClasses: [] inherits
      {"empty", "team", "runc", 1, true, "spec.runtimeClasses allows"},
      {"", "nowhere", "nvidia", 1, false, ""},  // no pool: the global list
      {"", "nowhere", "kata-nvidia", 1, true, "spec.runtimeClasses allows"},
      {"", "nowhere", nullptr, 0, false, ""},
      {"", "team", "runc", 1, true, "spec.runtimeClasses allows"},  // pinned to the default pool plain by /mutate
  };
  for (const auto& c : cases) {
    INFO("pool " << c.pool << ", namespace " << c.ns << ", runtimeClassName " << (c.runtime_class ? c.runtime_class : "(none)")
                 << ", GPUs " << c.gpus);
    auto r = judge(gpu_pod(c.pool, c.runtime_class, c.gpus, c.ns));
    INFO(shown(r.decision));
    auto found = access_findings(r.decision);
    if (!c.refused) {
      CHECK(found.empty());
      continue;
    }
    REQUIRE(found.size() == 1);
    CHECK(found[0].action == policy::Action::Deny);
    CHECK(found[0].field == "spec.runtimeClassName");
    CHECK(found[0].message.find(c.words) != std::string::npos);
    if (c.runtime_class) CHECK(found[0].message.find(std::string("\"") + c.runtime_class + "\"") != std::string::npos);
    CHECK_FALSE(r.decision.allowed);
  }
}

TEST_CASE("runtime classes: GPUs through any container kind or a DRA claim; workload templates and ML kinds",
          "[gpu-device-access][runtime-class]") {
  SECTION("a GPU in a sidecar or an init container makes a GPU pod") {
    for (const bool sidecar : {true, false}) {
      INFO("sidecar " << sidecar);
      Json pod = gpu_pod("kata", "runc", 0);
      pod["spec"]["initContainers"] =
          Json::parse(R"([{"name": "x", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}])");
      if (sidecar) pod["spec"]["initContainers"][0]["restartPolicy"] = "Always";
      auto r = judge(pod);
      INFO(shown(r.decision));
      CHECK(access_findings(r.decision).size() == 1);
    }
  }
  SECTION("a DRA claim that cannot be found makes a GPU pod") {
    Json pod = gpu_pod("kata", "runc", 0);
    pod["spec"]["resourceClaims"] = Json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "later"}])");
    pod["spec"]["containers"][0]["resources"]["claims"] = Json::parse(R"([{"name": "gpu"}])");
    auto r = judge(pod);
    INFO(shown(r.decision));
    CHECK(access_findings(r.decision).size() == 1);
  }
  SECTION("a Deployment's and a CronJob's templates name the field in the template") {
    Json deploy = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", {{"name", "d"}, {"namespace", "team"}}}};
    Json pod = gpu_pod("kata", "runc");
    deploy["spec"]["template"] = {{"spec", pod["spec"]}};
    auto r = judge(deploy);
    INFO(shown(r.decision));
    REQUIRE(access_findings(r.decision).size() == 1);
    CHECK(access_findings(r.decision)[0].field == "spec.template.spec.runtimeClassName");
    Json cron = {{"apiVersion", "batch/v1"}, {"kind", "CronJob"}, {"metadata", {{"name", "c"}, {"namespace", "team"}}}};
    cron["spec"]["jobTemplate"]["spec"]["template"] = {{"spec", pod["spec"]}};
    auto rc = judge(cron);
    REQUIRE(access_findings(rc.decision).size() == 1);
    CHECK(access_findings(rc.decision)[0].field == "spec.jobTemplate.spec.template.spec.runtimeClassName");
  }
  SECTION("a PyTorchJob's worker template") {
    Json job = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "team"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}}})");
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] = {{"spec", gpu_pod("kata", nullptr)["spec"]}};
    auto r = judge(job);
    INFO(shown(r.decision));
    CHECK_FALSE(r.decision.allowed);
    bool found = false;
    for (const auto& t : r.templates)
      for (const auto& f : access_findings(t.decision))
        found = found || f.field == "spec.pytorchReplicaSpecs.Worker.template.spec.runtimeClassName";
    CHECK(found);
  }
  SECTION("a runtimeClassName that is not a string is an error, as the API server says") {
    Json pod = gpu_pod("kata", nullptr);
    pod["spec"]["runtimeClassName"] = 7;
    webhook::ManifestObject m;
    m.object = pod;
    auto r = webhook::evaluate_offline(the_policy(), m, "team");
    CHECK(r.status == webhook::OfflineResult::Status::Error);
    CHECK(r.note.find("spec.runtimeClassName") != std::string::npos);
  }
}

namespace {

// A claim (or template) of `api_version` named `name` in namespace team, whose one request is
// `request` (JSON, in that version's shape).
Json claim(const char* kind, const char* api_version, const char* name, const std::string& request) {
  Json devices = {{"requests", Json::array({Json::parse(request)})}};
  Json out = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}, {"namespace", "team"}}}};
  if (std::string(kind) == "ResourceClaimTemplate") out["spec"]["spec"]["devices"] = devices;
  else out["spec"]["devices"] = devices;
  return out;
}

struct Shape {
  const char* kind;
  const char* api_version;
  std::string request;  // @T@ stands for the tolerations list
  std::string field;    // of the toleration list, from spec.devices
};

// Every claim shape the decoder reads, each with its tolerations at one place.
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const char* kind : {"ResourceClaim", "ResourceClaimTemplate"}) {
    for (const char* version : {"resource.k8s.io/v1", "resource.k8s.io/v1beta2"}) {
      out.push_back({kind, version, R"({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "tolerations": @T@}})",
                     "requests[0].exactly.tolerations"});
      out.push_back({kind, version,
                     R"({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "other.example.com"},
                         {"name": "b", "deviceClassName": "mig.nvidia.com", "tolerations": @T@}]})",
                     "requests[0].firstAvailable[1].tolerations"});
    }
    out.push_back({kind, "resource.k8s.io/v1beta1", R"({"name": "gpu", "deviceClassName": "vfio.gpu.nvidia.com", "tolerations": @T@})",
                   "requests[0].tolerations"});
    out.push_back({kind, "resource.k8s.io/v1beta1",
                   R"({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com", "tolerations": @T@}]})",
                   "requests[0].firstAvailable[0].tolerations"});
  }
  return out;
}

std::string with_tolerations(std::string request, const std::string& tolerations) {
  return request.replace(request.find("@T@"), 3, tolerations);
}

}  // namespace

TEST_CASE("device tolerations: every claim shape, on its own and through a pod", "[gpu-device-access][device-tolerations]") {
  const std::string bad = R"([{"key": "example.com/maintenance", "operator": "Exists"},
                              {"key": "example.com/reserved", "operator": "Equal", "value": "t"},
                              {"operator": "Exists", "effect": "NoExecute"}])";
  const std::string good = R"([{"key": "example.com/maintenance", "value": "x", "effect": "NoExecute", "tolerationSeconds": 60},
                               {"key": "example.com/reserved", "operator": "Equal", "value": "t", "effect": "NoSchedule"}])";
  for (const Shape& s : shapes()) {
    INFO(s.kind << " " << s.api_version << " " << s.field);
    const bool is_template = std::string(s.kind) == "ResourceClaimTemplate";
    const std::string devices = is_template ? "spec.spec.devices." : "spec.devices.";
    SECTION(std::string(s.kind) + " " + s.api_version + " " + s.field) {
      // On its own: one finding per disallowed toleration (the second and the third), at its field.
      auto r = judge(claim(s.kind, s.api_version, "c", with_tolerations(s.request, bad)));
      INFO(shown(r.decision));
      auto found = access_findings(r.decision);
      REQUIRE(found.size() == 2);
      CHECK(found[0].field == devices + s.field + "[1]");
      CHECK(found[0].message.find("tolerates device taints {key: \"example.com/reserved\", operator: Equal, value: \"t\"}") !=
            std::string::npos);
      CHECK(found[1].field == devices + s.field + "[2]");
      CHECK(found[1].message.find("tolerates every device taint {operator: Exists, effect: NoExecute}") != std::string::npos);
      CHECK_FALSE(r.decision.allowed);
      CHECK(access_findings(judge(claim(s.kind, s.api_version, "c", with_tolerations(s.request, good))).decision).empty());

      // Through a pod that refers to it.
      webhook::InputClaims claims;
      REQUIRE(claims.add(claim(s.kind, s.api_version, "c", with_tolerations(s.request, bad)), "team"));
      Json pod = gpu_pod("plain", "nvidia", 0);
      pod["spec"]["resourceClaims"] = Json::array({{{"name", "gpu"}, {is_template ? "resourceClaimTemplateName" : "resourceClaimName", "c"}}});
      pod["spec"]["containers"][0]["resources"]["claims"] = Json::parse(R"([{"name": "gpu"}])");
      auto rp = judge(pod, &claims);
      INFO(shown(rp.decision));
      auto pod_found = access_findings(rp.decision);
      REQUIRE(pod_found.size() == 2);
      CHECK(pod_found[0].field == "spec.resourceClaims[0]");
      CHECK(pod_found[0].message.find(devices + s.field + "[1]") != std::string::npos);
      std::string request = "gpu";  // a firstAvailable subrequest is named after its request
      if (s.field.find("firstAvailable[1]") != std::string::npos) request = "gpu/b";
      if (s.field.find("firstAvailable[0]") != std::string::npos) request = "gpu/a";
      CHECK(pod_found[0].message.find((is_template ? "claim template c request \"" : "claim c request \"") + request + "\"") !=
            std::string::npos);
      CHECK_FALSE(rp.decision.allowed);
    }
  }
}

TEST_CASE("device tolerations: requests that are not for GPUs, and claims that cannot be found",
          "[gpu-device-access][device-tolerations]") {
  const std::string everything = R"([{"operator": "Exists"}])";
  auto r = judge(claim("ResourceClaim", "resource.k8s.io/v1", "nic",
                       R"({"name": "nic", "exactly": {"deviceClassName": "rdma.example.com", "tolerations": )" + everything + "}}"));
  CHECK(access_findings(r.decision).empty());
  // A claim not found is not judged here: it is judged when it is created and when its devices are
  // allocated, and gpu-cap and the pool rules fail closed on it meanwhile.
  Json pod = gpu_pod("plain", "nvidia", 0);
  pod["spec"]["resourceClaims"] = Json::parse(R"([{"name": "gpu", "resourceClaimName": "later"}])");
  CHECK(access_findings(judge(pod).decision).empty());
}

TEST_CASE("device tolerations: the rule's action applies, and off judges nothing", "[gpu-device-access][device-tolerations]") {
  for (const char* action : {"warn", "audit", "off"}) {
    INFO(action);
    std::string text = kPolicy;
    text.replace(text.find("  mutations:"), 0, std::string("  rules: {gpu-device-access: ") + action + "}\n");
    webhook::PolicyLoad load = webhook::load_policy_text(text, "action.yaml");
    REQUIRE(load.ok());
    webhook::ManifestObject m;
    m.object = claim("ResourceClaim", "resource.k8s.io/v1", "c",
                     R"({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "tolerations": [{"operator": "Exists"}]}})");
    auto r = webhook::evaluate_offline(*load.policy, m, "team");
    REQUIRE(r.status == webhook::OfflineResult::Status::Evaluated);
    CHECK(r.decision.allowed);
    auto found = access_findings(r.decision);
    if (std::string(action) == "off") {
      CHECK(found.empty());
    } else {
      REQUIRE(found.size() == 1);
      CHECK(std::string(policy::name_of(found[0].action)) == action);
    }
  }
}
