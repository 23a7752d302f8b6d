// /validate judges a Pod exactly as it arrives; `check` (like the API server's
// chain) mutates first and validates the result. Each class of pod that the mutations would fix
// is evaluated both ways: as received (EvalOptions.mutate false, `check --no-mutate`) it is
// denied by tenant-pool, mig-profile or tenant-label; after mutation it passes, unless the
// mutation that fixes it is turned off in the policy or cannot apply (no defaultPool). Workload
// templates are always judged after mutation. On UPDATE, removing a tenant label is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include <simdjson.h>

#include "policy/evaluation/evaluator.h"
#include "policy/decoding/pod_decoder.h"
#include "test/policy/mutation_test_support.h"

using namespace gpu_admission;
using namespace mutation_test;
using policy::RuleId;

namespace {

struct Knobs {
  bool mig_resources = true, tenant_labels = true, pool_selector = true;
  bool allow_unmapped = false;
};

// Pools: mixed (A100 80GB, 1g.10gb), single (A100 40GB, 3g.20gb), plain (no MIG). Tenants: alpha
// (labels, every pool, default plain), mixy (default mixed), singly (default single), gamma (pools
// but no defaultPool), delta (no pools). No GPU taints, so tolerations do not get in the way.
const policy::CompiledPolicy& policy_with(const Knobs& k) {
  auto b = [](bool on) { return on ? "true" : "false"; };
  std::string text = std::string(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: as-received}
spec:
  defaults: {maxGpusPerPod: 4, gpuTaints: [], unmappedGpuPods: )") +
                     (k.allow_unmapped ? "allow" : "deny") + "}\n  mutations: {mig-resources: " + b(k.mig_resources) +
                     ", tenant-labels: " + b(k.tenant_labels) + ", pool-selector: " + b(k.pool_selector) + R"(}
  pools:
    - {name: mixed, nodeSelector: {pool: mixed}, gpuModel: A100-SXM4-80GB, mig: {strategy: mixed, defaultProfile: 1g.10gb}}
    - {name: single, nodeSelector: {pool: single}, gpuModel: A100-SXM4-40GB, mig: {strategy: single, defaultProfile: 3g.20gb}}
    - {name: plain, nodeSelector: {pool: plain}, gpuModel: H100-SXM5-80GB}
  tenants:
    - {name: alpha, namespaces: [alpha], labels: {cost-center: cc-1}, pools: [mixed, single, plain], defaultPool: plain}
    - {name: mixy, namespaces: [mixy], pools: [mixed], defaultPool: mixed}
    - {name: singly, namespaces: [singly], pools: [single], defaultPool: single}
    - {name: gamma, namespaces: [gamma], pools: [plain, mixed]}
    - {name: delta, namespaces: [delta]}
)";
  static std::map<std::string, const policy::CompiledPolicy*> cache;
  auto it = cache.find(text);
  if (it == cache.end()) it = cache.emplace(text, &load_policy(text, "as-received.yaml")).first;
  return *it->second;
}

const policy::CompiledPolicy& standard() { return policy_with(Knobs{}); }

// A pod in `ns` with the tenant's labels already set (so that tenant-label stays out of the way
// unless a test removes them) and one container "c" with `limits`.
Json pod_in(const std::string& ns, const Json& limits = Json{{"nvidia.com/gpu", 1}}) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                             "spec": {"containers": [{"name": "c", "image": "x"}]}})");
  pod["metadata"]["namespace"] = ns;
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", ns}};
  if (ns == "alpha") pod["metadata"]["labels"]["cost-center"] = "cc-1";
  if (!limits.empty()) pod["spec"]["containers"][0]["resources"] = {{"limits", limits}};
  return pod;
}

