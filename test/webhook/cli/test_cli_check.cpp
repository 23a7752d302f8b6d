// End-to-end tests of `gpu-admission check`: the real binary on examples/manifests, on
// inputs in test/data/cli and on real GPU manifests from the shared corpus; outputs read back
// (JSON with the patch re-applied, YAML, JUnit).
#include <catch2/catch.hpp>

#include "webhook/cli/check_test_support.h"

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

TEST_CASE("check: exit codes", "[cli][check]") {
  SECTION("an allowed file exits 0") {
    CliRun r = run_cli({"check", "--policy", kPolicy, kManifests + "/training-pod.yaml"});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("bert-finetune") != std::string::npos);
  }
  SECTION("a denied file exits 1 and names the rule and the field") {
    CliRun r = run_cli({"check", "--policy", kPolicy, kManifests + "/privileged-pod.yaml"});
    INFO(describe(r));
    CHECK(r.code == 1);
    CHECK(r.out.find("privileged") != std::string::npos);
    CHECK(r.out.find("spec.initContainers[0].securityContext.privileged") != std::string::npos);
  }
  SECTION("allowed and denied files together exit 1") {
    CliRun r = run_cli({"check", "-p", kPolicy, kManifests + "/training-pod.yaml", kManifests + "/wrong-pool-pod.yaml"});
    INFO(describe(r));
    CHECK(r.code == 1);
  }
  SECTION("a warning or an audit finding alone still exits 0") {
    CliRun r = run_cli({"check", "-p", kPolicy, kManifests + "/tenant-label-deployment.yaml", kManifests + "/over-cap-pod.yaml"});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("tenant-label") != std::string::npos);
    CHECK(r.out.find("gpu-cap") != std::string::npos);
  }
  SECTION("invalid YAML exits 2 naming file and line") {
    CliRun r = run_cli({"check", "-p", kPolicy, kData + "/invalid.yaml"});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("invalid.yaml:10") != std::string::npos);
  }
  SECTION("invalid YAML beside good files still exits 2") {
    CliRun r = run_cli({"check", "-p", kPolicy, kManifests + "/privileged-pod.yaml", kData + "/invalid.yaml"});
    INFO(describe(r));
    CHECK(r.code == 2);
  }
  SECTION("a missing file exits 2 naming it") {
    CliRun r = run_cli({"check", "-p", kPolicy, kData + "/no-such-file.yaml"});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("no-such-file.yaml") != std::string::npos);
  }
  SECTION("a policy with an unknown pool reference exits 2 with the field path, line and column") {
    CliRun r = run_cli({"check", "--policy", kData + "/unknown-pool-policy.yaml", kManifests + "/training-pod.yaml"});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("spec.tenants[1].pools[0]: unknown pool \"a100-sec\"") != std::string::npos);
    CHECK(r.err.find("unknown-pool-policy.yaml:20:15") != std::string::npos);
  }
  SECTION("bad flags exit 2") {
    CHECK(run_cli({"check", "-o", "xml", kManifests + "/training-pod.yaml"}).code == 2);
    CHECK(run_cli({"check", "--no-such-flag", kManifests + "/training-pod.yaml"}).code == 2);
    CHECK(run_cli({"check"}).code == 2);
    CHECK(run_cli({"check", "--policy", kSource + "/no-such-policy.yaml", kManifests + "/training-pod.yaml"}).code == 2);
  }
}

