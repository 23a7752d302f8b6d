// `check` shows each pod's effective GPU request (text: "GPUs: ..."; JSON: "gpus", and
// "gpuSources" where the count is not plain from the resources): DRA extended resources of GPU
// device classes count, other classes do not, and MIG profiles of a pod with no pool count their
// largest share on any model, exactly.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using nlohmann::json;

const std::string kFixtures = std::string(test_paths::source_dir()) + "/test/fixtures";
const std::string kPolicy = kFixtures + "/policy.yaml";

// A Pod in `ns` whose one container has `limits` (JSON), as a file for `check`.
std::string pod_file(const std::string& name, const std::string& ns, const std::string& limits) {
  const std::string path = "/tmp/gpa-gpu-count-" + std::to_string(getpid()) + "-" + name + ".json";
  std::ofstream(path) << R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ")" << name
                      << R"(", "namespace": ")" << ns << R"("}, "spec": {"containers": [{"name": "c", "image": "x",
                         "resources": {"limits": )"
                      << limits << "}}]}}";
  return path;
}

// name -> result of `check -o json` on `files` with the fixture policy.
std::map<std::string, json> check_json(const std::vector<std::string>& files) {
  std::vector<std::string> args = {"check", "-p", kPolicy, "-o", "json"};
  args.insert(args.end(), files.begin(), files.end());
  CliRun r = run_cli(args);
  INFO(describe(r));
  REQUIRE((r.code == 0 || r.code == 1));
  const json doc = json::parse(r.out);
  std::map<std::string, json> out;
  for (const auto& result : doc["results"]) out[result["name"].get<std::string>()] = result;
  return out;
}

}  // namespace

TEST_CASE("check: the GPU count of DRA extended resources and of MIG profiles without a pool", "[cli][check]") {
  const std::string dc = "deviceclass.resource.kubernetes.io/";
  const std::vector<std::string> files = {
      pod_file("a30-seven", "team-gamma", R"({"nvidia.com/mig-1g.6gb": 7})"),
      pod_file("full-class", "beta-dev", R"({")" + dc + R"(gpu.nvidia.com": 2})"),
      pod_file("mig-class", "beta-dev", R"({")" + dc + R"(mig.nvidia.com": 3})"),
      pod_file("both", "beta-dev", R"({"nvidia.com/gpu": 1, ")" + dc + R"(vfio.gpu.nvidia.com": 2})"),
      pod_file("nic-class", "beta-dev", R"({")" + dc + R"(nic.example.com": 4})"),
      pod_file("plain", "beta-dev", R"({"nvidia.com/gpu": 2})"),
  };
  auto results = check_json(files);
  REQUIRE(results.size() == files.size());
  INFO(json(results).dump(2));

  // 7 x 1g.6gb with no pool (gamma has no defaultPool): 1g.6gb is an A30 profile, 1/4 each.
  CHECK(results["a30-seven"]["pool"].is_null());
  CHECK(results["a30-seven"]["gpus"] == "1 3/4");
  CHECK_FALSE(results["a30-seven"].contains("gpuSources"));

  CHECK(results["full-class"]["pool"] == "h100-coop");  // a GPU pod: pinned to beta's default pool
  CHECK(results["full-class"]["gpus"] == "2");
  CHECK(results["full-class"]["gpuSources"] == "2 " + dc + "gpu.nvidia.com");
  CHECK(results["full-class"]["allowed"] == false);  // no toleration of the GPU taint: a GPU pod

  CHECK(results["mig-class"]["gpus"] == "3");
  CHECK(results["mig-class"]["gpuSources"] == "3 " + dc + "mig.nvidia.com (a whole GPU each)");

  CHECK(results["both"]["gpus"] == "3");
  CHECK(results["both"]["gpuSources"] == "3 through resources");

  // Not a GPU class: no GPUs, no pinning, no GPU rules.
  CHECK(results["nic-class"]["gpus"] == "0");
  CHECK(results["nic-class"]["pool"].is_null());
  CHECK(results["nic-class"]["allowed"] == true);

  CHECK(results["plain"]["gpus"] == "2");
  CHECK_FALSE(results["plain"].contains("gpuSources"));  // plain from the resources

  // The text output says the same.
  CliRun text = run_cli({"check", "-p", kPolicy, files[0], files[1]});
  INFO(describe(text));
  CHECK(text.out.find("tenant: gamma, pool: (none), GPUs: 1 3/4\n") != std::string::npos);
  CHECK(text.out.find("GPUs: 2 (2 " + dc + "gpu.nvidia.com)") != std::string::npos);
  for (const auto& f : files) std::remove(f.c_str());
}

TEST_CASE("check: a pod of no tenant that wears a tenant's label is refused", "[cli][check]") {
  CliRun r = run_cli({"check", "-p", kPolicy, "-o", "json", kFixtures + "/tenant-label/fail/unmapped-namespace-claims-tenant.yaml"});
  INFO(describe(r));
  CHECK(r.code == 1);
  const json result = json::parse(r.out)["results"].at(0);
  CHECK(result["tenant"].is_null());
  CHECK(result["violations"].at(0)["rule"] == "tenant-label");
  CHECK(result["violations"].at(0)["field"] == "metadata.labels[\"gpu-admission.io/tenant\"]");
}
