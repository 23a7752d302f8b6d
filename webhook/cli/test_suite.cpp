// Policy test suites (test_suite.h): load_test_suite reads and checks a TestSuite file
// (SuiteReader, CaseReader); run_test_suite runs each case through the offline evaluator
// (evaluate_case) and compares the decision and the mutated pod with the case's expectations
// (compare_decision, compare_pod).
#include "webhook/cli/test_suite.h"

#include <filesystem>

#include "webhook/cli/check_report.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_groups.h"
#include "webhook/cli/input_namespaces.h"
#include "webhook/cli/suite_compare.h"

#include "policy/base/ids.h"
#include "webhook/io/clock.h"
#include "webhook/io/manifests.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/cli/offline.h"
#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

namespace fs = std::filesystem;

class SuiteReader {
 public:
  SuiteReader(const std::string& file, const policy::SourceMap& marks, std::vector<std::string>& errors)
      : file_(file), marks_(marks), errors_(errors) {}

  void error(const std::string& path, const std::string& message) {
    policy::Issue issue{policy::Issue::Severity::Error, path, message, marks_.find(path)};
    errors_.push_back(policy::format_issue(issue, file_));
  }

  void check_fields(const Json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (auto k : known) ok = ok || k == it.key();
      if (!ok) error(policy::child_path(path, it.key()), "unknown field \"" + it.key() + "\"");
    }
  }

  std::optional<std::set<std::string>> rule_set(const Json& v, const std::string& path) {
    if (!v.is_array()) {
      error(path, "must be a list of rule IDs");
      return std::nullopt;
    }
    std::set<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string() || !policy::enum_from_name<policy::RuleId>(policy::kRuleNames, v[i].get<std::string>())) {
        error(policy::index_path(path, i), "unknown rule ID " + (v[i].is_string() ? "\"" + v[i].get<std::string>() + "\"" : v[i].dump()));
        continue;
      }
      out.insert(v[i].get<std::string>());
    }
    return out;
  }

  static std::string scalar_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

  std::optional<std::map<std::string, std::string>> string_map(const Json& v, const std::string& path) {
    if (!v.is_object()) {
      error(path, "must be a mapping");
      return std::nullopt;
    }
    std::map<std::string, std::string> out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it->is_object() || it->is_array() || it->is_null()) {
        error(policy::child_path(path, it.key()), "must be a string");
        continue;
      }
      out[it.key()] = scalar_text(*it);
    }
    return out;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  const policy::SourceMap& marks_;
  std::vector<std::string>& errors_;
};

}  // namespace

namespace {

// Reads the cases of one suite file; paths in them are relative to the suite's folder.
struct CaseReader {
  SuiteReader& r;
  const std::string& path;
  const policy::SourceMap& marks;
  fs::path base;

  std::string resolve(const std::string& relative) const { return (base / relative).lexically_normal().string(); }

  // `object:` (a file holding one object) or `inline:` (the object itself).
  void object(const Json& c, const std::string& cp, TestCase& tc) {
    const bool has_file = c.contains("object"), has_inline = c.contains("inline");
    if (has_file == has_inline) {
      r.error(cp, "needs exactly one of \"object\" (a file) or \"inline\" (the object itself)");
    } else if (has_inline) {
      tc.object = c["inline"];
      tc.object_source = path + ":" + std::to_string(marks.find(cp + ".inline").line);
      if (!tc.object.is_object()) r.error(cp + ".inline", "must be a Kubernetes object");
    } else if (!c["object"].is_string()) {
      r.error(cp + ".object", "must be a file path");
    } else {
      std::string object_path = resolve(c["object"].get<std::string>());
      ManifestRead read = read_manifest_file(object_path);
      if (read.error) r.error(cp + ".object", *read.error);
      else if (read.objects.size() != 1)
        r.error(cp + ".object", object_path + " holds " + std::to_string(read.objects.size()) + " objects; a case needs exactly one");
      else {
        tc.object = std::move(read.objects[0].object);
        tc.object_source = read.objects[0].source;
      }
    }
  }

  // A case's `namespace` is where its object is created: an object that names another one is a
  // contradiction the API server would refuse, not something to pick a winner for.
  void same_namespace(const std::string& cp, const TestCase& tc) {
    const Json* metadata = tc.object.is_object() && tc.object.contains("metadata") ? &tc.object["metadata"] : nullptr;
    const std::string own = metadata ? map_value(*metadata, "namespace") : "";
    if (tc.namespace_name.empty() || own.empty() || own == tc.namespace_name) return;
    r.error(cp + ".namespace", "case \"" + tc.name + "\": namespace \"" + tc.namespace_name +
                                   "\" differs from the object's metadata.namespace \"" + own + "\" (" +
                                   tc.object_source + "); make them equal or leave one out");
  }

