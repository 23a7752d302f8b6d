// End-to-end tests of `gpu-admission test`: the real binary runs the examples suite,
// suites with wrong expectations, broken suites, and the JUnit / JSON outputs are read back.
#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

const std::string kSource = test_paths::source_dir();
const std::string kExamples = kSource + "/examples";

// ------------------------------------------------------------------ running the binary

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::slurp;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "gpa-suites-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

// A copy of examples/ (policy, manifests, suite) in a temp dir, so suites written beside it can use
// the same relative paths as examples/suite.yaml.
void copy_examples(const TempDir& dir) {
  fs::copy(kExamples, dir.path / "examples", fs::copy_options::recursive);
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// ------------------------------------------------------------------ a small XML well-formedness check

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  size_t depth = 0;
  std::string text;  // character data directly inside (unescaped), for leaf elements
};

struct XmlDoc {
  bool ok = false;
  std::string error;
  std::vector<XmlElement> elements;  // document order
};

bool valid_char_data(std::string_view t) {
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '<') return false;
    if (t[k] != '&') continue;
    size_t semi = t.find(';', k);
    if (semi == std::string_view::npos) return false;
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    bool known = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
                 (ent.size() > 1 && ent[0] == '#');
    if (!known) return false;
    k = semi;
  }
  return true;
}

std::string unescape(std::string_view t) {
  std::string out;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] != '&') {
      out += t[k];
      continue;
    }
    size_t semi = t.find(';', k);
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else out += '?';
    k = semi;
  }
  return out;
}

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'; }

XmlDoc parse_xml(const std::string& s) {
  XmlDoc doc;
  std::vector<size_t> stack;  // indexes into doc.elements
  bool seen_root = false;
  size_t i = 0;
  auto fail = [&](const std::string& m) {
    doc.error = m + " at offset " + std::to_string(i);
    doc.ok = false;
    return doc;
  };
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    std::string_view text(s.data() + i, (lt == std::string::npos ? s.size() : lt) - i);
    if (stack.empty()) {
      if (text.find_first_not_of(" \t\r\n") != std::string_view::npos) return fail("text outside the root element");
    } else {
      if (!valid_char_data(text)) return fail("invalid character data");
      doc.elements[stack.back()].text += unescape(text);
    }
    if (lt == std::string::npos) break;
    i = lt;
    if (s.compare(i, 5, "<?xml") == 0) {
      if (i != 0) return fail("XML declaration not at the start");
      size_t e = s.find("?>", i);
      if (e == std::string::npos) return fail("unterminated XML declaration");
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
      if (stack.empty()) return fail("CDATA outside the root element");
      size_t e = s.find("]]>", i);
      if (e == std::string::npos) return fail("unterminated CDATA");
      doc.elements[stack.back()].text += s.substr(i + 9, e - i - 9);
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      size_t e = s.find('>', i);
      if (e == std::string::npos) return fail("unterminated end tag");
      std::string name = s.substr(i + 2, e - i - 2);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
      if (stack.empty() || doc.elements[stack.back()].name != name) return fail("mismatched end tag </" + name + ">");
      stack.pop_back();
      i = e + 1;
      continue;
    }
    // A start tag.
    ++i;
    if (i >= s.size() || !name_start(s[i])) return fail("bad tag name");
    size_t n0 = i;
    while (i < s.size() && name_char(s[i])) ++i;
    if (stack.empty() && seen_root) return fail("a second root element");
    seen_root = true;
    XmlElement el;
    el.name = s.substr(n0, i - n0);
    el.depth = stack.size();
    bool closed = false, self_closing = false;
    while (i < s.size()) {
      size_t ws = i;
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (s[i] == '>') {
        ++i;
        closed = true;
        break;
      }
      if (s.compare(i, 2, "/>") == 0) {
        i += 2;
        closed = self_closing = true;
        break;
      }
      if (ws == i) return fail("attributes must be separated by whitespace");
      if (!name_start(s[i])) return fail("bad attribute name");
      size_t a0 = i;
      while (i < s.size() && name_char(s[i])) ++i;
      std::string attr = s.substr(a0, i - a0);
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size() || s[i] != '=') return fail("attribute without a value");
      ++i;
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return fail("unquoted attribute value");
      char q = s[i++];
      size_t e = s.find(q, i);
      if (e == std::string::npos) return fail("unterminated attribute value");
      std::string_view value(s.data() + i, e - i);
      if (!valid_char_data(value)) return fail("invalid attribute value");
      if (el.attrs.count(attr)) return fail("duplicate attribute " + attr);
      el.attrs[attr] = unescape(value);
      i = e + 1;
    }
    if (!closed) return fail("unterminated start tag");
    doc.elements.push_back(std::move(el));
    if (!self_closing) stack.push_back(doc.elements.size() - 1);
  }
  if (!stack.empty()) return fail("unclosed element <" + doc.elements[stack.back()].name + ">");
  if (!seen_root) return fail("no root element");
  doc.ok = true;
  return doc;
}

