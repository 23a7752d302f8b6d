// End-to-end tests of `gpu-admission check`: the real binary on examples/manifests, on
// inputs in test/data/cli and on real GPU manifests from the shared corpus; outputs read back
// (JSON with the patch re-applied, YAML, JUnit).
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
json check_json(const std::vector<std::string>& files, int expected_code, const std::vector<std::string>& extra = {}) {
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

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kManifests))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// ------------------------------------------------------------------ a small XML well-formedness check

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
};

bool valid_char_data(std::string_view t) {
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '<') return false;
    if (t[k] != '&') continue;
    size_t semi = t.find(';', k);
    if (semi == std::string_view::npos) return false;
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    if (!(ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
          (ent.size() > 1 && ent[0] == '#')))
      return false;
    k = semi;
  }
  return true;
}

bool xml_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
}

// Checks tag balance, quoting and escaping; returns the elements in document order, or an error.
bool parse_xml(const std::string& s, std::vector<XmlElement>& elements, std::string& error) {
  std::vector<std::string> stack;
  bool seen_root = false;
  size_t i = 0;
  auto fail = [&](const std::string& m) {
    error = m + " at offset " + std::to_string(i);
    return false;
  };
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    std::string_view text(s.data() + i, (lt == std::string::npos ? s.size() : lt) - i);
    if (stack.empty() ? text.find_first_not_of(" \t\r\n") != std::string_view::npos : !valid_char_data(text))
      return fail("bad text");
    if (lt == std::string::npos) break;
    i = lt;
    if (s.compare(i, 5, "<?xml") == 0) {
      if (i != 0) return fail("XML declaration not at the start");
      size_t e = s.find("?>", i);
      if (e == std::string::npos) return fail("unterminated declaration");
      i = e + 2;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i);
      if (e == std::string::npos) return fail("unterminated comment");
      i = e + 3;
      continue;
    }
    if (s.compare(i, 9, "<![CDATA[") == 0) {
      size_t e = s.find("]]>", i);
      if (stack.empty() || e == std::string::npos) return fail("bad CDATA");
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      size_t e = s.find('>', i);
      if (e == std::string::npos) return fail("unterminated end tag");
      if (stack.empty() || stack.back() != s.substr(i + 2, e - i - 2)) return fail("mismatched end tag");
      stack.pop_back();
      i = e + 1;
      continue;
    }
    ++i;
    size_t n0 = i;
    while (i < s.size() && xml_name_char(s[i])) ++i;
    if (i == n0) return fail("bad tag name");
    if (stack.empty() && seen_root) return fail("a second root element");
    seen_root = true;
    XmlElement el{s.substr(n0, i - n0), {}};
    bool self_closing = false;
    for (;;) {
      size_t ws = i;
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) return fail("unterminated start tag");
      if (s[i] == '>') {
        ++i;
        break;
      }
      if (s.compare(i, 2, "/>") == 0) {
        i += 2;
        self_closing = true;
        break;
      }
      if (ws == i) return fail("attributes must be separated by whitespace");
      size_t a0 = i;
      while (i < s.size() && xml_name_char(s[i])) ++i;
      if (i == a0 || i >= s.size() || s[i] != '=') return fail("bad attribute");
      std::string attr = s.substr(a0, i - a0);
      ++i;
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return fail("unquoted attribute value");
      char q = s[i++];
      size_t e = s.find(q, i);
      if (e == std::string::npos) return fail("unterminated attribute value");
      std::string value = s.substr(i, e - i);
      if (!valid_char_data(value) || el.attrs.count(attr)) return fail("bad attribute value");
      el.attrs[attr] = value;
      i = e + 1;
    }
    if (!self_closing) stack.push_back(el.name);
    elements.push_back(std::move(el));
  }
  if (!stack.empty()) return fail("unclosed element <" + stack.back() + ">");
  if (!seen_root) return fail("no root element");
  return true;
}

size_t count_named(const std::vector<XmlElement>& els, const std::string& name) {
  return static_cast<size_t>(std::count_if(els.begin(), els.end(), [&](const XmlElement& e) { return e.name == name; }));
}

// ------------------------------------------------------------------ reading results

std::set<std::string> rules_with(const json& result, const std::string& action) {
  std::set<std::string> out;
  for (const auto& v : result["violations"])
    if (v["action"] == action) out.insert(v["rule"].get<std::string>());
  return out;
}

const json* result_named(const json& doc, const std::string& name) {
  for (const auto& r : doc["results"])
    if (r["name"] == name) return &r;
  return nullptr;
}