TEST_CASE("check: the examples, one decision per manifest, as the SPEC says", "[cli][check]") {
  std::vector<std::string> files;
  for (const auto& e : kExpected) files.push_back(kManifests + "/" + e.file);
  json doc = check_json(files, 1);
  REQUIRE(doc["results"].size() == kExpected.size());
  for (size_t i = 0; i < kExpected.size(); ++i) {
    const auto& e = kExpected[i];
    const json& r = doc["results"][i];
    INFO(e.file << "\n" << r.dump(2));
    check_result_shape(r);
    CHECK(r["name"] == e.name);
    CHECK(r["allowed"] == e.allowed);
    CHECK(rules_with(r, "deny") == e.deny);
    CHECK(rules_with(r, "warn") == e.warn);
    CHECK(rules_with(r, "audit") == e.audit);
    CHECK(r["warnings"].size() >= e.warn.size());
    if (e.warn.empty()) CHECK(r["warnings"].empty());
  }
  // Every example file is in the table.
  CHECK(example_files().size() == kExpected.size());

  // Every rule and every mutation shows up somewhere.
  std::set<std::string> rules;
  std::string paths;
  for (const auto& r : doc["results"]) {
    for (const auto& v : r["violations"]) rules.insert(v["rule"].get<std::string>());
    for (const auto& op : r["patch"]) paths += op["path"].get<std::string>() + "\n";
  }
  CHECK(rules == std::set<std::string>{"privileged", "host-namespaces", "gpu-device-access", "gpu-cap",
                                       "mps-adversarial", "gpu-tolerations", "tenant-pool", "tenant-label",
                                       "mig-profile", "gpu-sharing"});
  CHECK(paths.find("/resources/limits/nvidia.com~1mig-1g.10gb") != std::string::npos);  // mig-resources, mixed
  CHECK(paths.find("/nodeSelector/nvidia.com~1gpu.product") != std::string::npos);      // mig-resources, single
  CHECK(paths.find("/annotations/gpu-admission.io~1mig-injected") != std::string::npos);
  CHECK(paths.find("/labels/gpu-admission.io~1tenant") != std::string::npos);          // tenant-labels
  CHECK(paths.find("/nodeSelector/gpu.example.com~1pool") != std::string::npos);       // pool-selector

  SECTION("fields and details") {
    const json* hp = result_named(doc, "node-profiler");
    REQUIRE(hp);
    std::set<std::string> fields;
    for (const auto& v : (*hp)["violations"]) fields.insert(v["field"].get<std::string>());
    CHECK(fields == std::set<std::string>{"spec.hostPID", "spec.hostNetwork"});
    const json* label = result_named(doc, "label-hopper");
    REQUIRE(label);
    CHECK((*label)["violations"][0]["field"].get<std::string>().find("spec.template.metadata.labels") == 0);
    CHECK((*label)["warnings"][0].get<std::string>().find("tenant-label") != std::string::npos);
    // The existing label is kept, the missing one added.
    CHECK((*label)["object"]["spec"]["template"]["metadata"]["labels"]["gpu-admission.io/tenant"] == "research");
    CHECK((*label)["object"]["spec"]["template"]["metadata"]["labels"]["cost-center"] == "cc-2001");
    const json* exempt = result_named(doc, "dcgm-exporter");
    REQUIRE(exempt);
    CHECK((*exempt)["violations"].empty());
    CHECK((*exempt)["patch"].empty());
  }
}

TEST_CASE("check: the JSON patch applied to the input gives the object", "[cli][check]") {
  SECTION("every example manifest") {
    for (const auto& e : kExpected) {
      const std::string file = kManifests + "/" + e.file;
      json doc = check_json({file}, e.allowed ? 0 : 1);
      REQUIRE(doc["results"].size() == 1);
      const json& r = doc["results"][0];
      std::vector<json> input = load_yaml_docs(slurp(file));
      REQUIRE(input.size() == 1);
      INFO(file << "\npatch: " << r["patch"].dump(2));
      json patched;
      REQUIRE_NOTHROW(patched = input[0].patch(r["patch"]));
      CHECK(patched == r["object"]);
      // Idempotent: the mutated object needs no further patch.
      if (!r["patch"].empty()) {
        fs::path tmp = fs::temp_directory_path() / ("gpa-check-mutated-" + std::to_string(getpid()) + ".json");
        std::ofstream(tmp) << r["object"].dump();
        CliRun again = run_cli({"check", "-p", kPolicy, "-o", "json", tmp.string()});
        fs::remove(tmp);
        json d2 = json::parse(again.out);
        CHECK(d2["results"][0]["patch"].empty());
      }
    }
  }
  SECTION("a JSON pod with requests and limits") {
    json doc = check_json({kData + "/pod.json"}, 0, {"--namespace", "research"});
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    json input = json::parse(slurp(kData + "/pod.json"));
    CHECK(input.patch(r["patch"]) == r["object"]);
    const json& res = r["object"]["spec"]["containers"][0]["resources"];
    CHECK(res["limits"] == json{{"nvidia.com/mig-1g.10gb", 2}});
    CHECK(res["requests"] == json{{"nvidia.com/mig-1g.10gb", 2}});
    CHECK(r["namespace"] == "research");
    CHECK(r["object"]["metadata"]["labels"]["cost-center"] == "cc-1042");
  }
}