std::vector<const XmlElement*> elements_named(const XmlDoc& doc, const std::string& name) {
  std::vector<const XmlElement*> out;
  for (const auto& e : doc.elements)
    if (e.name == name) out.push_back(&e);
  return out;
}

// For each <testsuite>: its <testcase> children and how many of them hold a <failure>.
struct JUnitSuiteCount {
  std::string name;
  std::map<std::string, std::string> attrs;
  size_t testcases = 0;
  size_t failures = 0;
  std::vector<std::string> failure_texts;
};

std::vector<JUnitSuiteCount> junit_suites(const XmlDoc& doc) {
  std::vector<JUnitSuiteCount> out;
  for (const auto& e : doc.elements) {
    if (e.name == "testsuite") out.push_back({e.attrs.count("name") ? e.attrs.at("name") : "", e.attrs, 0, 0, {}});
    else if (e.name == "testcase" && !out.empty()) ++out.back().testcases;
    else if (e.name == "failure" && !out.empty()) {
      ++out.back().failures;
      out.back().failure_texts.push_back((e.attrs.count("message") ? e.attrs.at("message") : "") + "\n" + e.text);
    }
  }
  return out;
}

// Checks that stdout is one JUnit document and nothing else, and that its counts agree with
// `tests` / `failures`.
void check_junit(const std::string& out, size_t tests, size_t failures, size_t suites) {
  INFO(out);
  REQUIRE(out.rfind("<?xml", 0) == 0);  // nothing before the document
  XmlDoc doc = parse_xml(out);
  INFO(doc.error);
  REQUIRE(doc.ok);
  REQUIRE(!doc.elements.empty());
  const XmlElement& root = doc.elements.front();
  CHECK(root.name == "testsuites");
  CHECK(elements_named(doc, "testcase").size() == tests);
  CHECK(elements_named(doc, "failure").size() == failures);
  CHECK(elements_named(doc, "testsuite").size() == suites);
  if (root.name == "testsuites") {
    CHECK(root.attrs.at("tests") == std::to_string(tests));
    CHECK(root.attrs.at("failures") == std::to_string(failures));
  }
  for (const auto& s : junit_suites(doc)) {
    INFO("testsuite " << s.name);
    CHECK(s.attrs.at("tests") == std::to_string(s.testcases));
    CHECK(s.attrs.at("failures") == std::to_string(s.failures));
  }
}

// ------------------------------------------------------------------ suites written for these tests

