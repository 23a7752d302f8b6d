// Helpers shared by the mutation and "validate as received" tests (test_mutations.cpp,
// test_mig_resources.cpp, test_hide_gpus.cpp, test_validate_as_received.cpp): policies that stay
// loaded for the whole run, evaluation of one object through policy/ (policy_judge.h, the path
// `check` takes), patch checks with nlohmann's RFC 6902 implementation, and finding lookups.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <string>

#include "policy/evaluation/decision.h"
#include "policy/base/ids.h"
#include "policy/evaluation/patch.h"
#include "webhook/io/policy_file.h"
#include "test_paths.h"
#include "test/policy/policy_judge.h"

namespace mutation_test {

using gpu_admission::Json;
using Plain = nlohmann::json;  // std::map objects: equality does not depend on key order
namespace policy = gpu_admission::policy;
namespace webhook = gpu_admission::webhook;
using policy_test::Judged;

inline const policy::CompiledPolicy& fixture_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_file(
      (std::filesystem::path(test_paths::source_dir()) / "test" / "fixtures" / "policy.yaml").string());
  if (!load.ok()) FAIL("test/fixtures/policy.yaml does not load:\n" << load.report());
  return *load.policy;
}

// Loads an inline policy; it stays loaded for the whole test run.
inline const policy::CompiledPolicy& load_policy(const std::string& text, const std::string& name) {
  static std::deque<webhook::PolicyLoad> keep;
  webhook::PolicyLoad load = webhook::load_policy_text(text, name);
  if (!load.ok()) FAIL(name << " does not load:\n" << load.report());
  keep.push_back(std::move(load));
  return *keep.back().policy;
}

inline Plain plain(const Json& j) { return Plain::parse(j.dump()); }

// `mutate` false: a Pod is judged as it is (`check --no-mutate`, what /validate alone says);
// workload templates are always judged after mutation.
inline Judged eval(const policy::CompiledPolicy& p, const Json& object, const std::string& ns = "", bool mutate = true) {
  Judged r = policy_test::judge(p, object, ns, mutate);
  INFO(r.note);
  REQUIRE(r.status == Judged::Status::Evaluated);
  return r;
}

inline std::string findings(const policy::Decision& d) {
  std::string out;
  for (const auto& f : d.findings)
    out += "[" + std::string(policy::name_of(f.rule)) + "] " + f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

inline bool has_finding(const policy::Decision& d, policy::RuleId rule) {
  return std::any_of(d.findings.begin(), d.findings.end(), [&](const auto& f) { return f.rule == rule; });
}

// A deny finding of `rule` at `field` whose message contains `words` (empty: any message).
inline bool denies_at(const policy::Decision& d, policy::RuleId rule, const std::string& field,
                      const std::string& words = "") {
  return std::any_of(d.findings.begin(), d.findings.end(), [&](const policy::Finding& f) {
    return f.rule == rule && f.action == policy::Action::Deny && f.field == field &&
           f.message.find(words) != std::string::npos;
  });
}

inline int count_findings(const policy::Decision& d, policy::RuleId rule) {
  return static_cast<int>(
      std::count_if(d.findings.begin(), d.findings.end(), [&](const auto& f) { return f.rule == rule; }));
}

inline bool mutated(const policy::Decision& d, policy::MutationId id) { return d.mutated[static_cast<size_t>(id)]; }

// Evaluating the mutated object again asks for nothing more (mutations are idempotent)
// and reaches the same verdict.
inline void check_idempotent(const policy::CompiledPolicy& p, const Judged& r,
                             const std::string& ns = "") {
  Judged again = eval(p, r.mutated, ns);
  INFO("second patch: " << again.patch.dump() << "\nsecond findings: " << findings(again.decision));
  CHECK(again.decision.patch.empty());
  CHECK(again.patch == Json::array());
  CHECK(again.decision.allowed == r.decision.allowed);
  CHECK(again.decision.gpu_slices == r.decision.gpu_slices);
  CHECK(again.decision.findings.size() == r.decision.findings.size());
}

// Applies our patch with nlohmann's RFC 6902 implementation, checks it against the object
// policy_test::judge produced and against `expected`, then checks idempotency.
inline void check_applied(const policy::CompiledPolicy& p, const Json& input, const Judged& r,
                          const Plain& expected, const std::string& ns = "") {
  INFO("patch: " << r.patch.dump());
  Plain applied = plain(input).patch(plain(r.patch));
  CHECK(applied == expected);
  CHECK(plain(r.mutated) == applied);
  check_idempotent(p, r, ns);
}

inline const char* kSecureTolerations = R"([
  {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
  {"key": "gpu.example.com/pool", "operator": "Equal", "value": "a100-secure", "effect": "NoSchedule"}])";
inline const char* kGpuToleration = R"([{"key": "nvidia.com/gpu", "operator": "Exists"}])";
inline const char* kTolerateAll = R"([{"operator": "Exists"}])";

// A Pod with one container "train" with `resources`, in namespace `ns`.
inline Json gpu_pod(const std::string& ns, const Json& resources, const char* tolerations = kSecureTolerations) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"},
                             "spec": {"containers": [{"name": "train", "image": "registry.example.com/train:1"}]}})");
  pod["metadata"]["namespace"] = ns;
  pod["spec"]["tolerations"] = Json::parse(tolerations);
  pod["spec"]["containers"][0]["resources"] = resources;
  return pod;
}

// The env op hide-gpus adds to a container that has no env list.
inline Json void_env_op(const std::string& container_path) {
  return Json{{"op", "add"},
              {"path", container_path + "/env"},
              {"value", Json::array({Json{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "void"}}})}};
}

}  // namespace mutation_test