void check_result_shape(const json& r) {
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

TEST_CASE("check: -o junit, one testcase per object, failures for denials", "[cli][check]") {
  const auto files = example_files();
  std::vector<std::string> args = {"check", "--policy", kPolicy, "-o", "junit"};
  args.insert(args.end(), files.begin(), files.end());
  args.push_back(kData + "/multi.yaml");  // two objects and a skipped Service
  CliRun r = run_cli(args);
  INFO(describe(r));
  CHECK(r.code == 1);
  REQUIRE(r.out.rfind("<?xml", 0) == 0);
  std::vector<XmlElement> els;
  std::string error;
  INFO(error);
  REQUIRE(parse_xml(r.out, els, error));
  REQUIRE(!els.empty());
  CHECK(els.front().name == "testsuites");

  std::vector<std::string> jfiles = files;
  jfiles.push_back(kData + "/multi.yaml");
  json doc = check_json(jfiles, 1);
  size_t denied = 0;
  for (const auto& res : doc["results"]) denied += !res["allowed"].get<bool>();
  CHECK(denied == 9);  // 8 examples and the privileged pod of multi.yaml
  const size_t evaluated = doc["results"].size();
  const size_t cases = count_named(els, "testcase");
  // One testcase per evaluated object; a skipped object may be listed as a skipped testcase.
  CHECK((cases == evaluated || cases == evaluated + 1));
  CHECK(count_named(els, "failure") == denied);
  CHECK(els.front().attrs.at("tests") == std::to_string(cases));
  CHECK(els.front().attrs.at("failures") == std::to_string(denied));
  for (const auto& e : els)
    if (e.name == "testsuite") CHECK(e.attrs.at("failures") == std::to_string(denied));
  // Failures name the rules.
  CHECK(r.out.find("mps-adversarial") != std::string::npos);
  CHECK(r.out.find("tenant-pool") != std::string::npos);
}

TEST_CASE("check: real GPU manifests from the shared corpus", "[cli][check][corpus]") {
  const std::string kCorpus = test_paths::corpus("gpu-manifests");
  if (kCorpus.empty()) return;
  auto corpus = [&](const std::string& rel) { return kCorpus + "/" + rel; };
  auto one = [&](const std::string& rel, const std::string& ns, int code) {
    json doc = check_json({corpus(rel)}, code, {"--namespace", ns});
    return doc;
  };

  SECTION("gpu-operator's test pod has no GPU toleration: gpu-tolerations in a tenant namespace") {
    json doc = one("NVIDIA__gpu-operator/tests/gpu-pod.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(rules_with(doc["results"][0], "deny") == std::set<std::string>{"gpu-tolerations"});
    CHECK(doc["results"][0]["namespace"] == "research");
  }
  SECTION("the device plugin README pod tolerates the GPU taint: refused only outside any tenant") {
    json doc = one("NVIDIA__k8s-device-plugin/extracted/README.md_L176-191_gpu-pod.yaml", "default", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(rules_with(doc["results"][0], "deny") == std::set<std::string>{"tenant-pool"});
    CHECK(doc["results"][0]["violations"].size() == 1);
    // In a research namespace it also needs its pool's taint.
    json research = one("NVIDIA__k8s-device-plugin/extracted/README.md_L176-191_gpu-pod.yaml", "research", 1);
    CHECK(rules_with(research["results"][0], "deny") == std::set<std::string>{"gpu-tolerations"});
    CHECK(research["results"][0]["violations"].size() == 1);
  }
  SECTION("awslabs MPS client Job: hostIPC and the MPS pipe in an adversarial pool") {
    json doc = one("awslabs__aws-virtual-gpu-device-plugin/examples/mps/nbody-benchmark-mps.yml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(r["kind"] == "Job");
    auto deny = rules_with(r, "deny");
    CHECK(deny.count("mps-adversarial") == 1);
    CHECK(deny.count("host-namespaces") == 1);
    std::set<std::string> mps_fields;
    for (const auto& v : r["violations"])
      if (v["rule"] == "mps-adversarial") mps_fields.insert(v["field"].get<std::string>());
    CHECK(mps_fields.count("spec.template.spec.hostIPC") == 1);
    CHECK(std::any_of(mps_fields.begin(), mps_fields.end(),
                      [](const std::string& f) { return f.find("hostPath") != std::string::npos; }));
  }
  SECTION("awslabs resnet Deployment: mps-adversarial, and its Service is skipped") {
    json doc = one("awslabs__aws-virtual-gpu-device-plugin/examples/resnet.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    CHECK(doc["results"][0]["kind"] == "Deployment");
    CHECK(rules_with(doc["results"][0], "deny").count("mps-adversarial") == 1);
  }
  SECTION("HAMi mig_example asks for 3g.20gb, not an A100-80GB profile: mig-profile") {
    json doc = one("Project-HAMi__HAMi/examples/nvidia/mig_example.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(rules_with(r, "deny").count("mig-profile") == 1);
    bool named = false;
    for (const auto& v : r["violations"])
      if (v["rule"] == "mig-profile") named = named || v["message"].get<std::string>().find("3g.20gb") != std::string::npos;
    CHECK(named);
  }
  SECTION("time-slicing-verification sets hostPID: host-namespaces") {
    json doc = one("NVIDIA__cloud-native-docs/gpu-operator/manifests/input/time-slicing-verification.yaml", "research", 1);
    REQUIRE(doc["results"].size() == 1);
    const json& r = doc["results"][0];
    CHECK(rules_with(r, "deny").count("host-namespaces") == 1);
    bool at_host_pid = false;
    for (const auto& v : r["violations"])
      at_host_pid = at_host_pid || (v["rule"] == "host-namespaces" && v["field"] == "spec.template.spec.hostPID");
    CHECK(at_host_pid);
  }
  SECTION("the device plugin DaemonSet runs in an exempt namespace; RBAC objects are skipped") {
    CliRun r = run_cli({"check", "-p", kPolicy,
                        corpus("NVIDIA__k8s-device-plugin/deployments/static/nvidia-device-plugin-privileged-with-service-account.yml")});
    INFO(describe(r));
    CHECK(r.code == 0);
    CHECK(r.out.find("skipped") != std::string::npos);
  }
  SECTION("every corpus file is readable: some are denied, none is unusable input") {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(kCorpus)) {
      auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 20);
    json doc = check_json(files, 1, {"-n", "research"});
    CHECK(doc["results"].size() >= 20);
    for (const auto& r : doc["results"]) check_result_shape(r);
  }
}