// Expectations that are all wrong except one; each case's failure must name the field, the
// expected value and the value that came instead.
constexpr const char* kWrongSuite = R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: wrong allowed
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      allowed: false
  - name: wrong denied set
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect:
      allowed: false
      denied: [privileged, host-namespaces]
  - name: wrong label
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      labels: {gpu-admission.io/tenant: ml-platform}
  - name: wrong resources
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      resources: {trainer: {nvidia.com/gpu: "1"}}
  - name: this one is right
    namespace: research
    object: examples/manifests/wrong-pool-pod.yaml
    expect:
      allowed: false
      denied: [tenant-pool]
  - name: wrong nodeSelector
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      nodeSelector: {gpu.example.com/pool: h100-shared}
  - name: wrong warned set
    namespace: ml-platform
    object: examples/manifests/tenant-label-deployment.yaml
    expect:
      warned: []
  - name: wrong denied on an inline pod
    namespace: research
    inline:
      apiVersion: v1
      kind: Pod
      metadata: {name: p}
      spec:
        hostPID: true
        containers: [{name: main, image: busybox}]
    expect:
      denied: [privileged]
)";

// The text of stdout between the line naming `name` and the next case (or the summary).
std::string case_block(const std::string& out, const std::string& name, const std::vector<std::string>& all_names) {
  size_t at = out.find(name);
  if (at == std::string::npos) return {};
  size_t end = out.find("passed,", at);
  for (const auto& other : all_names) {
    if (other == name) continue;
    size_t o = out.find(other, at + name.size());
    if (o != std::string::npos && o < end) end = o;
  }
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

TEST_CASE("test: the examples suite passes", "[cli][test]") {
  CliRun r = run_cli({"test", kExamples + "/suite.yaml"});
  INFO(describe(r));
  REQUIRE(r.code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex(R"((\d+) passed, 0 failed)")));
  CHECK(std::stoi(m[1]) >= 20);
  // Every rule and every mutation of the examples is exercised by the suite.
  const std::string suite = slurp(kExamples + "/suite.yaml");
  for (const char* rule : {"privileged", "host-namespaces", "gpu-device-access", "mps-adversarial",
                           "gpu-tolerations", "tenant-pool", "tenant-label", "mig-profile", "gpu-sharing"})
    CHECK(suite.find(rule) != std::string::npos);
  CHECK(suite.find("nvidia.com/mig-1g.10gb") != std::string::npos);   // mig-resources (mixed)
  CHECK(suite.find("A100-SXM4-40GB-MIG-3g.20gb") != std::string::npos);  // mig-resources (single)
  CHECK(suite.find("gpu-admission.io/tenant: research") != std::string::npos);  // tenant-labels
  CHECK(suite.find("nodeSelector: {gpu.example.com/pool: a100-secure}") != std::string::npos);  // pool-selector
}

TEST_CASE("test: the examples policy lints clean", "[cli][test]") {
  CliRun r = run_cli({"policy", "lint", kExamples + "/policy.yaml"});
  INFO(describe(r));
  CHECK(r.code == 0);
}

