// Red-team tests of gpu-sharing (policy/evaluation/rules/gpu_sharing.cpp) and of fractional
// resources: in an adversarial pool, every class of way to share a GPU other than MPS is denied:
// a time-sliced pool, shared and fractional resources in every container kind and placement,
// every operator on nvidia.com/gpu.replicas in every ORed term, `-SHARED` products and every
// product operator that does not name products (NotIn, Exists, Gt, Lt; not DoesNotExist), DRA requests
// for a share of a device or for time-slicing in every served API shape, and claims that cannot
// be found. The same pods in a cooperative pool are not reported. A fractional resource makes a
// GPU pod (pinned, tolerations, hide-gpus) and counts no GPUs. Written from the spec's rule row.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/evaluation/decision.h"
#include "policy/base/ids.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

const policy::CompiledPolicy& sharing_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: sharing-red-team}
spec:
  gpuResources:
    fractional: [nvidia.com/gpumem, nvidia.com/gpumem-percentage, nvidia.com/gpucores]
  defaults:
    maxGpusPerPod: 1
    gpuTaints: [{key: nvidia.com/gpu, effect: NoSchedule}]
  pools:
    - {name: secure, nodeSelector: {pool: secure}, trust: adversarial}
    - {name: coop, nodeSelector: {pool: coop}, trust: cooperative, sharing: time-slicing}
    - {name: ts, nodeSelector: {pool: ts}, trust: adversarial, sharing: time-slicing}
  tenants:
    - {name: t, namespaces: [team], pools: [secure, coop, ts], defaultPool: coop}
)",
                                                                     "sharing-red-team.yaml");
  if (!load.ok()) FAIL("the sharing policy does not load:\n" << load.report());
  return *load.policy;
}

Json pod_in(const std::string& pool) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
      "spec": {"tolerations": [{"operator": "Exists"}],
               "containers": [{"name": "main", "image": "registry.example.com/app:1"}]}})");
  if (!pool.empty()) pod["spec"]["nodeSelector"] = {{"pool", pool}};
  return pod;
}

policy_test::Judged judge(const Json& object, const std::vector<Json>& claims = {}, bool mutate = true) {
  policy_test::TestClaims inputs;
  for (const Json& c : claims) REQUIRE(inputs.add(c, "team"));
  policy_test::Judged r =
      policy_test::judge(sharing_policy(), object, "team", mutate, policy::ExternalFacts{&inputs, nullptr});
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  return r;
}

std::vector<policy::Finding> of_rule(const policy_test::Judged& r, policy::RuleId rule) {
  std::vector<policy::Finding> out;
  for (const auto& f : r.decision.findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

std::vector<policy::Finding> sharing_findings(const Json& object, const std::vector<Json>& claims = {}) {
  return of_rule(judge(object, claims), policy::RuleId::GpuSharing);
}

std::string all(const std::vector<policy::Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

const std::string kTerms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";

// Required node affinity with `terms` ORed, each pinning the pod to `pool` first.
Json with_terms(Json pod, const std::string& pool, const std::vector<std::vector<Json>>& terms) {
  pod["spec"].erase("nodeSelector");
  Json list = Json::array();
  for (const auto& exprs : terms) {
    Json term = {{"matchExpressions", Json::array({{{"key", "pool"}, {"operator", "In"}, {"values", {pool}}}})}};
    for (const Json& e : exprs) term["matchExpressions"].push_back(e);
    list.push_back(term);
  }
  pod["spec"]["affinity"] = {
      {"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", list}}}}}};
  return pod;
}

Json requirement(const std::string& key, const std::string& op, const std::vector<std::string>& values) {
  Json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

struct Op {
  std::string op;
  std::vector<std::string> values;
};
const std::vector<Op> kEveryOperator = {{"In", {"2"}},         {"NotIn", {"1"}}, {"Exists", {}},
                                        {"DoesNotExist", {}},  {"Gt", {"1"}},    {"Lt", {"8"}}};

}  // namespace