Json required_terms(const char* terms_json) {
  return Json{{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", Json::parse(terms_json)}}}}}};
}

struct Both {
  Judged received;  // /validate of the pod as it arrives
  Judged chain;     // /mutate, then /validate of the result
};

Both judge(const policy::CompiledPolicy& p, const Json& pod) { return {eval(p, pod, "", false), eval(p, pod)}; }

std::string show(const Both& b) {
  return "as received:\n" + findings(b.received.decision) + "after mutation:\n" + findings(b.chain.decision) +
         "patch: " + b.chain.patch.dump();
}

// Denied as received for `rule` at `field` (message containing `words`), allowed after mutation
// with nothing of that rule left, and the mutated pod needs no further patch.
void fixed_by_mutation(const policy::CompiledPolicy& p, const Json& pod, RuleId rule, const std::string& field,
                       const std::string& words) {
  Both b = judge(p, pod);
  INFO(show(b));
  CHECK(b.received.decision.patch.empty());
  CHECK(denies_at(b.received.decision, rule, field, words));
  CHECK_FALSE(b.received.allowed());
  CHECK_FALSE(has_finding(b.chain.decision, rule));
  CHECK(b.chain.allowed());
  check_idempotent(p, b.chain);
  // The mutated pod, sent to /validate, is allowed as it is.
  auto revalidated = eval(p, b.chain.mutated, "", false);
  INFO("mutated pod as received:\n" << findings(revalidated.decision));
  CHECK(revalidated.allowed());
}

// Denied both ways for `rule` at `field`.
void denied_both_ways(const policy::CompiledPolicy& p, const Json& pod, RuleId rule, const std::string& field,
                      const std::string& words = "") {
  Both b = judge(p, pod);
  INFO(show(b));
  CHECK(denies_at(b.received.decision, rule, field, words));
  CHECK(denies_at(b.chain.decision, rule, field, words));
  CHECK_FALSE(b.chain.allowed());
}

// No finding of `rule` claims that /mutate would have fixed it (the mutation is off).
bool no_mutate_hint(const policy::Decision& d, RuleId rule) {
  return std::none_of(d.findings.begin(), d.findings.end(), [&](const policy::Finding& f) {
    return f.rule == rule && f.message.find("/mutate would have") != std::string::npos;
  });
}

// Allowed both ways, with no finding at all.
void allowed_both_ways(const policy::CompiledPolicy& p, const Json& pod) {
  Both b = judge(p, pod);
  INFO(show(b));
  CHECK(b.received.decision.findings.empty());
  CHECK(b.chain.decision.findings.empty());
  CHECK(b.received.allowed());
  CHECK(b.chain.allowed());
}

}  // namespace

TEST_CASE("as received: a GPU pod that names no pool is not pinned, pool-selector pins it", "[validate-as-received]") {
  const auto& p = standard();
  const std::string words = "/mutate would have pinned it to pool \"plain\"";
  Json pod = pod_in("alpha");
  SECTION("no scheduling constraint at all") { fixed_by_mutation(p, pod, RuleId::TenantPool, "spec.nodeSelector", words); }
  SECTION("an unrelated nodeSelector") {
    pod["spec"]["nodeSelector"] = {{"kubernetes.io/arch", "amd64"}};
    fixed_by_mutation(p, pod, RuleId::TenantPool, "spec.nodeSelector", words);
  }
  SECTION("only a preferred affinity for a pool") {
    pod["spec"]["affinity"] = Json::parse(R"({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
      [{"weight": 1, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]}]}}]}})");
    fixed_by_mutation(p, pod, RuleId::TenantPool, "spec.nodeSelector", words);
  }
  SECTION("ORed affinity terms, one of which lets it escape the pool it names") {
    pod["spec"]["affinity"] = required_terms(R"([
      {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]}]},
      {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}])");
    fixed_by_mutation(p, pod, RuleId::TenantPool, "spec.nodeSelector", words);
    CHECK(plain(eval(p, pod).mutated)["spec"]["nodeSelector"] == Plain{{"pool", "plain"}});
  }
  SECTION("a GPU only in an init container") {
    pod["spec"]["containers"][0].erase("resources");
    pod["spec"]["initContainers"] = Json::parse(R"([{"name": "i", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}])");
    fixed_by_mutation(p, pod, RuleId::TenantPool, "spec.nodeSelector", words);
  }
  SECTION("pool-selector turned off: denied after mutation too") {
    Knobs k;
    k.pool_selector = false;
    denied_both_ways(policy_with(k), pod, RuleId::TenantPool, "spec.nodeSelector", "pool-selector is off");
    CHECK(no_mutate_hint(eval(policy_with(k), pod, "", false).decision, RuleId::TenantPool));
  }
}