TEST_CASE("test: wrong expectations fail case by case, saying expected and got", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("wrong.yaml", kWrongSuite);
  const std::vector<std::string> names = {"wrong allowed",     "wrong denied set",   "wrong label",
                                          "wrong resources",   "this one is right",  "wrong nodeSelector",
                                          "wrong warned set",  "wrong denied on an inline pod"};

  SECTION("text") {
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    CHECK(r.out.find("1 passed, 7 failed") != std::string::npos);
    for (const auto& name : names) {
      if (name == "this one is right") continue;
      std::string block = case_block(r.out, name, names);
      INFO("case: " << name << "\n" << block);
      CHECK(block.find("expected") != std::string::npos);
      CHECK(block.find("got") != std::string::npos);
    }
    std::string right = case_block(r.out, "this one is right", names);
    CHECK(right.find("expected") == std::string::npos);
    // The values themselves are shown.
    std::string allowed = case_block(r.out, "wrong allowed", names);
    CHECK(allowed.find("false") != std::string::npos);
    CHECK(allowed.find("true") != std::string::npos);
    std::string denied = case_block(r.out, "wrong denied set", names);
    CHECK(denied.find("host-namespaces") != std::string::npos);
    CHECK(denied.find("privileged") != std::string::npos);
    std::string label = case_block(r.out, "wrong label", names);
    CHECK(label.find("ml-platform") != std::string::npos);
    CHECK(label.find("research") != std::string::npos);
    std::string resources = case_block(r.out, "wrong resources", names);
    CHECK(resources.find("nvidia.com/gpu") != std::string::npos);
    std::string selector = case_block(r.out, "wrong nodeSelector", names);
    CHECK(selector.find("h100-shared") != std::string::npos);
    CHECK(selector.find("a100-secure") != std::string::npos);
    std::string warned = case_block(r.out, "wrong warned set", names);
    CHECK(warned.find("tenant-label") != std::string::npos);
    std::string inline_block = case_block(r.out, "wrong denied on an inline pod", names);
    CHECK(inline_block.find("host-namespaces") != std::string::npos);
  }

  SECTION("json") {
    CliRun r = run_cli({"test", "-o", "json", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    nlohmann::json doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["suites"].size() == 1);
    const auto& cases = doc["suites"][0]["cases"];
    REQUIRE(cases.size() == names.size());
    CHECK(doc["passed"] == 1);
    CHECK(doc["failed"] == 7);
    for (size_t i = 0; i < names.size(); ++i) {
      INFO(cases[i].dump());
      CHECK(cases[i]["name"] == names[i]);
      const bool right = names[i] == "this one is right";
      CHECK(cases[i]["passed"] == right);
      CHECK(cases[i]["failures"].is_array());
      CHECK(cases[i]["failures"].empty() == right);
      for (const auto& f : cases[i]["failures"]) {
        CHECK(f.get<std::string>().find("expected") != std::string::npos);
        CHECK(f.get<std::string>().find("got") != std::string::npos);
      }
    }
  }

  SECTION("junit") {
    CliRun r = run_cli({"test", "--output", "junit", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    check_junit(r.out, 8, 7, 1);
    XmlDoc doc = parse_xml(r.out);
    auto suites = junit_suites(doc);
    REQUIRE(suites.size() == 1);
    for (const auto& text : suites[0].failure_texts) {
      INFO(text);
      CHECK(text.find("expected") != std::string::npos);
      CHECK(text.find("got") != std::string::npos);
    }
    // The testcases carry the case names.
    std::vector<std::string> got;
    for (const auto* tc : elements_named(doc, "testcase")) got.push_back(tc->attrs.at("name"));
    CHECK(got == names);
  }
}

TEST_CASE("test: a case that only some expectations miss still fails, and each miss is listed", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("partly.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: right allowed, wrong label and resources
    namespace: research-nlp
    object: examples/manifests/training-pod.yaml
    expect:
      allowed: true
      denied: []
      labels: {cost-center: cc-9999}
      resources: {trainer: {nvidia.com/mig-1g.10gb: "2"}}
)");
  CliRun r = run_cli({"test", "-o", "json", suite});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  auto doc = nlohmann::json::parse(r.out);
  const auto& failures = doc["suites"][0]["cases"][0]["failures"];
  REQUIRE(failures.size() == 2);
  CHECK(failures.dump().find("cc-9999") != std::string::npos);
  CHECK(failures.dump().find("cc-1042") != std::string::npos);
  CHECK(failures.dump().find("nvidia.com/mig-1g.10gb") != std::string::npos);
}

TEST_CASE("test: a missing object file exits 2 and names the file", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("missing.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: fine
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
  - name: the file is not there
    namespace: research
    object: pods/no-such-pod.yaml
    expect: {allowed: true}
)");
  CliRun r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("no-such-pod.yaml") != std::string::npos);
  CHECK(r.err.find("missing.yaml:11") != std::string::npos);  // the line of the case's `object:`
}

TEST_CASE("test: a missing policy file exits 2 and names the file", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string suite = dir.file("nopolicy.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: no-such-policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
)");
  CliRun r = run_cli({"test", suite});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("no-such-policy.yaml") != std::string::npos);
}

TEST_CASE("test: an invalid suite exits 2 naming the line", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);

  SECTION("unknown field") {
    const std::string suite = dir.file("unknown-field.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: false, deniedd: [privileged]}
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-field.yaml:8:") != std::string::npos);
    CHECK(r.err.find("deniedd") != std::string::npos);
  }

  SECTION("unknown field in a case") {
    const std::string suite = dir.file("unknown-case-field.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    objects: examples/manifests/privileged-pod.yaml
    expect: {allowed: false}
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-case-field.yaml:7:") != std::string::npos);
    CHECK(r.err.find("objects") != std::string::npos);
  }

  SECTION("unknown rule ID") {
    const std::string suite = dir.file("unknown-rule.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: privileged
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect:
      allowed: false
      denied:
        - privileged
        - privileged-container
)");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown-rule.yaml:12:") != std::string::npos);
    CHECK(r.err.find("privileged-container") != std::string::npos);
  }

  SECTION("invalid YAML") {
    const std::string suite = dir.file("broken.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\ncases:\n  - name: [unclosed\n");
    CliRun r = run_cli({"test", suite});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("broken.yaml:") != std::string::npos);
  }

  SECTION("a usable suite beside an unusable one still exits 2") {
    const std::string bad = dir.file("bad.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: TestSuite\ncases: []\n");
    CliRun r = run_cli({"test", dir.path.string() + "/examples/suite.yaml", bad});
    INFO(describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find("bad.yaml") != std::string::npos);
  }
}