TEST_CASE("gpu-sharing: a constraint on nvidia.com/gpu.replicas is refused under every operator, in every ORed term",
          "[gpu-sharing][node-constraints]") {
  for (const Op& op : kEveryOperator) {
    for (size_t position = 0; position < 2; ++position) {
      INFO(op.op << " in term " << position);
      std::vector<std::vector<Json>> terms(2);
      terms[position].push_back(requirement("nvidia.com/gpu.replicas", op.op, op.values));
      auto fs = sharing_findings(with_terms(pod_in(""), "secure", terms));
      INFO(all(fs));
      REQUIRE(fs.size() == 1);
      CHECK(fs[0].field == kTerms + "[" + std::to_string(position) + "].matchExpressions[1]");
      CHECK(fs[0].message.find("nvidia.com/gpu.replicas " + op.op) != std::string::npos);
      CHECK(fs[0].message.find("adversarial pool \"secure\"") != std::string::npos);
      CHECK(sharing_findings(with_terms(pod_in(""), "coop", terms)).empty());
    }
  }
  for (const char* value : {"4", "1", ""}) {
    INFO("nodeSelector value " << value);
    Json pod = pod_in("secure");
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.replicas"] = value;
    auto fs = sharing_findings(pod);
    INFO(all(fs));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].field == "spec.nodeSelector[\"nvidia.com/gpu.replicas\"]");
  }
}

TEST_CASE("gpu-sharing: a -SHARED product selected by nodeSelector or In is refused; other product constraints are not",
          "[gpu-sharing][node-constraints]") {
  for (const char* value : {"A100-SXM4-80GB-SHARED", "H100-SXM5-80GB-shared", "-SHARED", "NVIDIA-A10-Shared"}) {
    INFO("product " << value);
    Json pod = pod_in("secure");
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = value;
    auto fs = sharing_findings(pod);
    INFO(all(fs));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].field == "spec.nodeSelector[\"nvidia.com/gpu.product\"]");
    for (size_t position = 0; position < 2; ++position) {
      std::vector<std::vector<Json>> terms(2);
      terms[position].push_back(requirement("nvidia.com/gpu.product", "In", {"A100-SXM4-80GB", value}));
      auto in = sharing_findings(with_terms(pod_in(""), "secure", terms));
      INFO(all(in));
      REQUIRE(in.size() == 1);
      CHECK(in[0].field == kTerms + "[" + std::to_string(position) + "].matchExpressions[1]");
    }
  }
  for (const char* value : {"A100-SXM4-80GB", "SHARED", "A100-SHARED-X", "A100-SXM4-80GB-MIG-1g.10gb"}) {
    INFO("product " << value);
    Json pod = pod_in("secure");
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = value;
    CHECK(sharing_findings(pod).empty());
  }
  for (const std::vector<std::string>& values :
       std::vector<std::vector<std::string>>{{"A100-SXM4-80GB"}, {"A100-SXM4-80GB", "H100-SXM5-80GB"}, {}}) {
    INFO("In with " << values.size() << " values");
    CHECK(sharing_findings(with_terms(pod_in(""), "secure", {{requirement("nvidia.com/gpu.product", "In", values)}}))
              .empty());
  }
}

