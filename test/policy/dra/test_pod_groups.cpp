// PodGroups (scheduling.k8s.io, Kubernetes 1.36+): decoding a group in each served version, a
// pod's spec.schedulingGroup, the group's claims counted as the pod's own by every rule (once
// when the pod has a matching entry), a group that cannot be found failing closed with a message
// that says what to do, and a group judged on its own (evaluate_pod_group).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <simdjson.h>

#include "policy/base/ids.h"
#include "policy/dra/claim_decoder.h"
#include "policy/dra/pod_claims.h"
#include "policy/dra/pod_group.h"
#include "policy/evaluation/evaluator.h"
#include "test/policy/decoded_pod.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using policy::ClaimKind;

namespace {

const policy::CompiledPolicy& group_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: groups}
spec:
  mutations: {hide-gpus: false, pool-selector: false, tenant-labels: false, mig-resources: false}
  defaults: {gpuTaints: [], maxGpusPerPod: 2}
  pools:
    - {name: coop, nodeSelector: {pool: coop}, trust: cooperative}
    - {name: secure, nodeSelector: {pool: secure}, trust: adversarial}
  tenants:
    - {name: t, namespaces: [team], pools: [coop, secure], defaultPool: secure}
    - {name: nodefault, namespaces: [free], pools: [coop]}
)",
                                                                     "groups.yaml");
  if (!load.ok()) FAIL("the policy does not load:\n" << load.report());
  return *load.policy;
}

// Decoded objects kept alive together (views point into their documents).
struct Parsed {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit Parsed(const std::string& text) { REQUIRE(parser.parse(text).get(root) == simdjson::SUCCESS); }
};

struct Claims final : policy::ClaimResolver {
  std::vector<std::unique_ptr<Parsed>> docs;
  std::vector<std::unique_ptr<policy::ClaimView>> views;
  void add(const std::string& text) {
    docs.push_back(std::make_unique<Parsed>(text));
    views.push_back(std::make_unique<policy::ClaimView>());
    REQUIRE_FALSE(policy::decode_claim(docs.back()->root, *views.back()));
  }
  const policy::ClaimView* find(ClaimKind kind, std::string_view ns, std::string_view name) const override {
    for (const auto& v : views)
      if (v->kind == kind && v->name == name && v->namespace_name == ns) return v.get();
    return nullptr;
  }
};

struct Groups final : policy::PodGroupResolver {
  std::vector<std::unique_ptr<Parsed>> docs;
  std::vector<std::unique_ptr<policy::PodGroupView>> views;
  const policy::PodGroupView& add(const std::string& text) {
    docs.push_back(std::make_unique<Parsed>(text));
    views.push_back(std::make_unique<policy::PodGroupView>());
    auto err = policy::decode_pod_group(docs.back()->root, *views.back());
    INFO((err ? err->field + ": " + err->message : std::string()));
    REQUIRE_FALSE(err);
    return *views.back();
  }
  const policy::PodGroupView* find_group(std::string_view ns, std::string_view name) const override {
    for (const auto& v : views)
      if (v->name == name && v->namespace_name == ns) return v.get();
    return nullptr;
  }
};

std::string gpu_claim(const std::string& name, int count, const std::string& extra = "") {
  return R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": ")" + name +
         R"(", "namespace": "team"}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": )" +
         std::to_string(count) + extra + "}}]" + "}}}";
}

std::string group_json(const std::string& version, const std::string& entries, const std::string& ns = "team") {
  return R"({"apiVersion": "scheduling.k8s.io/)" + version + R"(", "kind": "PodGroup", "metadata": {"name": "g", "namespace": ")" +
         ns + R"(", "uid": "u-1"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [)" + entries +
         "]}}";
}

