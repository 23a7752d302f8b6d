// Policy test suites (test_suite.h): load_test_suite reads and checks a TestSuite file
// (SuiteReader, CaseReader); run_test_suite runs each case through the offline evaluator
// (evaluate_case) and compares the decision and the mutated pod with the case's expectations
// (compare_decision, compare_pod).
#include "webhook/cli/test_suite.h"

#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_namespaces.h"

#include <filesystem>

#include "policy/base/ids.h"
#include "webhook/io/clock.h"
#include "webhook/io/manifests.h"
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

std::string set_text(const std::set<std::string>& s) {
  std::string out = "[";
  for (const auto& v : s) out += (out.size() > 1 ? ", " : "") + v;
  return out + "]";
}

std::string map_value(const Json& obj, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key)) return {};
  const Json& v = obj[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const Json* pod_of(const Json& object) {
  const Json* cur = &object;
  std::string kind = map_value(object, "kind");
  std::vector<const char*> path;
  if (kind == "CronJob") path = {"spec", "jobTemplate", "spec", "template"};
  else if (kind != "Pod") path = {"spec", "template"};
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
  }
  return cur;
}

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

  // `objects:` files whose objects (claims, templates) the case's object refers to.
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

  void expectations(const Json& c, const std::string& cp, TestCase& tc) {
    if (!c.contains("expect") || !c["expect"].is_object() || c["expect"].empty()) {
      r.error(cp, "missing required field \"expect\" (at least one expectation)");
      return;
    }
    const Json& e = c["expect"];
    const std::string ep = cp + ".expect";
    r.check_fields(e, ep, {"allowed", "denied", "warned", "labels", "nodeSelector", "resources"});
    if (e.contains("allowed")) {
      if (!e["allowed"].is_boolean()) r.error(ep + ".allowed", "must be true or false");
      else tc.expect.allowed = e["allowed"].get<bool>();
    }
    if (e.contains("denied")) tc.expect.denied = r.rule_set(e["denied"], ep + ".denied");
    if (e.contains("warned")) tc.expect.warned = r.rule_set(e["warned"], ep + ".warned");
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

// The rules whose findings deny, and those whose findings warn, by name.
struct FiredRules {
  std::set<std::string> denied, warned;
};

FiredRules fired_rules(const policy::Decision& d) {
  FiredRules out;
  for (const auto& f : d.findings) {
    if (f.action == policy::Action::Deny) out.denied.insert(std::string(policy::name_of(f.rule)));
    if (f.action == policy::Action::Warn) out.warned.insert(std::string(policy::name_of(f.rule)));
  }
  return out;
}

// `allowed`, `denied` and `warned` against the decision.
void compare_decision(const TestExpectation& e, const policy::Decision& d, std::vector<std::string>& failures) {
  const FiredRules fired = fired_rules(d);
  if (e.allowed && *e.allowed != d.allowed) {
    std::string got = d.allowed ? "allowed" : "denied by " + set_text(fired.denied);
    failures.push_back(std::string("allowed: expected ") + (*e.allowed ? "true" : "false") + ", got " +
                       (d.allowed ? "true" : "false") + " (" + got + ")");
  }
  if (e.denied && *e.denied != fired.denied)
    failures.push_back("denied: expected " + set_text(*e.denied) + ", got " + set_text(fired.denied));
  if (e.warned && *e.warned != fired.warned)
    failures.push_back("warned: expected " + set_text(*e.warned) + ", got " + set_text(fired.warned));
}

// Every expected key of a string map (labels, nodeSelector, limits) against the mutated object's.
void compare_map(const std::string& what, const std::map<std::string, std::string>& expected, const Json* actual,
                 std::vector<std::string>& failures) {
  for (const auto& [k, v] : expected) {
    bool present = actual && actual->is_object() && actual->contains(k);
    std::string got = present ? map_value(*actual, k) : "";
    if (!present) failures.push_back(what + "[" + k + "]: expected \"" + v + "\", got nothing");
    else if (got != v) failures.push_back(what + "[" + k + "]: expected \"" + v + "\", got \"" + got + "\"");
  }
}

// The pod's container (or init container) of that name; the last one when several share it.
const Json* container_named(const Json* pod, const std::string& name) {
  const Json* found = nullptr;
  if (pod && pod->contains("spec")) {
    for (const char* list : {"initContainers", "containers"}) {
      if (!(*pod)["spec"].contains(list) || !(*pod)["spec"][list].is_array()) continue;
      for (const auto& c : (*pod)["spec"][list])
        if (map_value(c, "name") == name) found = &c;
    }
  }
  return found;
}

// `labels`, `nodeSelector` and `resources` against the pod (template) of the mutated object.
void compare_pod(const TestExpectation& e, const Json* pod, std::vector<std::string>& failures) {
  if (e.labels) {
    const Json* labels = pod && pod->contains("metadata") && (*pod)["metadata"].contains("labels") ? &(*pod)["metadata"]["labels"] : nullptr;
    compare_map("labels", *e.labels, labels, failures);
  }
  if (e.node_selector) {
    const Json* sel = pod && pod->contains("spec") && (*pod)["spec"].contains("nodeSelector") ? &(*pod)["spec"]["nodeSelector"] : nullptr;
    compare_map("nodeSelector", *e.node_selector, sel, failures);
  }
  if (e.resources) {
    for (const auto& [container, limits] : *e.resources) {
      const Json* found = container_named(pod, container);
      if (!found) {
        failures.push_back("resources[" + container + "]: no container named \"" + container + "\"");
        continue;
      }
      const Json* lim = found->contains("resources") && (*found)["resources"].contains("limits") ? &(*found)["resources"]["limits"] : nullptr;
      compare_map("resources[" + container + "].limits", limits, lim, failures);
    }
  }
}

// Runs one case through the offline evaluator, with the claims and namespaces of its `objects:`.
OfflineResult evaluate_case(const policy::CompiledPolicy& compiled, const TestCase& tc) {
  ManifestObject manifest{tc.object, tc.object_source};
  const std::string& ns = tc.namespace_name;
  if (!ns.empty() && manifest.object.is_object()) {
    // The case's namespace is the namespace the object is created in.
    manifest.review_namespace = ns;
  }
  InputClaims claims;
  InputNamespaces namespaces;
  if (tc.namespace_labels) namespaces.set_fallback(*tc.namespace_labels);
  for (const auto& object : tc.objects) {
    claims.add(object, ns.empty() ? "default" : ns);
    namespaces.add(object);
  }
  return evaluate_offline(compiled, manifest, ns.empty() ? "default" : ns, true, policy::ExternalFacts{&claims, &namespaces, nullptr, unix_now()});
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
  compare_pod(tc.expect, pod_of(r.mutated), cr.failures);
  cr.passed = cr.failures.empty();
  return cr;
}

}  // namespace

SuiteResult run_test_suite(const TestSuite& suite) {
  SuiteResult result;
  result.file = suite.file;
  PolicyLoad load = load_policy_file(suite.policy_path);
  result.policy_source = load.source;
  if (!load.ok()) {
    result.error = load.report();
    return result;
  }
  for (const auto& tc : suite.cases) result.cases.push_back(run_case(*load.policy, tc));
  return result;
}

}  // namespace gpu_admission::webhook