TEST_CASE("check: a folder is read recursively, like its files listed in name order", "[cli][check]") {
  json by_folder = check_json({kManifests}, 1);
  json by_files = check_json(example_files(), 1);
  REQUIRE(by_folder["results"].size() == kExpected.size());
  REQUIRE(by_folder["results"].size() == by_files["results"].size());
  for (size_t i = 0; i < by_files["results"].size(); ++i) {
    CHECK(by_folder["results"][i]["name"] == by_files["results"][i]["name"]);
    CHECK(by_folder["results"][i]["allowed"] == by_files["results"][i]["allowed"]);
    CHECK(by_folder["results"][i]["object"] == by_files["results"][i]["object"]);
  }
}

TEST_CASE("check: --namespace applies to objects that name none", "[cli][check]") {
  // "default" belongs to no tenant: the GPU pod is refused (defaults.unmappedGpuPods: deny).
  json in_default = check_json({kData + "/pod.json"}, 1);
  CHECK(in_default["results"][0]["namespace"] == "default");
  CHECK(!in_default["results"][0]["object"]["metadata"].contains("labels"));
  CHECK(in_default["results"][0]["violations"][0]["rule"] == "tenant-pool");
  CHECK(in_default["results"][0]["violations"][0]["message"].get<std::string>().find("belongs to no tenant") !=
        std::string::npos);
  json in_ml = check_json({kData + "/pod.json"}, 0, {"-n", "ml-platform"});
  CHECK(in_ml["results"][0]["namespace"] == "ml-platform");
  CHECK(in_ml["results"][0]["object"]["metadata"]["labels"]["gpu-admission.io/tenant"] == "ml-platform");
  // A namespace in the object wins.
  json own = check_json({kManifests + "/training-pod.yaml"}, 0, {"-n", "ml-platform"});
  CHECK(own["results"][0]["namespace"] == "research-nlp");
}