// A pod of group "g" in pool `pool`, with `own` as its spec.resourceClaims and `gpus` device-plugin GPUs.
std::string member_pod(const std::string& pool, const std::string& own = "", int gpus = 0) {
  std::string pod = R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}, "spec": {
      "schedulingGroup": {"podGroupName": "g"}, "nodeSelector": {"pool": ")" + pool + R"("},)";
  if (!own.empty()) pod += R"("resourceClaims": [)" + own + "],";
  pod += R"("containers": [{"name": "main", "image": "registry.example.com/app:1")";
  if (gpus) pod += R"(, "resources": {"limits": {"nvidia.com/gpu": )" + std::to_string(gpus) + "}}";
  return pod + "}]}}";
}

policy::Decision judge(const std::string& pod_text, const Claims& claims, const Groups* groups) {
  DecodedPod pod(pod_text);
  REQUIRE_FALSE(pod.error);
  policy::EvalOptions options;
  options.claims = &claims;
  options.groups = groups;
  policy::Decision d;
  policy::evaluate(group_policy(), pod.view, options, d);
  return d;
}

const policy::Finding* finding_of(const policy::Decision& d, policy::RuleId rule) {
  for (const auto& f : d.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("a PodGroup decodes in every version that serves it; other versions are refused", "[podgroup]") {
  for (const char* version : {"v1alpha2", "v1alpha3", "v1beta1"}) {
    INFO(version);
    Groups groups;
    const auto& g = groups.add(group_json(version, R"({"name": "a", "resourceClaimName": "shared"},
        {"name": "b", "resourceClaimTemplateName": "per-group"})"));
    CHECK(g.name == "g");
    CHECK(g.namespace_name == "team");
    CHECK(g.uid == "u-1");
    REQUIRE(g.resource_claims.size() == 2);
    CHECK(g.resource_claims[0].claim_name == "shared");
    CHECK(g.resource_claims[1].template_name == "per-group");
    CHECK(g.resource_claims[1].index == 1);
  }
  for (const char* version : {"scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha1", "scheduling.x-k8s.io/v1alpha1"}) {
    INFO(version);
    Parsed doc(R"({"apiVersion": ")" + std::string(version) + R"(", "kind": "PodGroup", "metadata": {"name": "g"}})");
    policy::PodGroupView view;
    auto err = policy::decode_pod_group(doc.root, view);
    REQUIRE(err);
    CHECK(err->field == "apiVersion");
  }
  // A wrong type names its field.
  Parsed bad(R"({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g"},
      "spec": {"resourceClaims": [{"name": "a", "resourceClaimName": 7}]}})");
  policy::PodGroupView view;
  auto err = policy::decode_pod_group(bad.root, view);
  REQUIRE(err);
  CHECK(err->field == "spec.resourceClaims[0].resourceClaimName");
}

TEST_CASE("a PodGroup's status maps its template entries to the claims made for them", "[podgroup]") {
  Groups groups;
  const auto& g = groups.add(R"({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
      "metadata": {"name": "g", "namespace": "team"},
      "spec": {"resourceClaims": [{"name": "a", "resourceClaimName": "shared"}, {"name": "b", "resourceClaimTemplateName": "t"}]},
      "status": {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "g-b-x7k2"}]}})");
  REQUIRE(g.entry_for_claim("shared"));
  CHECK(g.entry_for_claim("shared")->name == "a");
  REQUIRE(g.entry_for_claim("g-b-x7k2"));
  CHECK(g.entry_for_claim("g-b-x7k2")->name == "b");
  CHECK_FALSE(g.entry_for_claim("other"));
  CHECK_FALSE(g.entry_for_claim(""));
}

TEST_CASE("the newest version that serves PodGroups is picked", "[podgroup]") {
  using V = std::vector<std::string_view>;
  CHECK(policy::pick_pod_group_version(V{"v1", "v1alpha2"}) == "v1alpha2");
  CHECK(policy::pick_pod_group_version(V{"v1alpha2", "v1beta1", "v1alpha3"}) == "v1beta1");
  CHECK(policy::pick_pod_group_version(V{"v1alpha3", "v1alpha2"}) == "v1alpha3");
  CHECK(policy::pick_pod_group_version(V{"v1", "v1alpha1"}).empty());
}

