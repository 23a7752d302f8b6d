// A pod's DRA claim that cannot be found (created after the pod, deleted, or unreadable in
// cluster state) is never a silent zero, even where no cap applies: every rule whose verdict
// depends on a claim's content fails closed where that content could matter: mps-adversarial and
// gpu-sharing in an adversarial pool (its driver config could ask for MPS or time-slicing, its
// requests for a share of a device), mig-profile in a MIG pool (it could
// ask for whole GPUs or a foreign profile). Elsewhere such a pod is judged on the rest of it.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "policy/evaluation/decision.h"
#include "policy/base/ids.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

// No cap anywhere: gpu-cap has nothing to say about a claim it cannot count.
const policy::CompiledPolicy& uncapped_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: uncapped}
spec:
  mutations: {hide-gpus: false}
  defaults: {gpuTaints: []}
  pools:
    - {name: mig, nodeSelector: {pool: mig}, trust: adversarial, gpuModel: A100-SXM4-80GB, mig: {strategy: mixed, defaultProfile: 1g.10gb}}
    - {name: single, nodeSelector: {pool: single}, trust: cooperative, gpuModel: A100-SXM4-40GB, mig: {strategy: single, defaultProfile: 3g.20gb}}
    - {name: secure, nodeSelector: {pool: secure}, trust: adversarial}
    - {name: coop, nodeSelector: {pool: coop}, trust: cooperative}
  tenants:
    - {name: t, namespaces: [team], pools: [mig, single, secure, coop], defaultPool: coop}
)",
                                                                     "uncapped.yaml");
  if (!load.ok()) FAIL("the policy does not load:\n" << load.report());
  return *load.policy;
}

// A pod in `pool` whose one container uses a claim (or template) that nobody created.
Json late_claim_pod(const std::string& pool, const char* reference) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
      "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1",
                               "resources": {"claims": [{"name": "gpu"}]}}]}})");
  pod["spec"]["nodeSelector"] = {{"pool", pool}};
  if (pool == "single") pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-3g.20gb";
  pod["spec"]["resourceClaims"] = Json::array({{{"name", "gpu"}, {reference, "made-later"}}});
  return pod;
}

policy::Decision judge(const Json& pod) {
  policy_test::Judged r = policy_test::judge(uncapped_policy(), pod, "team");
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  return r.decision;
}

std::set<std::string> denied_rules(const policy::Decision& d) {
  std::set<std::string> out;
  for (const auto& f : d.findings)
    if (f.action == policy::Action::Deny) out.insert(std::string(policy::name_of(f.rule)));
  return out;
}

std::string messages(const policy::Decision& d) {
  std::string out;
  for (const auto& f : d.findings) out += std::string(policy::name_of(f.rule)) + " " + f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

}  // namespace

TEST_CASE("an unresolved claim fails closed in the pool rules where its content could matter", "[dra][unresolved]") {
  struct Case {
    std::string pool;
    std::set<std::string> denied;
  };
  const Case cases[] = {
      {"mig", {"mps-adversarial", "gpu-sharing", "mig-profile"}},  // adversarial and MIG
      {"single", {"mig-profile"}},                                 // MIG, cooperative
      {"secure", {"mps-adversarial", "gpu-sharing"}},              // adversarial, no MIG
      {"coop", {}},                                                // neither: judged on the rest of the pod
  };
  for (const char* reference : {"resourceClaimName", "resourceClaimTemplateName"}) {
    for (const auto& c : cases) {
      policy::Decision d = judge(late_claim_pod(c.pool, reference));
      INFO(c.pool << " via " << reference << ":\n" << messages(d));
      CHECK(denied_rules(d) == c.denied);
      CHECK(d.allowed == c.denied.empty());
      const std::string kind = std::string(reference) == "resourceClaimName" ? "ResourceClaim made-later"
                                                                             : "ResourceClaimTemplate made-later";
      for (const auto& f : d.findings) {
        if (f.rule == policy::RuleId::MpsAdversarial || f.rule == policy::RuleId::GpuSharing)
          CHECK(f.message == "cannot judge the sharing of " + kind + ": not found in adversarial pool \"" + c.pool + "\"");
        if (f.rule == policy::RuleId::MigProfile)
          CHECK(f.message.starts_with("cannot judge the MIG devices of " + kind + ": not found"));
        CHECK(f.field == "spec.resourceClaims[0]");
      }
    }
  }
}