TEST_CASE("gpu-sharing: a product constraint by an operator that does not name products is refused, in every ORed term; "
          "DoesNotExist is not",
          "[gpu-sharing][node-constraints]") {
  // Every operator but In (and DoesNotExist: every GPU node carries the product label) can select
  // a -SHARED node, whatever its values; spellings the API server refuses are refused too.
  const std::vector<Op> refused = {{"NotIn", {"A100-SXM4-80GB"}},
                                   {"NotIn", {"A100-SXM4-80GB-SHARED"}},
                                   {"NotIn", {"A100-SXM4-80GB-SHARED", "H100-SXM5-80GB-SHARED"}},
                                   {"Exists", {}},
                                   {"Gt", {"1"}},
                                   {"Lt", {"8"}},
                                   {"notin", {"A100-SXM4-80GB"}},
                                   {"exists", {}},
                                   {"", {"A100-SXM4-80GB"}},
                                   {"Equals", {"A100-SXM4-80GB"}}};
  for (const Op& op : refused) {
    for (size_t position = 0; position < 2; ++position) {
      INFO("operator '" << op.op << "' in term " << position);
      std::vector<std::vector<Json>> terms(2);
      terms[position].push_back(requirement("nvidia.com/gpu.product", op.op, op.values));
      auto fs = sharing_findings(with_terms(pod_in(""), "secure", terms));
      INFO(all(fs));
      REQUIRE(fs.size() == 1);
      CHECK(fs[0].field == kTerms + "[" + std::to_string(position) + "].matchExpressions[1]");
      // The message names the constraint as written (an operator the API server refuses shows its
      // values, none included).
      std::string constraint = "nvidia.com/gpu.product " + op.op;
      if (op.op != "Exists") {
        constraint += " [";
        for (size_t i = 0; i < op.values.size(); ++i) constraint += (i ? ", " : "") + op.values[i];
        constraint += "]";
      }
      CHECK(fs[0].message.find("node constraint " + constraint + " can select time-sliced GPU nodes") !=
            std::string::npos);
      CHECK(fs[0].message.find("adversarial pool \"secure\"") != std::string::npos);
      // Not in a cooperative pool.
      CHECK(sharing_findings(with_terms(pod_in(""), "coop", terms)).empty());
    }
  }
  // DoesNotExist selects only nodes without GPUs.
  for (size_t position = 0; position < 2; ++position) {
    std::vector<std::vector<Json>> terms(2);
    terms[position].push_back(requirement("nvidia.com/gpu.product", "DoesNotExist", {}));
    CHECK(sharing_findings(with_terms(pod_in(""), "secure", terms)).empty());
  }
  // Two product constraints in one term: each is judged (In with a plain value, NotIn).
  auto fs = sharing_findings(with_terms(pod_in(""), "secure",
                                        {{requirement("nvidia.com/gpu.product", "In", {"A100-SXM4-80GB"}),
                                          requirement("nvidia.com/gpu.product", "NotIn", {"H100-SXM5-80GB"})}}));
  INFO(all(fs));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].field == kTerms + "[0].matchExpressions[2]");
  CHECK(fs[0].message.find("nvidia.com/gpu.product NotIn [H100-SXM5-80GB]") != std::string::npos);
}

TEST_CASE("gpu-sharing: shared and fractional resources in every container kind, reported once each",
          "[gpu-sharing][resources]") {
  struct Kind {
    const char* list;
    bool restartable;
  };
  const std::vector<Kind> kinds = {{"initContainers", false}, {"initContainers", true}, {"containers", false},
                                   {"ephemeralContainers", false}};
  const std::vector<std::string> resources = {"nvidia.com/gpu.shared", "nvidia.com/gpumem",
                                              "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"};
  for (const Kind& kind : kinds) {
    for (const auto& resource : resources) {
      for (const char* placement : {"limits", "requests", "both"}) {
        INFO(kind.list << (kind.restartable ? " (sidecar)" : "") << " " << resource << " in " << placement);
        Json pod = pod_in("secure");
        Json c = {{"name", "under-test"}, {"image", "registry.example.com/app:1"}};
        if (kind.restartable) c["restartPolicy"] = "Always";
        const std::string p(placement);
        if (p != "requests") c["resources"]["limits"][resource] = "1";
        if (p != "limits") c["resources"]["requests"][resource] = 1;
        if (std::string(kind.list) == "containers") pod["spec"]["containers"].push_back(c);
        else pod["spec"][kind.list] = Json::array({c});
        auto fs = sharing_findings(pod);
        INFO(all(fs));
        REQUIRE(fs.size() == 1);
        const size_t index = std::string(kind.list) == "containers" ? 1 : 0;
        CHECK(fs[0].field == "spec." + std::string(kind.list) + "[" + std::to_string(index) + "].resources." +
                                 (p == "limits" ? "limits" : "requests") + "[\"" + resource + "\"]");
        CHECK(fs[0].message.find("\"under-test\" asks for " + resource) != std::string::npos);
        CHECK(fs[0].message.find("adversarial pool \"secure\"") != std::string::npos);

        pod["spec"]["nodeSelector"]["pool"] = "coop";
        CHECK(of_rule(judge(pod), policy::RuleId::GpuSharing).empty());
      }
    }
  }
  // Zero counts ask for nothing; other resources are not sharing.
  Json pod = pod_in("secure");
  pod["spec"]["containers"][0]["resources"]["limits"] = {
      {"nvidia.com/gpu.shared", 0}, {"nvidia.com/gpumem", "0"}, {"nvidia.com/gpucores", "0m"},
      {"nvidia.com/gpu", 1},        {"example.com/gpumem", 4}};
  CHECK(sharing_findings(pod).empty());
}