TEST_CASE("test: paths are relative to the suite file, whatever the working directory", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  fs::create_directories(dir.path / "elsewhere" / "deeper");

  struct Run {
    std::string cwd;
    std::string suite;
  };
  const std::vector<Run> runs = {
      {"/", kExamples + "/suite.yaml"},                             // absolute path, unrelated cwd
      {kSource, "examples/suite.yaml"},                             // from the repository root
      {kExamples, "suite.yaml"},                                    // from the suite's own folder
      {(dir.path / "elsewhere" / "deeper").string(), "../../examples/suite.yaml"},  // a copy, via ..
      {(dir.path / "examples" / "manifests").string(), "../suite.yaml"},
  };
  std::string first_summary;
  for (const auto& run : runs) {
    CliRun r = run_cli({"test", run.suite}, run.cwd);
    INFO("cwd " << run.cwd << ", suite " << run.suite << "\n" << describe(r));
    CHECK(r.code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex(R"(\d+ passed, 0 failed)")));
    if (first_summary.empty()) first_summary = m[0];
    CHECK(m[0] == first_summary);
  }
}

TEST_CASE("test: -o junit is one well-formed document whose counts match", "[cli][test]") {
  TempDir dir;
  copy_examples(dir);
  const std::string wrong = dir.file("wrong.yaml", kWrongSuite);

  SECTION("a passing suite") {
    CliRun text = run_cli({"test", kExamples + "/suite.yaml"});
    std::smatch m;
    REQUIRE(std::regex_search(text.out, m, std::regex(R"((\d+) passed, 0 failed)")));
    const size_t n = std::stoul(m[1]);
    CliRun r = run_cli({"test", "-o", "junit", kExamples + "/suite.yaml"});
    INFO(describe(r));
    REQUIRE(r.code == 0);
    check_junit(r.out, n, 0, 1);
  }

  SECTION("two suites, one failing: one testsuite each") {
    CliRun r = run_cli({"test", kExamples + "/suite.yaml", wrong, "--output=junit"});  // flags after the files
    INFO(describe(r));
    REQUIRE(r.code == 1);
    CliRun text = run_cli({"test", kExamples + "/suite.yaml"});
    std::smatch m;
    REQUIRE(std::regex_search(text.out, m, std::regex(R"((\d+) passed, 0 failed)")));
    const size_t n = std::stoul(m[1]);
    check_junit(r.out, n + 8, 7, 2);
    auto suites = junit_suites(parse_xml(r.out));
    REQUIRE(suites.size() == 2);
    CHECK(suites[0].testcases == n);
    CHECK(suites[0].failures == 0);
    CHECK(suites[1].testcases == 8);
    CHECK(suites[1].failures == 7);
  }

  SECTION("names that need escaping stay well-formed") {
    const std::string suite = dir.file("escape.yaml", R"(apiVersion: gpu-admission.io/v1alpha1
kind: TestSuite
policy: examples/policy.yaml
cases:
  - name: "<privileged> & \"quoted\" 'pods' are denied"
    namespace: research
    object: examples/manifests/privileged-pod.yaml
    expect: {allowed: true}
)");
    CliRun r = run_cli({"test", "-o", "junit", suite});
    INFO(describe(r));
    REQUIRE(r.code == 1);
    check_junit(r.out, 1, 1, 1);
    XmlDoc doc = parse_xml(r.out);
    CHECK(elements_named(doc, "testcase").at(0)->attrs.at("name") == "<privileged> & \"quoted\" 'pods' are denied");
  }
}

