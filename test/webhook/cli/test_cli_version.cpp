// `gpu-admission version`: the version, the git commit and the build's flags, as text or JSON,
// the same as the binary's gpu_admission_build_info; bad flags exit 2.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "webhook/cli/cli_test_support.h"
#include "webhook/ops/build_info.h"

using namespace cli_test;

TEST_CASE("version: text and JSON name the version, commit and build", "[cli][version]") {
  const gpu_admission::webhook::BuildInfo& build = gpu_admission::webhook::build_info();
  const CliRun text = run_cli({"version"});
  INFO(describe(text));
  REQUIRE(text.code == 0);
  CHECK(text.out.rfind("gpu-admission " + std::string(build.version) + "\n", 0) == 0);
  CHECK(text.out.find("commit:") != std::string::npos);
  CHECK(text.out.find(std::string(build.commit)) != std::string::npos);
  CHECK(text.out.find("build type:") != std::string::npos);
  CHECK(text.out.find("compiler:") != std::string::npos);
  CHECK(text.out.find("sanitizers:") != std::string::npos);
  CHECK(text.out.find("pgo:") != std::string::npos);
  CHECK(run_cli({"--version"}).out == text.out);

  const CliRun json_run = run_cli({"version", "-o", "json"});
  INFO(describe(json_run));
  REQUIRE(json_run.code == 0);
  const nlohmann::json json = nlohmann::json::parse(json_run.out);
  CHECK(json["version"] == std::string(build.version));
  CHECK(json["commit"] == std::string(build.commit));
  CHECK(json["buildType"] == std::string(build.build_type));
  for (const char* key : {"compiler", "arch", "sanitizers", "pgo"}) CHECK(json[key].is_string());
  CHECK(run_cli({"version", "--output=json"}).out == json_run.out);
}

TEST_CASE("version: bad flags exit 2 and say why", "[cli][version]") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"version", "-o", "yaml"},
                                               std::vector<std::string>{"version", "--bogus"},
                                               std::vector<std::string>{"version", "extra"}}) {
    const CliRun run = run_cli(args);
    INFO(describe(run));
    CHECK(run.code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.find("gpu-admission version: ") == 0);
  }
}