  // `objects:` files whose objects (claims, templates, PodGroups) the case's object refers to.
  void objects(const Json& c, const std::string& cp, TestCase& tc) {
    if (!c.contains("objects")) return;
    const Json& list = c["objects"];
    const std::string op = cp + ".objects";
    if (!list.is_array()) {
      r.error(op, "must be a list of file paths");
      return;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string ip = policy::index_path(op, i);
      if (!list[i].is_string()) {
        r.error(ip, "must be a file path");
        continue;
      }
      ManifestRead read = read_manifest_file(resolve(list[i].get<std::string>()));
      if (read.error) r.error(ip, *read.error);
      for (auto& m : read.objects) tc.objects.push_back(std::move(m.object));
    }
  }

  void resources(const Json& res, const std::string& rp, TestExpectation& expect) {
    if (!res.is_object()) {
      r.error(rp, "must map container names to limits");
      return;
    }
    std::map<std::string, std::map<std::string, std::string>> m;
    for (auto it = res.begin(); it != res.end(); ++it)
      if (auto limits = r.string_map(*it, policy::child_path(rp, it.key()))) m[it.key()] = *limits;
    expect.resources = m;
  }

  // `messages:` a list of ECMAScript regular expressions; a bad one names the case.
  void messages(const Json& list, const std::string& mp, TestCase& tc) {
    if (!list.is_array()) {
      r.error(mp, "must be a list of regular expressions");
      return;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string ip = policy::index_path(mp, i);
      if (!list[i].is_string()) {
        r.error(ip, "must be a regular expression (a string)");
        continue;
      }
      const std::string text = list[i].get<std::string>();
      try {
        tc.expect.messages.push_back({text, std::regex(text, std::regex::ECMAScript)});
      } catch (const std::regex_error& e) {
        r.error(ip, "case \"" + tc.name + "\": invalid regular expression /" + text + "/: " + e.what());
      }
    }
  }

  // `patched:` JSON pointers (RFC 6901) into the mutated object -> expected values.
  void patched(const Json& map, const std::string& pp, TestCase& tc) {
    if (!map.is_object()) {
      r.error(pp, "must map JSON pointers (/spec/nodeSelector/key) to values");
      return;
    }
    for (auto it = map.begin(); it != map.end(); ++it) {
      try {
        (void)nlohmann::json::json_pointer(it.key());
        tc.expect.patched.emplace_back(it.key(), *it);
      } catch (const nlohmann::json::exception&) {
        r.error(policy::child_path(pp, it.key()),
                "not a JSON pointer: it starts with / and writes ~ as ~0 and / inside a key as ~1 (/metadata/labels/a~1b)");
      }
    }
  }

  void expectations(const Json& c, const std::string& cp, TestCase& tc) {
    if (!c.contains("expect") || !c["expect"].is_object() || c["expect"].empty()) {
      r.error(cp, "missing required field \"expect\" (at least one expectation)");
      return;
    }
    const Json& e = c["expect"];
    const std::string ep = cp + ".expect";
    r.check_fields(e, ep, {"allowed", "denied", "warned", "audited", "excepted", "messages", "labels", "nodeSelector",
                           "resources", "patched"});
    if (e.contains("allowed")) {
      if (!e["allowed"].is_boolean()) r.error(ep + ".allowed", "must be true or false");
      else tc.expect.allowed = e["allowed"].get<bool>();
    }
    if (e.contains("denied")) tc.expect.denied = r.rule_set(e["denied"], ep + ".denied");
    if (e.contains("warned")) tc.expect.warned = r.rule_set(e["warned"], ep + ".warned");
    if (e.contains("audited")) tc.expect.audited = r.rule_set(e["audited"], ep + ".audited");
    if (e.contains("excepted")) tc.expect.excepted = r.rule_set(e["excepted"], ep + ".excepted");
    if (e.contains("messages")) messages(e["messages"], ep + ".messages", tc);
    if (e.contains("patched")) patched(e["patched"], ep + ".patched", tc);
    if (e.contains("labels")) tc.expect.labels = r.string_map(e["labels"], ep + ".labels");
    if (e.contains("nodeSelector")) tc.expect.node_selector = r.string_map(e["nodeSelector"], ep + ".nodeSelector");
    if (e.contains("resources")) resources(e["resources"], ep + ".resources", tc.expect);
  }

  std::optional<TestCase> one(const Json& c, const std::string& cp) {
    if (!c.is_object()) {
      r.error(cp, "must be a mapping");
      return std::nullopt;
    }
    r.check_fields(c, cp, {"name", "namespace", "namespaceLabels", "object", "inline", "objects", "expect"});
    TestCase tc;
    tc.name = map_value(c, "name");
    if (tc.name.empty()) r.error(cp, "missing required field \"name\"");
    tc.namespace_name = map_value(c, "namespace");
    if (c.contains("namespaceLabels")) {
      if (auto labels = r.string_map(c["namespaceLabels"], cp + ".namespaceLabels"))
        tc.namespace_labels = std::vector<std::pair<std::string, std::string>>(labels->begin(), labels->end());
    }
    object(c, cp, tc);
    same_namespace(cp, tc);
    objects(c, cp, tc);
    expectations(c, cp, tc);
    return tc;
  }
};

}  // namespace