TEST_CASE("as received: a GPU pod that names its pool is pinned both ways", "[validate-as-received]") {
  const auto& p = standard();
  Json pod = pod_in("alpha");
  SECTION("through nodeSelector") {
    pod["spec"]["nodeSelector"] = {{"pool", "plain"}, {"kubernetes.io/arch", "amd64"}};
    allowed_both_ways(p, pod);
  }
  SECTION("through one required affinity term") {
    pod["spec"]["affinity"] = required_terms(R"([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]}]}])");
    allowed_both_ways(p, pod);
  }
  SECTION("through ORed affinity terms that all keep it in the pool") {
    pod["spec"]["affinity"] = required_terms(R"([
      {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]}]},
      {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]},
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}])");
    allowed_both_ways(p, pod);
  }
  SECTION("through nodeSelector while an ORed affinity term names nothing (they are ANDed)") {
    pod["spec"]["nodeSelector"] = {{"pool", "plain"}};
    pod["spec"]["affinity"] = required_terms(R"([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
      {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}])");
    allowed_both_ways(p, pod);
  }
  SECTION("pods without GPUs need no pool") {
    for (const Json& limits : {Json::object(), Json{{"cpu", "1"}}, Json{{"nvidia.com/gpu", 0}}}) {
      Json cpu = pod_in("alpha", limits);
      cpu["spec"]["containers"][0]["env"] = Json::parse(R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])");
      allowed_both_ways(p, cpu);
    }
  }
}

TEST_CASE("as received: a tenant with pools but no defaultPool, and a tenant without pools", "[validate-as-received]") {
  const auto& p = standard();
  Json pod = pod_in("gamma");
  SECTION("names no pool: nothing can pin it, denied both ways") {
    denied_both_ways(p, pod, RuleId::TenantPool, "spec.nodeSelector", "no defaultPool");
    Both b = judge(p, pod);
    CHECK(plain(b.chain.mutated)["spec"].count("nodeSelector") == 0);
  }
  SECTION("ORed terms that let it escape: denied both ways") {
    pod["spec"]["affinity"] = required_terms(R"([
      {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["plain"]}]},
      {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}])");
    denied_both_ways(p, pod, RuleId::TenantPool, "spec.nodeSelector", "no defaultPool");
  }
  SECTION("names one of its pools: allowed both ways") {
    pod["spec"]["nodeSelector"] = {{"pool", "plain"}};
    allowed_both_ways(p, pod);
  }
  SECTION("a tenant without pools: nothing to pin to, no tenant-pool finding") {
    Both b = judge(p, pod_in("delta"));
    INFO(show(b));
    CHECK_FALSE(has_finding(b.received.decision, RuleId::TenantPool));
    CHECK_FALSE(has_finding(b.chain.decision, RuleId::TenantPool));
    CHECK(b.received.allowed());
  }
}