TEST_CASE("check: -o yaml prints the mutated objects", "[cli][check]") {
  const auto files = example_files();
  std::vector<std::string> args = {"check", "--policy", kPolicy, "--output", "yaml"};
  args.insert(args.end(), files.begin(), files.end());
  CliRun r = run_cli(args);
  INFO(describe(r));
  CHECK(r.code == 1);
  std::vector<json> docs;
  REQUIRE_NOTHROW(docs = load_yaml_docs(r.out));
  json expected = check_json(files, 1);
  REQUIRE(docs.size() == expected["results"].size());
  for (size_t i = 0; i < docs.size(); ++i) {
    INFO(files[i]);
    CHECK(docs[i] == expected["results"][i]["object"]);
  }
  // The training pod as it will be created.
  const json& pod = docs[static_cast<size_t>(std::find(files.begin(), files.end(), kManifests + "/training-pod.yaml") - files.begin())];
  CHECK(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == 1);
  CHECK(!pod["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));
  CHECK(pod["spec"]["nodeSelector"]["gpu.example.com/pool"] == "a100-secure");
  CHECK(pod["metadata"]["labels"]["gpu-admission.io/tenant"] == "research");
}

TEST_CASE("check: kind List, multi-document files, stdin and AdmissionReview", "[cli][check]") {
  SECTION("kind: List evaluates each item and skips the ConfigMap") {
    json doc = check_json({kData + "/list.yaml"}, 1);
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["name"] == "list-cpu-pod");
    CHECK(doc["results"][0]["allowed"] == true);
    CHECK(doc["results"][1]["name"] == "list-hostnet-pod");
    CHECK(rules_with(doc["results"][1], "deny") == std::set<std::string>{"host-namespaces"});
    CliRun text = run_cli({"check", "-p", kPolicy, kData + "/list.yaml"});
    CHECK(text.code == 1);
    CHECK(text.out.find("ConfigMap") == std::string::npos);  // folded into the summary
    CHECK(text.out.find("; 1 skipped\n") != std::string::npos);
    CliRun verbose = run_cli({"check", "-p", kPolicy, "-v", kData + "/list.yaml"});
    CHECK(verbose.out.find("ConfigMap") != std::string::npos);
    CHECK(verbose.out.find("skipped (") != std::string::npos);
  }
  SECTION("multi-document YAML") {
    json doc = check_json({kData + "/multi.yaml"}, 1);
    REQUIRE(doc["results"].size() == 2);
    CHECK(doc["results"][0]["kind"] == "Deployment");
    CHECK(doc["results"][0]["allowed"] == true);
    CHECK(doc["results"][1]["kind"] == "Pod");
    CHECK(rules_with(doc["results"][1], "deny") == std::set<std::string>{"privileged"});
    CliRun text = run_cli({"check", "-p", kPolicy, "--verbose", kData + "/multi.yaml"});
    CHECK(text.code == 1);
    CHECK(text.out.find("Service") != std::string::npos);
    CHECK(text.out.find("skipped") != std::string::npos);
  }
  SECTION("only non-workload kinds: skipped (listed with -v), exit 0") {
    CliRun r = run_cli({"check", "-p", kPolicy, "-v", kData + "/configmap.yaml"});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("0 objects: 0 allowed, 0 denied; 0 warned, 0 audited; 2 skipped\n") != std::string::npos);
    CHECK(r.out.find("ConfigMap") != std::string::npos);
    CHECK(r.out.find("Namespace") != std::string::npos);
    CHECK(r.out.find("skipped") != std::string::npos);
    json doc = check_json({kData + "/configmap.yaml"}, 0);
    CHECK(doc["results"].empty());
  }
  SECTION("stdin") {
    CliRun r = run_cli({"check", "-p", kPolicy, "-o", "json", "-"}, {}, kManifests + "/training-pod.yaml");
    INFO(describe(r));
    CHECK(r.code == 0);
    json doc = json::parse(r.out);
    REQUIRE(doc["results"].size() == 1);
    CHECK(doc["results"][0]["name"] == "bert-finetune");
    CHECK(doc["results"][0]["allowed"] == true);
    CliRun denied = run_cli({"check", "-p", kPolicy, "-"}, {}, kManifests + "/mps-client-pod.yaml");
    INFO(describe(denied));
    CHECK(denied.code == 1);
    CHECK(denied.out.find("mps-adversarial") != std::string::npos);
    CliRun list = run_cli({"check", "-p", kPolicy, "-o", "json", "-"}, {}, kData + "/list.yaml");
    CHECK(list.code == 1);
    CHECK(json::parse(list.out)["results"].size() == 2);
  }
  SECTION("an AdmissionReview file is judged as /validate judges it: as it arrives, unmutated") {
    json doc = check_json({kData + "/admission-review.json"}, 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    check_result_shape(r);
    CHECK(r["kind"] == "Pod");
    CHECK(r["name"] == "review-pod");
    CHECK(r["namespace"] == "research");
    CHECK(rules_with(r, "deny") == std::set<std::string>{"tenant-pool"});  // unpinned: no pool, so no MIG check
    CHECK(rules_with(r, "warn") == std::set<std::string>{"tenant-label"});  // warn in examples/policy.yaml
    CHECK(r["patch"].empty());
    json review = json::parse(slurp(kData + "/admission-review.json"));
    CHECK(r["object"] == review["request"]["object"]);
  }
}