TEST_CASE("gpu-sharing: in a time-sliced adversarial pool every GPU pod is refused, however it asks",
          "[gpu-sharing][pool]") {
  auto pool_finding = [](const std::vector<policy::Finding>& fs) {
    for (const auto& f : fs)
      if (f.field == "spec" && f.message == "pool \"ts\" is adversarial and shares its GPUs by time-slicing") return true;
    return false;
  };
  Json gpu = pod_in("ts");
  gpu["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpu", 1}};
  CHECK(pool_finding(sharing_findings(gpu)));
  Json fraction = pod_in("ts");
  fraction["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpumem-percentage", 30}};
  CHECK(pool_finding(sharing_findings(fraction)));
  Json claim_pod = pod_in("ts");
  claim_pod["spec"]["resourceClaims"] = Json::array({{{"name", "gpu"}, {"resourceClaimName", "one"}}});
  claim_pod["spec"]["containers"][0]["resources"]["claims"] = Json::array({{{"name", "gpu"}}});
  const Json one = Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "one", "namespace": "team"},
      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})");
  auto fs = sharing_findings(claim_pod, {one});
  INFO(all(fs));
  CHECK(pool_finding(fs));
  CHECK(fs.size() == 1);
  // No GPU: nothing to share.
  CHECK(sharing_findings(pod_in("ts")).empty());
  // A cooperative pool may time-slice.
  gpu["spec"]["nodeSelector"]["pool"] = "coop";
  CHECK(sharing_findings(gpu).empty());
}