TEST_CASE("a pod's spec.schedulingGroup is read; a 1.35 workloadRef is not a group", "[podgroup]") {
  DecodedPod pod(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"schedulingGroup": {"podGroupName": "g"}, "containers": []}})");
  INFO((pod.error ? pod.error->field + ": " + pod.error->message : std::string()));
  REQUIRE_FALSE(pod.error);
  CHECK(pod.view.pod_group == "g");
  DecodedPod old(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"workloadRef": {"name": "w", "podGroup": "workers"}, "containers": []}})");
  REQUIRE_FALSE(old.error);
  CHECK(old.view.pod_group.empty());
  DecodedPod bad(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"schedulingGroup": {"podGroupName": 3}, "containers": []}})");
  REQUIRE(bad.error);
  CHECK(bad.error->field == "spec.schedulingGroup.podGroupName");
}

TEST_CASE("a pod counts its PodGroup's claims as its own", "[podgroup][gpu-cap]") {
  Claims claims;
  claims.add(gpu_claim("two", 2));
  for (const char* version : {"v1alpha2", "v1alpha3", "v1beta1"}) {
    INFO(version);
    Groups groups;
    groups.add(group_json(version, R"({"name": "gpus", "resourceClaimName": "two"})"));

    // 1 of its own + 2 of the group's: above the cap of 2, reported through the group's field.
    policy::Decision d = judge(member_pod("coop", "", 1), claims, &groups);
    const policy::Finding* cap = finding_of(d, policy::RuleId::GpuCap);
    REQUIRE(cap);
    CHECK(d.gpu_slices == 3 * d.slices_per_gpu);
    CHECK_FALSE(d.allowed);

    // The group's claim alone: at the cap.
    d = judge(member_pod("coop"), claims, &groups);
    CHECK(d.gpu_slices == 2 * d.slices_per_gpu);
    CHECK_FALSE(finding_of(d, policy::RuleId::GpuCap));

    // The pod's own entry that matches the group's (DRAWorkloadResourceClaims) is the same claim: once.
    d = judge(member_pod("coop", R"({"name": "gpus", "resourceClaimName": "two"})"), claims, &groups);
    CHECK(d.gpu_slices == 2 * d.slices_per_gpu);
    CHECK_FALSE(finding_of(d, policy::RuleId::GpuCap));

    // An entry that differs in name is another entry: the claim is still counted once.
    d = judge(member_pod("coop", R"({"name": "mine", "resourceClaimName": "two"})"), claims, &groups);
    CHECK(d.gpu_slices == 2 * d.slices_per_gpu);
  }
}

TEST_CASE("the group's claims reach every rule that judges claims", "[podgroup]") {
  Claims claims;
  claims.add(gpu_claim("admin", 1, R"(, "adminAccess": true)"));
  claims.add(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mps", "namespace": "team"},
      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
      "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig", "sharing": {"strategy": "MPS"}}}}]}}})");
  claims.add(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "ts", "namespace": "team"},
      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
      "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}}}}]}}})");
  struct Case {
    const char* claim;
    policy::RuleId rule;
  };
  for (const Case c : {Case{"admin", policy::RuleId::GpuDeviceAccess}, Case{"mps", policy::RuleId::MpsAdversarial},
                       Case{"ts", policy::RuleId::GpuSharing}}) {
    INFO(c.claim);
    Groups groups;
    groups.add(group_json("v1alpha2", R"({"name": "gpus", "resourceClaimName": ")" + std::string(c.claim) + "\"}"));
    const policy::Decision d = judge(member_pod("secure"), claims, &groups);
    const policy::Finding* f = finding_of(d, c.rule);
    REQUIRE(f);
    CHECK(f->field == "spec.schedulingGroup.podGroupName");
    CHECK(f->message.find("of PodGroup g") != std::string::npos);
    // With a group that holds no claims, the same pod asks for nothing.
    Groups empty;
    empty.add(group_json("v1alpha2", ""));
    const policy::Decision alone = judge(member_pod("secure"), claims, &empty);
    CHECK_FALSE(finding_of(alone, c.rule));
  }
}