TEST_CASE("as received: GPU pods in a namespace of no tenant", "[validate-as-received]") {
  Json pod = pod_in("nowhere");
  pod["metadata"].erase("labels");
  SECTION("unmappedGpuPods: deny (the default) refuses them both ways, named pool or not") {
    denied_both_ways(standard(), pod, RuleId::TenantPool, "metadata.namespace", "\"nowhere\"");
    pod["spec"]["nodeSelector"] = {{"pool", "plain"}};
    denied_both_ways(standard(), pod, RuleId::TenantPool, "metadata.namespace", "belongs to no tenant");
  }
  SECTION("unmappedGpuPods: allow admits them both ways") {
    Knobs k;
    k.allow_unmapped = true;
    allowed_both_ways(policy_with(k), pod);
  }
  SECTION("a tenant's label there is refused, and never brings that tenant's pool, labels or MIG profile") {
    Knobs k;
    k.allow_unmapped = true;
    const auto& p = policy_with(k);
    pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "mixy"}};  // mixy's default pool is the MIG pool
    denied_both_ways(p, pod, RuleId::TenantLabel, "metadata.labels[\"gpu-admission.io/tenant\"]",
                     "namespace \"nowhere\" belongs to no tenant");
    Both b = judge(p, pod);
    for (const auto* r : {&b.received, &b.chain}) {
      CHECK(r->decision.tenant == nullptr);
      CHECK(r->decision.pool == nullptr);
      CHECK_FALSE(has_finding(r->decision, RuleId::TenantPool));
      CHECK(count_findings(r->decision, RuleId::TenantLabel) == 1);
    }
    CHECK(b.chain.mutated["spec"].count("nodeSelector") == 0);
    CHECK(b.chain.mutated["spec"]["containers"][0]["resources"]["limits"].count("nvidia.com/gpu") == 1);
    CHECK(b.chain.mutated["metadata"]["labels"] == Json{{"gpu-admission.io/tenant", "mixy"}});
    // Under the default (deny) it is refused by tenant-pool as well.
    Both strict = judge(standard(), pod);
    CHECK(denies_at(strict.chain.decision, RuleId::TenantLabel, "metadata.labels[\"gpu-admission.io/tenant\"]"));
    CHECK(denies_at(strict.chain.decision, RuleId::TenantPool, "metadata.namespace"));
  }
  SECTION("pods without GPUs are not concerned") {
    Json cpu = pod_in("nowhere", Json{{"nvidia.com/gpu", "0"}});
    cpu["metadata"].erase("labels");
    Both b = judge(standard(), cpu);
    CHECK_FALSE(has_finding(b.received.decision, RuleId::TenantPool));
    CHECK_FALSE(has_finding(b.chain.decision, RuleId::TenantPool));
  }
  SECTION("a Deployment there is refused too") {
    Json deploy = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "nowhere"},
      "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "image": "x",
        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})");
    auto r = eval(standard(), deploy, "", false);
    INFO(findings(r.decision));
    CHECK(denies_at(r.decision, RuleId::TenantPool, "metadata.namespace", "no tenant"));
  }
}

TEST_CASE("as received: whole GPUs in a mixed pool, which mig-resources converts", "[validate-as-received]") {
  const std::string field = "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]";
  const std::string words = "/mutate would have made them nvidia.com/mig-1g.10gb";
  Json pod = pod_in("alpha", Json{{"nvidia.com/gpu", 2}});
  pod["spec"]["nodeSelector"] = {{"pool", "mixed"}};
  SECTION("named through nodeSelector") { fixed_by_mutation(standard(), pod, RuleId::MigProfile, field, words); }
  SECTION("named through affinity") {
    pod["spec"].erase("nodeSelector");
    pod["spec"]["affinity"] = required_terms(R"([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["mixed"]}]}])");
    fixed_by_mutation(standard(), pod, RuleId::MigProfile, field, words);
  }
  SECTION("the tenant's default pool: unpinned as received, so in no pool; converted by the chain") {
    Json mixy = pod_in("mixy", Json{{"nvidia.com/gpu", 2}});
    Both b = judge(standard(), mixy);
    INFO(show(b));
    CHECK(denies_at(b.received.decision, RuleId::TenantPool, "spec.nodeSelector", "\"mixed\""));
    // A pod with no pool is checked only for two MIG types in one container.
    CHECK_FALSE(has_finding(b.received.decision, RuleId::MigProfile));
    CHECK(b.received.decision.pool == nullptr);
    CHECK(b.chain.allowed());
    CHECK(b.chain.decision.gpu_slices == 2);
  }
  SECTION("in requests, init containers and sidecars: each one is reported") {
    pod["spec"]["containers"][0]["resources"] = Json::parse(R"({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}})");
    pod["spec"]["initContainers"] = Json::parse(R"([{"name": "i", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}},
      {"name": "s", "image": "x", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": 1}}}])");
    Both b = judge(standard(), pod);
    INFO(show(b));
    for (const char* f : {"spec.containers[0].resources.requests[\"nvidia.com/gpu\"]",
                          "spec.initContainers[0].resources.limits[\"nvidia.com/gpu\"]",
                          "spec.initContainers[1].resources.limits[\"nvidia.com/gpu\"]"})
      CHECK(denies_at(b.received.decision, RuleId::MigProfile, f, "whole GPUs"));
    CHECK_FALSE(has_finding(b.chain.decision, RuleId::MigProfile));
    CHECK(b.chain.allowed());
  }
  SECTION("the annotation's profile is the one /mutate would have used") {
    pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "2g.20gb"}};
    fixed_by_mutation(standard(), pod, RuleId::MigProfile, field, "/mutate would have made them nvidia.com/mig-2g.20gb");
  }
  SECTION("MIG slices as received are fine both ways") {
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", 2}}}};
    allowed_both_ways(standard(), pod);
  }
  SECTION("mig-resources turned off: denied after mutation too") {
    Knobs k;
    k.mig_resources = false;
    denied_both_ways(policy_with(k), pod, RuleId::MigProfile, field, "whole GPUs");
    CHECK(no_mutate_hint(eval(policy_with(k), pod, "", false).decision, RuleId::MigProfile));
  }
}