SuiteLoad load_test_suite(const std::string& path) {
  SuiteLoad out;
  TextFile file = read_text_file(path, kMaxManifestBytes);
  if (!file.error.empty()) {
    out.errors.push_back(path + ": " + file.error);
    return out;
  }
  YamlParse parsed = parse_yaml_or_json(file.text);
  if (parsed.error) {
    std::string where = path;
    if (parsed.error->mark.line) where += ":" + std::to_string(parsed.error->mark.line) + ":" + std::to_string(parsed.error->mark.column);
    out.errors.push_back(where + ": " + parsed.error->message);
    return out;
  }
  if (parsed.documents.size() != 1) {
    out.errors.push_back(path + ": expected one TestSuite document, found " + std::to_string(parsed.documents.size()));
    return out;
  }
  const Json& doc = parsed.documents[0].value;
  SuiteReader r(path, parsed.documents[0].marks, out.errors);
  if (!doc.is_object()) {
    r.error("", "a TestSuite must be a mapping");
    return out;
  }
  r.check_fields(doc, "", {"apiVersion", "kind", "metadata", "policy", "cases"});
  if (map_value(doc, "kind") != "TestSuite") r.error("kind", "must be TestSuite");
  if (doc.contains("apiVersion") && map_value(doc, "apiVersion") != "gpu-admission.io/v1alpha1")
    r.error("apiVersion", "must be gpu-admission.io/v1alpha1");

  TestSuite suite;
  suite.file = path;
  CaseReader cases_reader{r, path, parsed.documents[0].marks, fs::path(path).parent_path()};
  if (doc.contains("policy")) {
    if (!doc["policy"].is_string() || doc["policy"].get<std::string>().empty()) r.error("policy", "must be a file path");
    else suite.policy_path = cases_reader.resolve(doc["policy"].get<std::string>());
  }
  if (!doc.contains("cases") || !doc["cases"].is_array() || doc["cases"].empty()) {
    r.error("cases", "must be a non-empty list of cases");
    return out;
  }
  const Json& cases = doc["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    if (auto tc = cases_reader.one(cases[i], policy::index_path("cases", i))) suite.cases.push_back(std::move(*tc));
  }
  if (out.errors.empty()) out.suite = std::move(suite);
  return out;
}

namespace {

// Runs one case through the offline evaluator, with the claims, PodGroups and namespaces of its
// `objects:`.
OfflineResult evaluate_case(const policy::CompiledPolicy& compiled, const TestCase& tc) {
  ManifestObject manifest{tc.object, tc.object_source};
  const std::string& ns = tc.namespace_name;
  if (!ns.empty() && manifest.object.is_object()) {
    // The case's namespace is the namespace the object is created in.
    manifest.review_namespace = ns;
  }
  InputClaims claims;
  InputGroups groups;
  InputNamespaces namespaces;
  if (tc.namespace_labels) namespaces.set_fallback(*tc.namespace_labels);
  for (const auto& object : tc.objects) {
    claims.add(object, ns.empty() ? "default" : ns);
    groups.add(object, ns.empty() ? "default" : ns);
    namespaces.add(object);
  }
  return evaluate_offline(compiled, manifest, ns.empty() ? "default" : ns, true,
                          policy::ExternalFacts{&claims, &namespaces, nullptr, unix_now(), &groups});
}

CaseResult run_case(const policy::CompiledPolicy& compiled, const TestCase& tc) {
  CaseResult cr;
  cr.name = tc.name;
  OfflineResult r = evaluate_case(compiled, tc);
  if (r.status != OfflineResult::Status::Evaluated) {
    cr.failures.push_back("cannot evaluate the object: " + r.note);
    return cr;  // not passed
  }
  compare_decision(tc.expect, r.decision, cr.failures);
  compare_mutated(tc.expect, r.mutated, cr.failures);
  cr.passed = cr.failures.empty();
  cr.findings = case_findings(r.decision);
  return cr;
}

}  // namespace

SuiteResult run_test_suite(const TestSuite& suite) {
  SuiteResult result;
  result.file = suite.file;
  PolicyLoad load = load_policy_document(suite.policy_path);
  result.policy_source = policy_title(suite.policy_path, load.carrier);
  if (!load.ok()) {
    result.error = load.report();
    return result;
  }
  for (const auto& tc : suite.cases) result.cases.push_back(run_case(*load.policy, tc));
  return result;
}

TestSuite select_cases(const TestSuite& suite, const std::regex& select) {
  TestSuite out{suite.file, suite.policy_path, {}};
  for (const auto& tc : suite.cases)
    if (std::regex_search(tc.name, select)) out.cases.push_back(tc);
  return out;
}

}  // namespace gpu_admission::webhook