TEST_CASE("a pod whose PodGroup cannot be found fails closed, saying what to do", "[podgroup][unresolved]") {
  Claims claims;
  Groups none;
  const Groups* resolvers[] = {nullptr, &none};
  for (const Groups* groups : resolvers) {
    const policy::Decision d = judge(member_pod("coop"), claims, groups);
    const policy::Finding* cap = finding_of(d, policy::RuleId::GpuCap);
    REQUIRE(cap);
    CHECK(cap->field == "spec.schedulingGroup.podGroupName");
    CHECK(cap->message.find("PodGroup g: not found") != std::string::npos);
    CHECK(cap->message.find("create the PodGroup before its pods") != std::string::npos);
    CHECK_FALSE(d.allowed);
    // In an adversarial pool, the sharing rules cannot judge it either.
    const policy::Decision secure = judge(member_pod("secure"), claims, groups);
    CHECK(finding_of(secure, policy::RuleId::MpsAdversarial));
    CHECK(finding_of(secure, policy::RuleId::GpuSharing));
  }
  // A group entry that cannot be found is an unresolved claim of the group.
  Groups groups;
  groups.add(group_json("v1beta1", R"({"name": "gpus", "resourceClaimTemplateName": "later"})"));
  const policy::Decision d = judge(member_pod("coop"), claims, &groups);
  const policy::Finding* cap = finding_of(d, policy::RuleId::GpuCap);
  REQUIRE(cap);
  CHECK(cap->message.find("ResourceClaimTemplate later of PodGroup g: not found") != std::string::npos);
}

TEST_CASE("a PodGroup is judged on its own with its tenant's default pool", "[podgroup]") {
  Claims claims;
  claims.add(gpu_claim("three", 3));
  claims.add(gpu_claim("one", 1));
  claims.add(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mps", "namespace": "team"},
      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
      "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig", "sharing": {"strategy": "MPS"}}}}]}}})");
  policy::EvalOptions options;
  options.claims = &claims;
  policy::Decision d;

  Groups groups;
  policy::evaluate_pod_group(group_policy(), groups.add(group_json("v1alpha2", R"({"name": "a", "resourceClaimName": "three"})")),
                             options, d);
  const policy::Finding* cap = finding_of(d, policy::RuleId::GpuCap);
  REQUIRE(cap);
  CHECK(cap->field == "spec.resourceClaims");
  CHECK_FALSE(d.allowed);
  REQUIRE(d.pool);
  CHECK(d.pool->name == "secure");

  // Two claims of 1 GPU: at the cap.
  policy::evaluate_pod_group(group_policy(),
                             groups.add(group_json("v1alpha3", R"({"name": "a", "resourceClaimName": "one"},
                                                                  {"name": "b", "resourceClaimName": "one"})")),
                             options, d);
  CHECK(d.allowed);
  CHECK(d.findings.empty());

  // MPS in the adversarial default pool; a claim that is not there.
  policy::evaluate_pod_group(group_policy(), groups.add(group_json("v1beta1", R"({"name": "a", "resourceClaimName": "mps"},
                                                                             {"name": "b", "resourceClaimName": "gone"})")),
                             options, d);
  const policy::Finding* mps = finding_of(d, policy::RuleId::MpsAdversarial);
  REQUIRE(mps);
  CHECK(mps->field == "spec.resourceClaims[0]");
  bool gone_reported = false;
  for (const auto& f : d.findings) gone_reported = gone_reported || (f.field == "spec.resourceClaims[1]");
  CHECK(gone_reported);

  // A tenant without a default pool: the pool rules wait for the pods, the cap still applies.
  policy::evaluate_pod_group(group_policy(),
                             groups.add(group_json("v1alpha2", R"({"name": "a", "resourceClaimName": "mps"})", "free")),
                             options, d);
  CHECK_FALSE(d.pool);
  CHECK_FALSE(finding_of(d, policy::RuleId::MpsAdversarial));
}