TEST_CASE("as received: a GPU pod in a single pool must select a MIG product", "[validate-as-received]") {
  const std::string field = "spec.nodeSelector[\"nvidia.com/gpu.product\"]";
  Json pod = pod_in("alpha");
  pod["spec"]["nodeSelector"] = {{"pool", "single"}};
  SECTION("no product: mig-resources selects the default profile's") {
    fixed_by_mutation(standard(), pod, RuleId::MigProfile, field, "/mutate would have selected \"A100-SXM4-40GB-MIG-3g.20gb\"");
    CHECK(plain(eval(standard(), pod).mutated)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] ==
          "A100-SXM4-40GB-MIG-3g.20gb");
  }
  SECTION("the annotation's profile is the one /mutate would have selected") {
    pod["metadata"]["annotations"] = {{"gpu-admission.io/mig-profile", "1g.5gb"}};
    fixed_by_mutation(standard(), pod, RuleId::MigProfile, field, "would have selected \"A100-SXM4-40GB-MIG-1g.5gb\"");
  }
  SECTION("the tenant's default single pool, named by nothing: no pool as received, pinned and given a product by the chain") {
    Json singly = pod_in("singly");
    Both b = judge(standard(), singly);
    INFO(show(b));
    CHECK(has_finding(b.received.decision, RuleId::TenantPool));
    CHECK_FALSE(has_finding(b.received.decision, RuleId::MigProfile));
    CHECK(b.chain.allowed());
    CHECK(b.chain.decision.pool != nullptr);
  }
  SECTION("a product the user chose among the pool's MIG products") {
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-1g.5gb";
    allowed_both_ways(standard(), pod);
  }
  SECTION("a product that is not one of them: denied both ways, never overwritten") {
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-80GB-MIG-1g.10gb";
    denied_both_ways(standard(), pod, RuleId::MigProfile, field, "not a MIG product");
  }
  SECTION("mig-resources turned off: denied after mutation too") {
    Knobs k;
    k.mig_resources = false;
    denied_both_ways(policy_with(k), pod, RuleId::MigProfile, field, "does not select a MIG product");
    CHECK(no_mutate_hint(eval(policy_with(k), pod, "", false).decision, RuleId::MigProfile));
  }
  SECTION("a pod without GPUs in the pool needs no product") {
    Json cpu = pod_in("alpha", Json{{"cpu", "1"}});
    cpu["spec"]["nodeSelector"] = {{"pool", "single"}};
    Both b = judge(standard(), cpu);
    CHECK_FALSE(has_finding(b.received.decision, RuleId::MigProfile));
  }
}

