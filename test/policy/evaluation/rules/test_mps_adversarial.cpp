// Red-team tests of mps-adversarial's env and hostPath classes (policy/evaluation/rules/mps_adversarial.cpp,
// policy/views/host_path.cpp): in an adversarial pool, every spelling of an MPS pipe directory, of
// anything under it and of every directory above it is denied; so is every CUDA_MPS_* env var and
// every envFrom prefix that can spell one. The same pods in a cooperative pool are not reported.
// The expected lists are written from the rule's contract, not read from the implementation.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "policy/evaluation/decision.h"
#include "policy/views/host_path.h"
#include "policy/base/ids.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

const policy::CompiledPolicy& mps_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: mps-red-team}
spec:
  mutations: {hide-gpus: false}
  pools:
    - {name: secure, nodeSelector: {pool: secure}, trust: adversarial}
    - {name: coop, nodeSelector: {pool: coop}, trust: cooperative}
  tenants:
    - {name: t, namespaces: [team], pools: [secure, coop], defaultPool: secure}
)",
                                                                     "mps-red-team.yaml");
  if (!load.ok()) FAIL("the MPS policy does not load:\n" << load.report());
  return *load.policy;
}

const std::vector<std::string> kPipeDirs = {"/tmp/nvidia-mps", "/run/nvidia/mps"};
const std::vector<std::string> kAncestors = {"/", "/tmp", "/run", "/run/nvidia"};
const std::vector<std::string> kNeighbours = {"/tmp/nvidia-mps-logs", "/tmp/other", "/tmp/nvidia", "/run/nvidia-mps",
                                              "/run/nvidia/driver", "/run/nvidia/mpsx", "/var/tmp/nvidia-mps",
                                              "/data/tmp/nvidia-mps", "/tmp/x/nvidia-mps", "/var/lib/mps"};

// Spellings of the normalized absolute path `p` that the kernel resolves to `p`.
std::vector<std::string> spellings(const std::string& p) {
  std::vector<std::string> out = {p, p + "/", p + "//", p + "/.", "/." + p, "/.." + p};
  if (p != "/") out.push_back(p.substr(1));
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] != '/' || p == "/") continue;
    out.push_back(p.substr(0, k) + "/" + p.substr(k));
    out.push_back(p.substr(0, k) + "/." + p.substr(k));
    out.push_back(p.substr(0, k) + "/x/.." + p.substr(k));
  }
  if (p == "/run" || p.starts_with("/run/")) {
    for (std::string alias : {"/var/run", "/var//run", "/var/./run", "/run/../var/run"})
      out.push_back(alias + p.substr(4));
  }
  return out;
}

Json pod_in(const std::string& pool) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
      "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1"}]}})");
  pod["spec"]["nodeSelector"] = {{"pool", pool}};
  return pod;
}

std::vector<policy::Finding> mps_findings(const Json& object) {
  policy_test::Judged r = policy_test::judge(mps_policy(), object, "team");
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  REQUIRE(r.decision.pool);
  std::vector<policy::Finding> out;
  for (const auto& f : r.decision.findings)
    if (f.rule == policy::RuleId::MpsAdversarial) out.push_back(f);
  return out;
}

std::string all(const std::vector<policy::Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

bool has_field(const std::vector<policy::Finding>& fs, const std::string& field) {
  for (const auto& f : fs)
    if (f.field == field && !f.message.empty()) return true;
  return false;
}

// Whether mps-adversarial reports the hostPath `path` in `pool`.
bool host_path_reported(const std::string& pool, const std::string& path) {
  Json pod = pod_in(pool);
  pod["spec"]["volumes"] = Json::array({{{"name", "host"}, {"hostPath", {{"path", path}}}}});
  auto fs = mps_findings(pod);
  INFO(pool << " hostPath " << path << ": " << all(fs));
  CHECK(fs.size() <= 1);
  return has_field(fs, "spec.volumes[0].hostPath.path");
}

// A pod in `pool` whose container (index 0 of `list`) has env [HARMLESS, var] and, with a
// prefix, envFrom [{configMapRef}, {prefix, configMapRef}].
Json pod_with_env(const std::string& pool, const std::string& list, const Json& var, const char* prefix = nullptr) {
  Json pod = pod_in(pool);
  Json c = {{"name", "under-test"}, {"image", "registry.example.com/app:1"}};
  c["env"] = Json::array({{{"name", "HARMLESS"}, {"value", "1"}}});
  if (!var.is_null()) c["env"].push_back(var);
  if (prefix) {
    c["envFrom"] = Json::array({{{"configMapRef", {{"name", "plain"}}}}});
    c["envFrom"].push_back({{"prefix", prefix}, {"configMapRef", {{"name", "keys"}}}});
  }
  if (list == "containers") pod["spec"]["containers"] = Json::array({c});
  else pod["spec"][list] = Json::array({c});
  return pod;
}

const std::vector<std::string> kLists = {"containers", "initContainers", "ephemeralContainers"};

}  // namespace

