// PodGroups through the real binary: `check` resolves a pod's group among its inputs (and the
// group's claims among the same inputs), judges the group itself, and refuses a pod whose group
// is not among them; `audit` reads PodGroups from files as facts for their pods and judges them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempFile;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/test/fixtures/policy.yaml";
const std::string kFixtures = kSource + "/test/fixtures";

const json* result_of(const json& doc, const std::string& kind, const std::string& name) {
  for (const auto& r : doc["results"])
    if (r["kind"] == kind && r["name"] == name) return &r;
  return nullptr;
}

bool denies(const json& result, const std::string& rule) {
  for (const auto& v : result["violations"])
    if (v["rule"] == rule && v["action"] == "deny") return true;
  return false;
}

}  // namespace

TEST_CASE("podgroup: check resolves a pod's group and the group's claims among its inputs", "[cli][podgroup]") {
  const std::string file = kFixtures + "/gpu-cap/fail/podgroup-v1beta1-pod-plus-group-claim.yaml";
  CliRun r = run_cli({"check", "-p", kPolicy, "-o", "json", file});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const json doc = json::parse(r.out);
  const json* pod = result_of(doc, "Pod", "worker-0");
  REQUIRE(pod);
  CHECK(denies(*pod, "gpu-cap"));
  CHECK((*pod)["gpus"] == "3");
  CHECK((*pod)["gpuSources"].get<std::string>().find("claim two-gpus of PodGroup trainers") != std::string::npos);
  // The group itself: 2 GPUs for each pod, tenant beta's cap.
  const json* group = result_of(doc, "PodGroup", "trainers");
  REQUIRE(group);
  CHECK_FALSE(denies(*group, "gpu-cap"));

  // The pod without its group: the group's claims are unknown, so it is refused, saying why.
  TempFile alone(R"(apiVersion: v1
kind: Pod
metadata: {name: worker-1, namespace: beta-dev}
spec:
  schedulingGroup: {podGroupName: trainers}
  nodeSelector: {gpu.example.com/pool: h100-coop}
  tolerations: [{operator: Exists}]
  containers: [{name: train, image: registry.example.com/app:1.0}]
)");
  CliRun lone = run_cli({"check", "-p", kPolicy, "-o", "json", alone.path.string()});
  INFO(describe(lone));
  REQUIRE(lone.code == 1);
  const json lone_doc = json::parse(lone.out);
  REQUIRE(lone_doc["results"].size() == 1);
  CHECK(denies(lone_doc["results"][0], "gpu-cap"));
  CHECK(lone.out.find("cannot count the GPUs of PodGroup trainers: not found") != std::string::npos);

  // Groups and pods in separate files, given together, resolve as in one file.
  CliRun split = run_cli({"check", "-p", kPolicy, "-o", "json", alone.path.string(), file});
  INFO(describe(split));
  const json split_doc = json::parse(split.out);
  const json* worker = result_of(split_doc, "Pod", "worker-1");
  REQUIRE(worker);
  CHECK((*worker)["gpus"] == "2");
  CHECK_FALSE(denies(*worker, "gpu-cap"));
}

TEST_CASE("podgroup: audit reads PodGroups as facts for their pods and judges them", "[cli][podgroup][audit]") {
  const json claim = {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", {{"name", "three"}, {"namespace", "beta-dev"}, {"uid", "c-1"}}},
                      {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"},
                                                                         {"exactly", {{"deviceClassName", "gpu.nvidia.com"},
                                                                                      {"count", 3}}}}})}}}}}};
  const json group = {{"apiVersion", "scheduling.k8s.io/v1alpha2"},
                      {"kind", "PodGroup"},
                      {"metadata", {{"name", "trainers"}, {"namespace", "beta-dev"}, {"uid", "g-1"}}},
                      {"spec", {{"schedulingPolicy", {{"basic", json::object()}}},
                                {"resourceClaims", json::array({{{"name", "gpus"}, {"resourceClaimName", "three"}}})}}}};
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "worker-0"}, {"namespace", "beta-dev"}, {"uid", "p-1"},
                                  {"labels", {{"gpu-admission.io/tenant", "beta"}}}}},
                    {"spec", {{"schedulingGroup", {{"podGroupName", "trainers"}}},
                              {"nodeSelector", {{"gpu.example.com/pool", "h100-coop"}}},
                              {"tolerations", json::array({{{"operator", "Exists"}}})},
                              {"containers", json::array({{{"name", "main"}, {"image", "i"}}})}}},
                    {"status", {{"phase", "Running"}}}};
  // The pod comes first in the file: the audit still reads the group before judging it.
  TempFile input(json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({pod, group, claim})}}).dump());
  const CliRun r = run_cli({"audit", "-p", kPolicy, "-o", "json", input.path.string()});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const json out = json::parse(r.out);
  CHECK(out["judged"]["PodGroup.scheduling.k8s.io"] == 1);
  CHECK(out["judged"]["Pod"] == 1);
  bool pod_capped = false, group_capped = false;
  for (const auto& s : out["objects"]) {
    for (const auto& f : s["findings"]) {
      if (f["rule"] != "gpu-cap") continue;
      pod_capped = pod_capped || s["kind"] == "Pod";
      group_capped = group_capped || s["kind"] == "PodGroup";
    }
  }
  CHECK(pod_capped);
  CHECK(group_capped);
}
