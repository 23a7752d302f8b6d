// `check` and `test` of ML workload kinds through the real binary: one result per
// pod template, named by its path in text output and by "template" in JSON, the object denied
// (exit 1) when any template is, findings' fields from the object's root, the mutated object
// printed once as YAML, and the examples/ml suite.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test/policy/ml_shapes.h"
#include "webhook/cli/cli_test_support.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using cli_test::describe;
using cli_test::run_cli;
using nlohmann::json;

const std::string kSource = test_paths::source_dir();
const std::string kPolicy = kSource + "/examples/policy.yaml";
const std::string kMl = kSource + "/examples/ml";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "gpa-ml-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    fs::path p = path / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

}  // namespace

TEST_CASE("check names each template of a PyTorchJob and denies the job for its bad Worker", "[cli][ml]") {
  auto r = run_cli({"check", "--policy", kPolicy, kMl + "/pytorchjob.yaml"});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("PyTorchJob research/bert [spec.pytorchReplicaSpecs.Master.template]: ALLOWED") != std::string::npos);
  CHECK(r.out.find("PyTorchJob research/bert [spec.pytorchReplicaSpecs.Worker.template]: DENIED") != std::string::npos);
  CHECK(r.out.find("at spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].securityContext.privileged") !=
        std::string::npos);
}

TEST_CASE("check -o json gives one result per template with its path", "[cli][ml]") {
  auto r = run_cli({"check", "--policy", kPolicy, "-o", "json", kMl + "/raycluster.yaml"});
  INFO(describe(r));
  CHECK(r.code == 1);
  json doc = json::parse(r.out);
  REQUIRE(doc["results"].size() == 3);
  CHECK(doc["results"][0]["template"] == "spec.headGroupSpec.template");
  CHECK(doc["results"][1]["template"] == "spec.workerGroupSpecs[0].template");
  CHECK(doc["results"][2]["template"] == "spec.workerGroupSpecs[1].template");
  CHECK(doc["results"][0]["allowed"] == true);
  CHECK(doc["results"][1]["allowed"] == true);
  CHECK(doc["results"][2]["allowed"] == false);
  CHECK(doc["results"][2]["violations"][0]["field"] == "spec.workerGroupSpecs[1].template.spec.hostNetwork");
  CHECK(doc["results"][2]["kind"] == "RayCluster");
  CHECK(doc["results"][2]["name"] == "tune");
  // A plain Pod result has no "template".
  auto pod = run_cli({"check", "--policy", kPolicy, "-o", "json", kSource + "/examples/manifests/training-pod.yaml"});
  CHECK_FALSE(json::parse(pod.out)["results"][0].contains("template"));
}

TEST_CASE("check -o yaml prints an ML object once, with every template mutated", "[cli][ml]") {
  auto r = run_cli({"check", "--policy", kPolicy, "-o", "yaml", kMl + "/jobset.yaml"});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("---") == std::string::npos);
  CHECK(r.out.find("kind: JobSet") != std::string::npos);
  size_t labels = 0;
  for (size_t at = 0; (at = r.out.find("gpu-admission.io/tenant: ml-platform", at)) != std::string::npos; ++at) ++labels;
  CHECK(labels == 2);
  CHECK(r.err.find("[spec.replicatedJobs[1].template.spec.template] denied: [gpu-device-access]") != std::string::npos);
}

TEST_CASE("check judges every built-in ML kind template by template", "[cli][ml]") {
  TempDir dir;
  for (const auto& shape : ml_shapes::shapes()) {
    const size_t bad = shape.templates.size() - 1;
    const std::string path = dir.file(shape.kind + ".json", ml_shapes::ml_object(shape, bad, "research").dump());
    auto r = run_cli({"check", "--policy", kPolicy, "-o", "json", path});
    INFO(shape.kind << "\n" << describe(r));
    CHECK(r.code == 1);
    json doc = json::parse(r.out);
    REQUIRE(doc["results"].size() == shape.templates.size());
    for (size_t i = 0; i < shape.templates.size(); ++i) {
      CHECK(doc["results"][i]["template"] == shape.templates[i]);
      CHECK(doc["results"][i]["allowed"] == (i != bad));
    }
    CHECK(doc["results"][bad]["violations"][0]["field"] == ml_shapes::privileged_field(shape, bad));

    const std::string good = dir.file(shape.kind + "-good.json", ml_shapes::ml_object(shape, ml_shapes::kNone, "research").dump());
    auto g = run_cli({"check", "--policy", kPolicy, good});
    INFO(describe(g));
    CHECK(g.code == 0);
  }
}

TEST_CASE("check of an AdmissionReview for an ML kind answers as /validate does", "[cli][ml]") {
  TempDir dir;
  const auto& shape = ml_shapes::shapes()[6];  // JobSet
  REQUIRE(shape.kind == "JobSet");
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", "u"},
                   {"kind", {{"group", "jobset.x-k8s.io"}, {"version", "v1alpha2"}, {"kind", "JobSet"}}},
                   {"resource", {{"group", "jobset.x-k8s.io"}, {"version", "v1alpha2"}, {"resource", "jobsets"}}},
                   {"namespace", "research"},
                   {"operation", "CREATE"},
                   {"userInfo", {{"username", "alice"}}},
                   {"object", ml_shapes::ml_object(shape, 1, "research")}}}};
  auto r = run_cli({"check", "--policy", kPolicy, "-o", "json", dir.file("review.json", review.dump())});
  INFO(describe(r));
  CHECK(r.code == 1);
  json doc = json::parse(r.out);
  REQUIRE(doc["results"].size() == 1);
  CHECK(doc["results"][0]["violations"][0]["field"] == ml_shapes::privileged_field(shape, 1));
}

TEST_CASE("the examples/ml suite passes", "[cli][ml][test]") {
  auto r = run_cli({"test", kMl + "/suite.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("3 passed, 0 failed") != std::string::npos);
}

TEST_CASE("test cases may expect outcomes of ML kinds", "[cli][ml][test]") {
  TempDir dir;
  dir.file("job.json", ml_shapes::ml_object(ml_shapes::shapes()[7], 1, "research").dump());  // LeaderWorkerSet
  const std::string suite = dir.file("suite.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: )" + kPolicy + R"(
cases:
  - name: the worker template of a LeaderWorkerSet is privileged
    namespace: research
    object: job.json
    expect: {allowed: false, denied: [privileged]}
  - name: a wrong expectation fails
    namespace: research
    object: job.json
    expect: {allowed: true}
)");
  auto r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("1 passed, 1 failed") != std::string::npos);
}
