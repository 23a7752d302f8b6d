// Tenants by namespace labels through the real binary: Namespace objects among
// `check`'s inputs, --namespace-labels, and a test case's namespaceLabels.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using nlohmann::json;

const std::string kData = std::string(test_paths::source_dir()) + "/test/data/namespaces";

json check(const std::vector<std::string>& extra, int code) {
  std::vector<std::string> args = {"check", "-p", kData + "/policy.yaml", "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliRun r = run_cli(args);
  INFO(describe(r));
  REQUIRE(r.code == code);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("check: a Namespace among the inputs gives its labels to tenant selection", "[cli][tenancy]") {
  json doc = check({kData + "/ml-team.yaml"}, 1);
  REQUIRE(doc["results"].size() == 1);
  CHECK(doc["results"][0]["tenant"] == "alpha");
  CHECK(doc["results"][0]["violations"][0]["rule"] == "gpu-cap");
}

TEST_CASE("check: --namespace-labels labels the namespaces that have no Namespace object", "[cli][tenancy]") {
  json labelled = check({"--namespace-labels", "tenant.example.com/name=alpha,team=ml", kData + "/pod.yaml"}, 1);
  CHECK(labelled["results"][0]["tenant"] == "alpha");
  json unlabelled = check({kData + "/pod.yaml"}, 1);
  CHECK(unlabelled["results"][0]["tenant"].is_null());
  CHECK(unlabelled["results"][0]["violations"][0]["rule"] == "tenant-pool");
  CliRun bad = run_cli({"check", "-p", kData + "/policy.yaml", "--namespace-labels", "novalue", kData + "/pod.yaml"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--namespace-labels: \"novalue\" is not key=value") != std::string::npos);
}

TEST_CASE("test: a case's namespaceLabels choose its tenant", "[cli][tenancy]") {
  CliRun r = run_cli({"test", kData + "/suite.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("2 passed, 0 failed") != std::string::npos);
}