TEST_CASE("the MPS host path table is the pipe directories and their derived ancestors",
          "[mps-adversarial][host-path]") {
  std::set<std::string> subtrees, exact;
  for (const auto& e : policy::mps_pipe_host_paths().entries()) {
    INFO(e.display << ": " << e.reason);
    CHECK_FALSE(e.reason.empty());
    CHECK(e.match != policy::HostPathMatch::NamePrefix);
    (e.match == policy::HostPathMatch::Subtree ? subtrees : exact).insert(e.path);
  }
  CHECK(subtrees == std::set<std::string>(kPipeDirs.begin(), kPipeDirs.end()));
  CHECK(exact == std::set<std::string>(kAncestors.begin(), kAncestors.end()));
}

TEST_CASE("MPS pipe directories, everything under them and every directory above them are denied in an "
          "adversarial pool, in every spelling",
          "[mps-adversarial][host-path]") {
  std::vector<std::string> denied = kPipeDirs;
  for (const auto& d : kPipeDirs) {
    denied.push_back(d + "/control");
    denied.push_back(d + "/a/b/log");
  }
  denied.insert(denied.end(), kAncestors.begin(), kAncestors.end());
  for (const auto& p : denied) {
    for (const auto& s : spellings(p)) {
      INFO("spelling " << s << " of " << p);
      CHECK(host_path_reported("secure", s));
      CHECK_FALSE(host_path_reported("coop", s));
    }
  }
  for (const auto& n : kNeighbours) {
    CHECK_FALSE(host_path_reported("secure", n));
    CHECK_FALSE(host_path_reported("secure", n + "/child"));
  }
  for (const auto& a : kAncestors) CHECK_FALSE(host_path_reported("secure", (a == "/" ? "" : a) + "/unrelated-child"));
}

TEST_CASE("every CUDA_MPS_* env var is denied in an adversarial pool, as a value or through valueFrom",
          "[mps-adversarial][env]") {
  const std::vector<Json> hows = {{{"value", "/tmp/nvidia-mps"}},
                                  {{"value", ""}},
                                  {{"valueFrom", {{"configMapKeyRef", {{"name", "mps"}, {"key", "dir"}}}}}}};
  for (const auto& list : kLists) {
    const std::string field = "spec." + list + "[0].env[1]";
    for (const char* name : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                             "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_MPS_CLIENT_PRIORITY", "CUDA_MPS_"}) {
      for (const auto& how : hows) {
        Json var = how;
        var["name"] = name;
        auto fs = mps_findings(pod_with_env("secure", list, var));
        INFO(list << " " << var.dump() << ": " << all(fs));
        CHECK(has_field(fs, field));
        CHECK(mps_findings(pod_with_env("coop", list, var)).empty());
      }
    }
    for (const char* name : {"CUDA_VISIBLE_DEVICES", "CUDA_MPS", "cuda_mps_pipe_directory", "MY_CUDA_MPS_X"}) {
      auto fs = mps_findings(pod_with_env("secure", list, {{"name", name}, {"value", "x"}}));
      INFO(list << " " << name << ": " << all(fs));
      CHECK(fs.empty());
    }
  }
}

