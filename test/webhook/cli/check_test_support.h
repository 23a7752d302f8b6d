// What the `gpu-admission check` tests share: running `check -o json` on files, the example
// manifests and what the SPEC says of each, and reading the results back.
#pragma once

#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"
#include "webhook/cli/yaml_test_support.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/examples/policy.yaml";
const std::string kManifests = kSource + "/examples/manifests";
const std::string kData = kSource + "/test/data/cli";

// ------------------------------------------------------------------ running the binary

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::slurp;
using cli_test::load_yaml_docs;

// `check -o json` on `files`, parsed; requires the expected exit code.
[[maybe_unused]] json check_json(const std::vector<std::string>& files, int expected_code, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"check", "--policy", kPolicy, "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), files.begin(), files.end());
  CliRun r = run_cli(args);
  INFO(describe(r));
  REQUIRE(r.code == expected_code);
  json doc;
  REQUIRE_NOTHROW(doc = json::parse(r.out));
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("results"));
  REQUIRE(doc["results"].is_array());
  return doc;
}

[[maybe_unused]] std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kManifests))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// ------------------------------------------------------------------ reading results

[[maybe_unused]] std::set<std::string> rules_with(const json& result, const std::string& action) {
  std::set<std::string> out;
  for (const auto& v : result["violations"])
    if (v["action"] == action) out.insert(v["rule"].get<std::string>());
  return out;
}

[[maybe_unused]] const json* result_named(const json& doc, const std::string& name) {
  for (const auto& r : doc["results"])
    if (r["name"] == name) return &r;
  return nullptr;
}

[[maybe_unused]] void check_result_shape(const json& r) {
  INFO(r.dump(2));
  REQUIRE(r.is_object());
  CHECK(r["kind"].is_string());
  CHECK(r["namespace"].is_string());
  CHECK(r["name"].is_string());
  CHECK(r["allowed"].is_boolean());
  REQUIRE(r["violations"].is_array());
  for (const auto& v : r["violations"]) {
    REQUIRE(v.is_object());
    CHECK(v["rule"].is_string());
    CHECK(v["action"].is_string());
    CHECK((v["action"] == "deny" || v["action"] == "warn" || v["action"] == "audit"));
    CHECK(v["message"].is_string());
    CHECK(!v["message"].get<std::string>().empty());
    CHECK(v["field"].is_string());
  }
  REQUIRE(r["warnings"].is_array());
  for (const auto& w : r["warnings"]) CHECK(w.is_string());
  REQUIRE(r["patch"].is_array());
  for (const auto& op : r["patch"]) {
    REQUIRE(op.is_object());
    CHECK(op["op"].is_string());
    CHECK(op["path"].is_string());
    CHECK(op["path"].get<std::string>().rfind("/", 0) == 0);
  }
  CHECK(r["object"].is_object());
  // allowed means: no violation with action deny.
  CHECK(r["allowed"].get<bool>() == rules_with(r, "deny").empty());
}

struct Expected {
  std::string file;
  std::string name;
  bool allowed;
  std::set<std::string> deny, warn, audit;
};

// What the SPEC says for each example manifest under examples/policy.yaml.
const std::vector<Expected> kExpected = {
    {"training-pod.yaml", "bert-finetune", true, {}, {}, {}},
    {"mig-profile-job.yaml", "eval-llama", true, {}, {}, {}},
    {"mps-training-deployment.yaml", "feature-embedder", true, {}, {}, {}},
    {"inference-statefulset.yaml", "triton", true, {}, {}, {}},
    {"preprocess-cronjob.yaml", "shard-dataset", true, {}, {}, {}},
    {"dcgm-exporter-daemonset.yaml", "dcgm-exporter", true, {}, {}, {}},
    {"over-cap-pod.yaml", "big-sweep", true, {}, {}, {"gpu-cap"}},
    {"tenant-label-deployment.yaml", "label-hopper", true, {}, {"tenant-label"}, {}},
    {"privileged-pod.yaml", "debug-shell", false, {"privileged"}, {}, {}},
    {"host-namespaces-pod.yaml", "node-profiler", false, {"host-namespaces"}, {}, {}},
    {"device-access-pod.yaml", "sneaky-notebook", false, {"gpu-device-access"}, {}, {}},
    {"mps-client-pod.yaml", "nbody-mps", false, {"mps-adversarial"}, {}, {}},
    {"time-sliced-replica-pod.yaml", "notebook-slice", false, {"gpu-sharing"}, {}, {}},
    {"missing-toleration-pod.yaml", "cuda-vectoradd", false, {"gpu-tolerations"}, {}, {}},
    {"wrong-pool-pod.yaml", "fast-h100", false, {"tenant-pool"}, {}, {}},
    {"bad-mig-profile-pod.yaml", "wrong-slice", false, {"mig-profile"}, {}, {}},
};

}  // namespace