TEST_CASE("fractional resources make a GPU pod that counts no GPUs", "[gpu-sharing][fractional]") {
  SECTION("a fraction alone: pinned to the default pool, tolerations required, hide-gpus spares its container") {
    Json pod = pod_in("");
    pod["spec"].erase("tolerations");
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpumem", "4000"}};
    pod["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "registry.example.com/log:1"}});
    policy_test::Judged r = judge(pod);
    INFO(r.patch.dump());
    REQUIRE(r.decision.pool);
    CHECK(r.decision.pool->name == "coop");
    CHECK(r.mutated["spec"]["nodeSelector"]["pool"] == "coop");
    CHECK(r.decision.gpu_slices == 0);
    CHECK(of_rule(r, policy::RuleId::GpuTolerations).size() == 1);
    CHECK_FALSE(r.mutated["spec"]["containers"][0].contains("env"));
    CHECK(r.mutated["spec"]["containers"][1]["env"][0]["value"] == "void");
    CHECK(of_rule(r, policy::RuleId::GpuCap).empty());
  }
  SECTION("beside a GPU: the GPU is counted once, the fraction not at all") {
    Json pod = pod_in("coop");
    pod["spec"]["containers"][0]["resources"]["limits"] = {
        {"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", "4000"}, {"nvidia.com/gpucores", "30"}};
    policy_test::Judged r = judge(pod);
    CHECK(r.decision.gpu_slices == 7);
    CHECK(of_rule(r, policy::RuleId::GpuCap).empty());  // cap 1: the fractions add nothing
    CHECK(r.decision.allowed);
  }
  SECTION("a fraction that is not a whole number is no GPU quantity for gpu-cap, and still asks") {
    Json pod = pod_in("coop");
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpumem-percentage", "12.5"}};
    policy_test::Judged r = judge(pod, {}, false);
    CHECK(of_rule(r, policy::RuleId::GpuCap).empty());
    CHECK(r.decision.gpu_slices == 0);
    CHECK(of_rule(r, policy::RuleId::TenantPool).empty());  // pinned: a GPU pod in its pool
  }
  SECTION("a zero fraction asks for nothing") {
    Json pod = pod_in("");
    pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/gpucores", 0}};
    policy_test::Judged r = judge(pod);
    CHECK(r.decision.pool == nullptr);  // not pinned: no GPU pod
  }
}

namespace {

// A claim (or template) of `version` whose one request "gpu" is `request` (v1 / v1beta2 wrap the
// device fields in `exactly` unless the request uses firstAvailable; v1beta1 keeps them flat).
Json claim_of(const std::string& version, bool templ, const std::string& name, const Json& request,
              const Json& config = Json()) {
  Json req = {{"name", "gpu"}};
  if (request.contains("firstAvailable") || version == "v1beta1") {
    for (auto it = request.begin(); it != request.end(); ++it) req[it.key()] = it.value();
  } else {
    req["exactly"] = request;
  }
  Json devices = {{"requests", Json::array({req})}};
  if (!config.is_null()) devices["config"] = config;
  Json out = {{"apiVersion", "resource.k8s.io/" + version},
              {"kind", templ ? "ResourceClaimTemplate" : "ResourceClaim"},
              {"metadata", {{"name", name}, {"namespace", "team"}}}};
  if (templ) out["spec"] = {{"spec", {{"devices", devices}}}};
  else out["spec"] = {{"devices", devices}};
  return out;
}

Json claim_pod(const std::string& pool, bool templ, const std::string& name) {
  Json pod = pod_in(pool);
  pod["spec"]["resourceClaims"] =
      Json::array({{{"name", "gpu"}, {templ ? "resourceClaimTemplateName" : "resourceClaimName", name}}});
  pod["spec"]["containers"][0]["resources"]["claims"] = Json::array({{{"name", "gpu"}}});
  return pod;
}

Json nvidia_config(const std::string& kind, const std::string& strategy, const std::vector<std::string>& requests = {}) {
  Json parameters = {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", kind}};
  parameters["sharing"]["strategy"] = strategy;
  Json c;
  c["opaque"] = {{"driver", "gpu.nvidia.com"}, {"parameters", parameters}};
  if (!requests.empty()) c["requests"] = requests;
  return Json::array({c});
}

const std::vector<std::string> kVersions = {"v1", "v1beta2", "v1beta1"};

}  // namespace

TEST_CASE("gpu-sharing: a DRA GPU request for a share of a device, in every API shape", "[gpu-sharing][dra]") {
  const Json capacity = {{"requests", {{"memory", "10Gi"}}}};
  const Json gpu_share = {{"deviceClassName", "gpu.nvidia.com"}, {"capacity", capacity}};
  const Json first_available = {
      {"firstAvailable", Json::array({{{"name", "whole"}, {"deviceClassName", "gpu.nvidia.com"}},
                                      {{"name", "part"}, {"deviceClassName", "mig.nvidia.com"}, {"capacity", capacity}}})}};
  const Json empty_capacity = {{"deviceClassName", "gpu.nvidia.com"}, {"capacity", Json::object()}};
  for (const auto& version : kVersions) {
    for (const bool templ : {false, true}) {
      for (const Json* request : {&gpu_share, &first_available, &empty_capacity}) {
        INFO(version << (templ ? " template " : " claim ") << request->dump());
        const Json claim = claim_of(version, templ, "share", *request);
        auto fs = sharing_findings(claim_pod("secure", templ, "share"), {claim});
        INFO(all(fs));
        REQUIRE(fs.size() == 1);
        CHECK(fs[0].field == "spec.resourceClaims[0]");
        CHECK(fs[0].message.find("request \"gpu\" asks for a share of a device (capacity.requests)") !=
              std::string::npos);
        CHECK(sharing_findings(claim_pod("coop", templ, "share"), {claim}).empty());
      }
      // Capacity on a class that hands out no GPUs is not a GPU share.
      const Json nic = claim_of(version, templ, "nic", {{"deviceClassName", "nic.example.com"}, {"capacity", capacity}});
      CHECK(sharing_findings(claim_pod("secure", templ, "nic"), {nic}).empty());
      const Json whole = claim_of(version, templ, "whole", {{"deviceClassName", "gpu.nvidia.com"}});
      CHECK(sharing_findings(claim_pod("secure", templ, "whole"), {whole}).empty());
    }
  }
}

TEST_CASE("gpu-sharing: a DRA driver config asking for time-slicing, in every API shape", "[gpu-sharing][dra]") {
  const Json request = {{"deviceClassName", "mig.nvidia.com"}};
  struct Case {
    std::string kind, strategy;
    std::vector<std::string> requests;
    bool shared;
  };
  const std::vector<Case> cases = {
      {"GpuConfig", "TimeSlicing", {}, true},           {"MigDeviceConfig", "timeslicing", {}, true},
      {"GpuConfig", "TIMESLICING", {"gpu"}, true},      {"GpuConfig", "TimeSlicing", {"gpu/sub"}, true},
      {"GpuConfig", "TimeSlicing", {"other"}, false},   {"GpuConfig", "MPS", {}, false},
      {"GpuConfig", "Time-Slicing", {}, false},         {"VfioDeviceConfig", "TimeSlicing", {}, false},
  };
  for (const auto& version : kVersions) {
    for (const Case& c : cases) {
      INFO(version << " " << c.kind << " " << c.strategy << " for " << c.requests.size() << " requests");
      const Json claim = claim_of(version, false, "ts", request, nvidia_config(c.kind, c.strategy, c.requests));
      auto fs = sharing_findings(claim_pod("secure", false, "ts"), {claim});
      INFO(all(fs));
      REQUIRE(fs.size() == (c.shared ? 1u : 0u));
      if (c.shared)
        CHECK(fs[0].message == "claim ts: request \"gpu\" asks the GPU driver for time-slicing (sharing.strategy: "
                               "TimeSlicing) in adversarial pool \"secure\"");
    }
    // Another driver's parameters are its own.
    Json other = claim_of(version, false, "ts", request, nvidia_config("GpuConfig", "TimeSlicing"));
    other["spec"]["devices"]["config"][0]["opaque"]["driver"] = "example.com/gpu";
    CHECK(sharing_findings(claim_pod("secure", false, "ts"), {other}).empty());
  }
}

TEST_CASE("gpu-sharing: a claim that cannot be found fails closed in an adversarial pool", "[gpu-sharing][dra]") {
  for (const bool templ : {false, true}) {
    INFO((templ ? "template" : "claim"));
    auto fs = sharing_findings(claim_pod("secure", templ, "missing"));
    INFO(all(fs));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].field == "spec.resourceClaims[0]");
    CHECK(fs[0].message == std::string("cannot judge the sharing of ") +
                               (templ ? "ResourceClaimTemplate" : "ResourceClaim") +
                               " missing: not found in adversarial pool \"secure\"");
    CHECK(sharing_findings(claim_pod("coop", templ, "missing")).empty());
  }
  // A claim whose capacity is not readable does not decode: it is not found, and refused.
  Json bad = claim_of("v1", false, "bad", {{"deviceClassName", "gpu.nvidia.com"}, {"capacity", {{"requests", "lots"}}}});
  policy_test::TestClaims inputs;
  CHECK_FALSE(inputs.add(bad, "team"));
  CHECK(sharing_findings(claim_pod("secure", false, "bad")).size() == 1);
}