TEST_CASE("test: -o json has the suites, cases and totals", "[cli][test]") {
  CliRun r = run_cli({"test", "-o", "json", kExamples + "/suite.yaml"});
  INFO(describe(r));
  REQUIRE(r.code == 0);
  nlohmann::json doc = nlohmann::json::parse(r.out);  // nothing but JSON on stdout
  REQUIRE(doc.is_object());
  REQUIRE(doc["suites"].is_array());
  REQUIRE(doc["suites"].size() == 1);
  const auto& s = doc["suites"][0];
  CHECK(s["file"].get<std::string>().find("suite.yaml") != std::string::npos);
  REQUIRE(s["cases"].is_array());
  CHECK(doc["passed"] == s["cases"].size());
  CHECK(doc["failed"] == 0);
  const std::string suite_text = slurp(kExamples + "/suite.yaml");
  CHECK(s["cases"].size() == count_of(suite_text, "\n  - name: "));
  for (const auto& c : s["cases"]) {
    CHECK(c["name"].is_string());
    CHECK(c["passed"] == true);
    CHECK(c["failures"] == nlohmann::json::array());
  }
}

TEST_CASE("test: bad flags and no suites exit 2", "[cli][test]") {
  CHECK(run_cli({"test"}).code == 2);
  CHECK(run_cli({"test", "-o", "xml", kExamples + "/suite.yaml"}).code == 2);
  CHECK(run_cli({"test", "--no-such-flag", kExamples + "/suite.yaml"}).code == 2);
  CHECK(run_cli({"test", "/no/such/suite.yaml"}).code == 2);
}

TEST_CASE("test: the XML check used above rejects broken documents", "[cli][test]") {
  CHECK(parse_xml("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/><c>t &amp; u</c></a>\n").ok);
  CHECK(!parse_xml("<a><b></a></b>").ok);               // crossed tags
  CHECK(!parse_xml("<a><b></a>").ok);                   // unclosed
  CHECK(!parse_xml("<a></a><a></a>").ok);               // two roots
  CHECK(!parse_xml("junk<a></a>").ok);                  // text outside the root
  CHECK(!parse_xml("<a x=1></a>").ok);                  // unquoted attribute
  CHECK(!parse_xml("<a x=\"<\"></a>").ok);              // raw < in an attribute
  CHECK(!parse_xml("<a>fish & chips</a>").ok);          // raw &
  CHECK(!parse_xml("<a x=\"1\"x=\"2\"></a>").ok);        // no space between attributes
  CHECK(!parse_xml("<a x=\"1\" x=\"2\"></a>").ok);       // duplicate attribute
  CHECK(!parse_xml("<a>\n").ok);
  CHECK(!parse_xml("").ok);
  CHECK(!parse_xml("\n<?xml version=\"1.0\"?><a/>").ok);  // declaration not first
}