TEST_CASE("an envFrom prefix that can spell a CUDA_MPS_* name is denied in an adversarial pool",
          "[mps-adversarial][env]") {
  std::vector<std::string> forming;
  const std::string mps = "CUDA_MPS_";
  for (size_t k = 1; k <= mps.size(); ++k) forming.push_back(mps.substr(0, k));  // C, CU, ..., CUDA_MPS_
  for (const char* longer : {"CUDA_MPS_PIPE_", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_X"}) forming.push_back(longer);
  for (const auto& list : kLists) {
    const std::string field = "spec." + list + "[0].envFrom[1].prefix";
    for (const auto& prefix : forming) {
      auto fs = mps_findings(pod_with_env("secure", list, nullptr, prefix.c_str()));
      INFO(list << " prefix " << prefix << ": " << all(fs));
      CHECK(fs.size() == 1);
      CHECK(has_field(fs, field));
      CHECK(mps_findings(pod_with_env("coop", list, nullptr, prefix.c_str())).empty());
    }
    for (const char* prefix : {"", "CUDA_VISIBLE_", "cuda_mps_", "X", "CUDA_MP_", "NVIDIA_", "MY_CUDA_MPS_", "CUDAX"}) {
      auto fs = mps_findings(pod_with_env("secure", list, nullptr, prefix));
      INFO(list << " prefix \"" << prefix << "\": " << all(fs));
      CHECK(fs.empty());
    }
  }
}

namespace {

const std::string kTerms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";

// A pod pinned to `pool` by two ORed terms; `expr` (when not null) is added to term `position`.
Json pod_with_term(const std::string& pool, const Json& expr, size_t position) {
  Json pod = pod_in(pool);
  pod["spec"].erase("nodeSelector");
  Json terms = Json::array();
  for (size_t t = 0; t < 2; ++t) {
    Json term = {{"matchExpressions", Json::array({{{"key", "pool"}, {"operator", "In"}, {"values", {pool}}}})}};
    if (t == position) term["matchExpressions"].push_back(expr);
    terms.push_back(term);
  }
  pod["spec"]["affinity"] = {
      {"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
  return pod;
}

Json requirement(const std::string& key, const std::string& op, const std::vector<std::string>& values) {
  Json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

}  // namespace

TEST_CASE("a node constraint on the MPS node labels is an opt-in under every operator, but sharing-strategy none",
          "[mps-adversarial][node-constraints]") {
  struct Expr {
    std::string key, op;
    std::vector<std::string> values;
    bool opt_in;
  };
  const std::string strategy = "nvidia.com/gpu.sharing-strategy", capable = "nvidia.com/mps.capable";
  const std::vector<Expr> exprs = {
      {strategy, "In", {"mps"}, true},          {strategy, "In", {"none", "mps"}, true},
      {strategy, "In", {"time-slicing"}, true}, {strategy, "NotIn", {"none"}, true},
      {strategy, "NotIn", {"mps"}, true},       {strategy, "Exists", {}, true},
      {strategy, "DoesNotExist", {}, true},     {strategy, "Gt", {"0"}, true},
      {strategy, "Lt", {"9"}, true},            {strategy, "In", {}, true},
      {strategy, "In", {"none"}, false},        {strategy, "In", {"none", "none"}, false},
      {capable, "In", {"true"}, true},          {capable, "NotIn", {"false"}, true},
      {capable, "Exists", {}, true},            {capable, "DoesNotExist", {}, true},
      {capable, "Gt", {"0"}, true},             {capable, "Lt", {"1"}, true},
      {"nvidia.com/gpu.count", "Exists", {}, false}};
  for (const Expr& e : exprs) {
    for (size_t position = 0; position < 2; ++position) {
      INFO(e.key << " " << e.op << " (" << e.values.size() << " values) in term " << position);
      auto fs = mps_findings(pod_with_term("secure", requirement(e.key, e.op, e.values), position));
      INFO(all(fs));
      REQUIRE(fs.size() == (e.opt_in ? 1u : 0u));
      if (e.opt_in) {
        CHECK(has_field(fs, kTerms + "[" + std::to_string(position) + "].matchExpressions[1]"));
        CHECK(fs[0].message.find("can select MPS nodes in adversarial pool \"secure\"") != std::string::npos);
      }
      CHECK(mps_findings(pod_with_term("coop", requirement(e.key, e.op, e.values), position)).empty());
    }
  }
  struct Selector {
    std::string key, value;
    bool opt_in;
  };
  for (const Selector& s : std::vector<Selector>{{strategy, "mps", true},
                                                 {strategy, "time-slicing", true},
                                                 {strategy, "", true},
                                                 {strategy, "None", true},
                                                 {strategy, "none", false},
                                                 {capable, "true", true},
                                                 {capable, "false", true}}) {
    INFO("nodeSelector " << s.key << "=" << s.value);
    Json pod = pod_in("secure");
    pod["spec"]["nodeSelector"][s.key] = s.value;
    auto fs = mps_findings(pod);
    INFO(all(fs));
    REQUIRE(fs.size() == (s.opt_in ? 1u : 0u));
    if (s.opt_in) CHECK(has_field(fs, "spec.nodeSelector[\"" + s.key + "\"]"));
    pod["spec"]["nodeSelector"]["pool"] = "coop";
    CHECK(mps_findings(pod).empty());
  }
}
