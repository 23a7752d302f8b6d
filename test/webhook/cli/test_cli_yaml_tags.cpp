// `gpu-admission check` reads tagged YAML scalars as kubectl does (sigs.k8s.io/yaml, go-yaml v2):
// a `!!binary` scalar is the text its base64 decodes to, so an env name, host path, annotation
// key or label written that way is judged as what the API server receives; a tag kubectl refuses
// (`!!int` on text, invalid base64) makes the input unusable, with its file:line:col.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::TempFile;

const std::string kPolicy = std::string(test_paths::source_dir()) + "/examples/policy.yaml";

// A CPU pod in namespace `research`; `metadata` and `container` are extra lines (indented by 2
// and 6), `volumes` the pod's volumes block (indented by 2).
std::string pod(const std::string& metadata, const std::string& container, const std::string& volumes = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: tagged\n  namespace: research\n" + metadata +
         "spec:\n  containers:\n    - name: main\n      image: busybox:1.36\n" + container + volumes;
}

nlohmann::json check_result(const TempFile& file) {
  CliRun r = run_cli({"check", "--policy", kPolicy, "-o", "json", file.path.string()});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["results"].size() == 1);
  return doc["results"][0];
}

bool has_violation(const nlohmann::json& result, const std::string& rule, const std::string& field) {
  for (const auto& v : result["violations"])
    if (v["rule"] == rule && v["field"] == field) return true;
  return false;
}

}  // namespace

TEST_CASE("check: !!binary scalars are judged as the text they decode to", "[cli][check][yaml-tags]") {
  SECTION("an env name (NVIDIA_VISIBLE_DEVICES)") {
    TempFile file(pod("", "      env:\n        - name: !!binary TlZJRElBX1ZJU0lCTEVfREVWSUNFUw==\n          value: all\n"));
    const auto result = check_result(file);
    CHECK(has_violation(result, "gpu-device-access", "spec.containers[0].env[0]"));
    CHECK(result["object"]["spec"]["containers"][0]["env"][0]["name"] == "NVIDIA_VISIBLE_DEVICES");
  }
  SECTION("an env value, folded over lines in a block scalar") {
    TempFile file(pod("", "      env:\n        - name: NVIDIA_VISIBLE_DEVICES\n          value: !!binary |\n"
                          "            YW\n            xs\n"));
    const auto result = check_result(file);
    CHECK(result["object"]["spec"]["containers"][0]["env"][0]["value"] == "all");
  }
  SECTION("a hostPath path") {
    TempFile file(pod("", "", "  volumes:\n    - name: dev\n      hostPath: {path: !!binary L2Rldi9udmlkaWEw}\n"));
    CHECK(has_violation(check_result(file), "gpu-device-access", "spec.volumes[0].hostPath.path"));
  }
  SECTION("an annotation key, written as an explicit key") {
    TempFile file(pod("  annotations:\n    ? !!binary Y2RpLms4cy5pby9ncHU=\n    : nvidia.com/gpu=all\n", ""));
    CHECK(has_violation(check_result(file), "gpu-device-access", "metadata.annotations[\"cdi.k8s.io/gpu\"]"));
  }
  SECTION("a securityContext flag through !!bool, as go-yaml v2 reads it") {
    TempFile file(pod("", "      securityContext: {privileged: !!bool yes}\n"));
    CHECK(has_violation(check_result(file), "privileged", "spec.containers[0].securityContext.privileged"));
  }
}

TEST_CASE("check: a tag kubectl refuses makes the input unusable, with its position", "[cli][check][yaml-tags]") {
  struct Case {
    const char* what;
    std::string container;
    const char* message;
  };
  const Case cases[] = {
      {"invalid base64", "      env:\n        - name: !!binary TlZJRElB*\n          value: all\n", "invalid base64"},
      {"base64 of bytes that are not UTF-8", "      env:\n        - name: !!binary /w==\n          value: all\n",
       "not UTF-8"},
      {"!!int on text", "      resources: {limits: {nvidia.com/gpu: !!int two}}\n", "as !!int"},
      {"!!bool on text", "      securityContext: {privileged: !!bool maybe}\n", "as !!bool"},
      {"!!null on text", "      securityContext: {privileged: !!null x}\n", "as !!null"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    TempFile file(pod("", c.container));
    CliRun r = run_cli({"check", "--policy", kPolicy, file.path.string()});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find(file.path.string() + ":") != std::string::npos);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
}