TEST_CASE("as received: a tenant's pod without the tenant labels", "[validate-as-received]") {
  Json pod = pod_in("alpha", Json::object());
  pod["spec"]["containers"][0]["env"] = Json::parse(R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])");
  pod["metadata"].erase("labels");
  SECTION("both missing: each reported, tenant-labels adds them") {
    fixed_by_mutation(standard(), pod, RuleId::TenantLabel, "metadata.labels[\"gpu-admission.io/tenant\"]",
                      "/mutate would have added it");
    Both b = judge(standard(), pod);
    CHECK(denies_at(b.received.decision, RuleId::TenantLabel, "metadata.labels[\"cost-center\"]", "\"cc-1\""));
    CHECK(count_findings(b.received.decision, RuleId::TenantLabel) == 2);
  }
  SECTION("one missing: only that one") {
    pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}};
    fixed_by_mutation(standard(), pod, RuleId::TenantLabel, "metadata.labels[\"cost-center\"]", "lacks label");
    CHECK(count_findings(eval(standard(), pod, "", false).decision, RuleId::TenantLabel) == 1);
  }
  SECTION("tenant-labels turned off: nothing is expected") {
    Knobs k;
    k.tenant_labels = false;
    allowed_both_ways(policy_with(k), pod);
  }
  SECTION("a wrong value: denied both ways (never overwritten)") {
    pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-2"}};
    denied_both_ways(standard(), pod, RuleId::TenantLabel, "metadata.labels[\"cost-center\"]", "differs");
  }
  SECTION("a namespace of no tenant: no labels expected") {
    pod["metadata"]["namespace"] = "nowhere";
    allowed_both_ways(standard(), pod);
  }
}

TEST_CASE("as received: workload templates are judged after mutation", "[validate-as-received]") {
  const Json tmpl = Json::parse(R"({"spec": {"containers": [{"name": "c", "image": "x",
                                                             "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})");
  for (const char* ns : {"alpha", "mixy", "singly"}) {
    DYNAMIC_SECTION("a Deployment in " << ns << " that names no pool, lacks labels and asks for whole GPUs") {
      Json deploy = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                   "spec": {"selector": {"matchLabels": {"a": "b"}}}})");
      deploy["metadata"]["namespace"] = ns;
      deploy["spec"]["template"] = tmpl;
      auto r = eval(standard(), deploy, "", false);  // even where Pods are judged as received
      INFO(findings(r.decision) << r.patch.dump());
      CHECK(r.decision.findings.empty());
      CHECK(r.allowed());
      CHECK(mutated(r.decision, policy::MutationId::PoolSelector));
      CHECK(mutated(r.decision, policy::MutationId::TenantLabels));
      check_idempotent(standard(), r);
    }
  }
}

namespace {

// A decoded pod; its views point into its own parser.
struct Decoded {
  policy::PodDocument document;
  policy::PodView pod;
};

std::unique_ptr<Decoded> decode(const Json& object) {
  auto d = std::make_unique<Decoded>();
  auto err = policy::decode_pod_json(object.dump(), false, d->pod, d->document);
  INFO((err ? err->field + ": " + err->message : std::string()));
  REQUIRE_FALSE(err);
  return d;
}

// /validate of an UPDATE from `before` to `after`.
policy::Decision update(const policy::CompiledPolicy& p, const Json& before, const Json& after) {
  auto old_pod = decode(before), new_pod = decode(after);
  policy::EvalOptions options;
  options.mutate = false;
  options.old_pod = &old_pod->pod;
  policy::Decision d;
  policy::evaluate(p, new_pod->pod, options, d);
  return d;
}

}  // namespace

TEST_CASE("as received: on UPDATE, removing a tenant label is refused whatever tenant-labels says", "[validate-as-received]") {
  Knobs off;
  off.tenant_labels = false;
  Json before = pod_in("alpha", Json::object());
  before["spec"]["containers"][0]["env"] = Json::parse(R"([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])");
  for (const policy::CompiledPolicy* p : {&standard(), &policy_with(off)}) {
    DYNAMIC_SECTION("tenant-labels " << (p == &standard() ? "on" : "off")) {
      for (const char* key : {"gpu-admission.io/tenant", "cost-center"}) {
        Json after = before;
        after["metadata"]["labels"].erase(key);
        policy::Decision d = update(*p, before, after);
        INFO(key << "\n" << findings(d));
        CHECK(denies_at(d, RuleId::TenantLabel, "metadata.labels[\"" + std::string(key) + "\"]", "removes label"));
        CHECK(count_findings(d, RuleId::TenantLabel) == 1);
      }
      Json relabelled = before;
      relabelled["metadata"]["labels"]["app"] = "web";  // other labels may change
      CHECK(update(*p, before, relabelled).findings.empty());
    }
  }
  SECTION("labels the old object did not have are not asked for with tenant-labels off") {
    Json bare = before;
    bare["metadata"].erase("labels");
    CHECK(update(policy_with(off), bare, bare).findings.empty());
  }
}
