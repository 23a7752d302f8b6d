// Observe finds what enforcement finds, end to end: the same corpus (the rule fixtures, the
// examples, the ML manifests, the shared GPU manifests) goes through the real `gpu-admission serve`
// in every mode, /mutate then /validate as the API server chains them, and what each run found is
// compared object by object with the run that enforces: the same findings in every mode, the ones
// enforcement denies being exactly the would-deny ones while observing; nothing patched or denied
// while observing (warn tells the user, audit does not); and the metrics count the same would-deny
// results, the withheld mutations being exactly the ones enforcement applied.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "webhook/cluster/serve_child.h"
#include "webhook/io/manifests.h"
#include "webhook/io/policy_file.h"
#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"
#include "webhook/ops/base64.h"
#include "webhook/server/server_test_support.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
namespace wh = gpu_admission::webhook;
using gpu_admission::Json;
using namespace std::chrono_literals;

// ---- The corpus ----

struct CorpusObject {
  std::string where;   // "examples/ml/jobset.yaml:1 (object 0)"
  Json object;
  std::string ns;      // the request's namespace ("" for cluster-scoped kinds)
  std::string tenant;  // the fixture policy's tenant of `ns` ("" for none)
};

std::vector<fs::path> yaml_files(const fs::path& dir, bool recursive) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  auto keep = [&](const fs::directory_entry& e) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) out.push_back(e.path());
  };
  if (recursive) for (const auto& e : fs::recursive_directory_iterator(dir)) keep(e);
  else for (const auto& e : fs::directory_iterator(dir)) keep(e);
  std::sort(out.begin(), out.end());
  return out;
}

// Kinds of no namespace: the API server sends them with none.
bool cluster_scoped(const std::string& kind) {
  static const std::set<std::string> kinds = {"Namespace", "Node", "DeviceClass", "ClusterRole", "ClusterRoleBinding",
                                              "CustomResourceDefinition", "PersistentVolume", "StorageClass",
                                              "PriorityClass", "RuntimeClass", "MutatingWebhookConfiguration",
                                              "ValidatingWebhookConfiguration"};
  return kinds.count(kind) == 1;
}

// Every object of `files` (shown relative to `root`); unreadable files are `problems`.
void add_objects(const std::vector<fs::path>& files, const fs::path& root,
                 const gpu_admission::policy::CompiledPolicy& policy, std::vector<CorpusObject>& out,
                 std::vector<std::string>& problems) {
  for (const fs::path& file : files) {
    const wh::ManifestRead read = wh::read_manifest_file(file.string());
    const std::string shown = fs::relative(file, root).string();
    if (read.error) problems.push_back(shown + ": cannot read: " + *read.error);
    for (size_t i = 0; i < read.objects.size(); ++i) {
      const Json& object = read.objects[i].object;
      if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) continue;
      CorpusObject o;
      o.where = shown + ":" + read.objects[i].source.substr(read.objects[i].source.rfind(':') + 1) + " (object " +
                std::to_string(i) + ")";
      o.object = object;
      const bool has_metadata = object.contains("metadata") && object["metadata"].is_object();
      const Json* ns =
          has_metadata && object["metadata"].contains("namespace") ? &object["metadata"]["namespace"] : nullptr;
      if (!cluster_scoped(object["kind"].get<std::string>())) {
        o.ns = ns && ns->is_string() ? ns->get<std::string>() : "default";
        if (!ns && has_metadata) o.object["metadata"]["namespace"] = o.ns;  // as the API server fills it in
      }
      const auto* tenant = policy.tenant_for_namespace(o.ns);
      o.tenant = tenant ? tenant->name : "";
      out.push_back(std::move(o));
    }
  }
}

// The rule fixtures, the examples and the ML examples of the checkout (`own` of them), then the
// shared GPU manifests when the shared folder has them.
std::vector<CorpusObject> load_corpus(const fs::path& root, const gpu_admission::policy::CompiledPolicy& policy,
                                      size_t& own) {
  std::vector<CorpusObject> corpus;
  std::vector<std::string> problems;
  std::vector<fs::path> files;
  for (const auto& rule : fs::directory_iterator(root / "test/fixtures"))
    for (const char* outcome : {"pass", "fail"})
      for (const fs::path& file : yaml_files(rule.path() / outcome, false)) files.push_back(file);
  std::sort(files.begin(), files.end());
  for (const char* dir : {"examples/manifests", "examples/ml"})
    for (const fs::path& file : yaml_files(root / dir, false)) files.push_back(file);
  add_objects(files, root, policy, corpus, problems);
  own = corpus.size();
  const std::string manifests = test_paths::corpus("gpu-manifests", false);
  if (!manifests.empty()) {
    const fs::path shared = fs::path(manifests).parent_path();
    add_objects(yaml_files(fs::path(manifests), true), shared, policy, corpus, problems);
  }
  for (const auto& p : problems) FAIL_CHECK(p);
  return corpus;
}

// ---- Reviews ----

// The plural the API server names a kind's resource by.
std::string resource_of(const std::string& kind) {
  std::string plural = kind;
  std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return std::tolower(c); });
  if (plural.ends_with("s")) return plural + "es";
  if (plural.ends_with("y")) return plural.substr(0, plural.size() - 1) + "ies";
  return plural + "s";
}

// A CREATE of `object`, as the API server sends it to both webhooks (one uid for both).
std::string create_review(const CorpusObject& o, const Json& object, const std::string& uid) {
  const std::string api_version = object.contains("apiVersion") && object["apiVersion"].is_string()
                                      ? object["apiVersion"].get<std::string>() : "";
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const std::string kind = object["kind"];
  const Json gvk = {{"group", group}, {"version", version}, {"kind", kind}};
  Json request = {{"uid", uid}, {"kind", gvk},
                  {"resource", {{"group", group}, {"version", version}, {"resource", resource_of(kind)}}},
                  {"operation", "CREATE"}, {"userInfo", {{"username", "alice"}, {"groups", {"system:authenticated"}}}},
                  {"object", object}, {"dryRun", false}};
  if (!o.ns.empty()) request["namespace"] = o.ns;
  if (object.contains("metadata") && object["metadata"].is_object() && object["metadata"].contains("name"))
    request["name"] = object["metadata"]["name"];
  return Json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}}.dump();
}

// What one run answered for one object.
struct Answer {
  std::string problem;  // the exchange itself failed
  Json patch;           // /mutate's JSONPatch (null: none)
  std::vector<std::string> mutate_warnings;
  bool allowed = false;
  int code = 0;  // status.code when refused
  std::string message;
  std::vector<std::string> validate_warnings;
  bool validate_annotated = false;
  Json decision;  // the decision log line of /validate (null: none, the object had no findings)
  Json withheld;  // the "mutations withheld" log line of /mutate (null: none)
};

std::vector<std::string> strings_of(const Json& response, const char* key) {
  std::vector<std::string> out;
  if (response.contains(key))
    for (const auto& w : response[key]) out.push_back(w.get<std::string>());
  return out;
}

// POSTs `body`, reconnecting once if the connection was closed; the AdmissionReview's response.
Json post(server_test::TlsClient& client, int port, const std::string& path, const std::string& body,
          std::string& problem) {
  server_test::HttpResponse reply = client.request("POST", path, body);
  if (!reply.ok && client.connect(port)) reply = client.request("POST", path, body);
  const Json parsed = Json::parse(reply.body, nullptr, false);
  if (!reply.ok || reply.status != 200 || parsed.is_discarded() || !parsed.contains("response")) {
    problem = path + " answered " + std::to_string(reply.status) + ": " + reply.body;
    return Json();
  }
  return parsed["response"];
}

// /mutate, the patch applied, then /validate of what /mutate left.
Answer exchange(server_test::TlsClient& client, int port, const CorpusObject& o, const std::string& uid) {
  Answer a;
  const Json mutated = post(client, port, "/mutate", create_review(o, o.object, uid), a.problem);
  if (!a.problem.empty()) return a;
  a.mutate_warnings = strings_of(mutated, "warnings");
  Json object = o.object;
  if (mutated.contains("patch")) {
    const auto text = wh::base64_decode(mutated["patch"].get<std::string>());
    a.patch = text ? Json::parse(*text, nullptr, false) : Json();
    try {
      object = object.patch(a.patch);
    } catch (const std::exception& e) {
      a.problem = std::string("/mutate's patch does not apply: ") + e.what() + ": " + a.patch.dump();
      return a;
    }
  }
  const Json validated = post(client, port, "/validate", create_review(o, object, uid), a.problem);
  if (!a.problem.empty()) return a;
  a.allowed = validated.value("allowed", false);
  if (validated.contains("status")) {
    a.code = validated["status"].value("code", 0);
    a.message = validated["status"].value("message", "");
  }
  a.validate_warnings = strings_of(validated, "warnings");
  a.validate_annotated = validated.contains("auditAnnotations");
  return a;
}

// ---- Runs ----

int strength(const std::string& mode) { return mode == "audit" ? 0 : mode == "warn" ? 1 : 2; }

// How one serve is started, and the mode each tenant's objects are in.
struct RunSpec {
  std::string name;
  std::string flag;       // serve --enforcement ("": not given)
  std::string spec_mode;  // written as spec.enforcement ("": not written, enforce)
  std::map<std::string, std::string> tenant_modes;  // written as tenants[].enforcement

  // The spec's rule: the tenant's mode, else spec.enforcement, the weaker of it and the cap.
  std::string mode_for(const std::string& tenant) const {
    auto found = tenant_modes.find(tenant);
    std::string mode = found != tenant_modes.end() ? found->second : spec_mode.empty() ? "enforce" : spec_mode;
    if (!flag.empty() && strength(flag) < strength(mode)) mode = flag;
    return mode;
  }
};

struct RunResult {
  std::vector<Answer> answers;  // per corpus object
  std::string metrics;
};

// The fixture policy with the run's modes written in.
std::string policy_text(const Json& fixture_policy, const RunSpec& run) {
  Json policy = fixture_policy;
  if (!run.spec_mode.empty()) policy["spec"]["enforcement"] = run.spec_mode;
  for (const auto& [tenant, mode] : run.tenant_modes) {
    bool found = false;
    for (auto& t : policy["spec"]["tenants"])
      if (t["name"] == tenant) t["enforcement"] = mode, found = true;
    REQUIRE(found);  // the fixture policy's tenants changed: update the runs
  }
  return wh::to_yaml(policy);
}

// Each request's log lines with findings (by uid) into the answers.
void read_log_lines(const std::string& log, const std::map<std::string, size_t>& by_uid, RunResult& result) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const Json entry = Json::parse(line, nullptr, false);
    if (!entry.is_object() || !entry.contains("uid") || !entry["uid"].is_string()) continue;
    auto found = by_uid.find(entry["uid"].get<std::string>());
    if (found == by_uid.end()) continue;
    Answer& a = result.answers[found->second];
    const std::string msg = entry.value("msg", "");
    Json& slot = msg == "mutations withheld" ? a.withheld : a.decision;
    if (msg != "mutations withheld" && msg != "admitted with findings" && msg != "denied") continue;
    if (!slot.is_null()) a.problem = "two \"" + msg + "\" log lines for one request";
    slot = entry;
  }
}

RunResult serve_corpus(const RunSpec& run, const Json& fixture_policy, const std::vector<CorpusObject>& corpus) {
  cluster_test::TempDir dir;
  cluster_test::write_text(dir.file("policy.yaml"), policy_text(fixture_policy, run));
  std::vector<std::string> args = {"serve", "--policy", dir.file("policy.yaml"), "--cluster", "off", "--listen",
                                   "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-level", "info",
                                   "--grace-period", "1"};
  if (!run.flag.empty()) args.insert(args.end(), {"--enforcement", run.flag});
  cluster_test::Child serve(args, dir.file("stderr.log"));
  const Json serving = serve.log_line("gpu-admission serving");
  INFO(serve.log());
  REQUIRE(serving.is_object());
  const int port = serving["port"], metrics_port = serving["metrics_port"];
  server_test::TlsClient client;
  REQUIRE(client.connect(port));

  RunResult result;
  std::map<std::string, size_t> by_uid;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string uid = "modes-" + std::to_string(i);
    by_uid[uid] = i;
    result.answers.push_back(exchange(client, port, corpus[i], uid));
  }
  // Each line is written (one write()) before its answer is sent: all are in the file now.
  read_log_lines(serve.log(), by_uid, result);
  result.metrics = cluster_test::scrape(metrics_port);
  return result;
}

// ---- Comparing ----

struct Seen {
  std::string action;
  bool would_deny = false;
};

// A decision line's findings by "[rule] field: message" (with moreFindings, if any). A multiset:
// the templates of one object may each find the same (a namespace of no tenant).
using Findings = std::multimap<std::string, Seen>;

Findings findings_of(const Json& decision) {
  Findings out;
  if (decision.is_null()) return out;
  for (const auto& f : decision["findings"]) {
    const std::string key = "[" + f.value("rule", "") + "] " + f.value("field", "") + ": " + f.value("message", "");
    out.emplace(key, Seen{f.value("action", ""), f.value("wouldDeny", false)});
  }
  if (decision.contains("moreFindings"))
    out.emplace("(more findings: " + decision["moreFindings"].dump() + ")", Seen{});
  return out;
}

// The findings of `from` that `in` has fewer of.
std::string keys_missing(const Findings& from, const Findings& in) {
  std::string out;
  for (auto at = from.begin(); at != from.end(); at = from.upper_bound(at->first))
    if (in.count(at->first) < from.count(at->first)) out += "\n    " + at->first;
  return out.empty() ? " (none)" : out;
}

// The action a finding enforcement acts on with `enforced` has in `mode`.
std::string capped(const std::string& enforced, const std::string& mode) {
  if (mode == "audit" || enforced == "audit") return "audit";
  if (mode == "warn") return "warn";
  return enforced;
}

bool has_deny(const Findings& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const auto& f) { return f.second.action == "deny"; });
}

// The enforcing run's answers make sense on their own: denied exactly when a finding denies.
void check_reference(const CorpusObject& o, const Answer& e, std::vector<std::string>& mismatches) {
  const auto findings = findings_of(e.decision);
  if (e.code == 400) return;  // unreadable: refused as such in every mode (compared below)
  if (e.allowed == has_deny(findings) && !e.decision.contains("moreFindings"))
    mismatches.push_back(o.where + " under enforce: allowed " + std::to_string(e.allowed) + " with findings:" +
                         keys_missing(findings, {}));
  if (!e.decision.is_null() && e.decision.value("mode", "") != "enforce")
    mismatches.push_back(o.where + " under enforce: the decision line says mode " + e.decision.value("mode", ""));
}

// Findings: the same set, actions capped by the mode, would-deny exactly where enforcement denies.
void compare_findings(const std::string& where, const std::string& mode, const Answer& e, const Answer& a,
                      std::vector<std::string>& mismatches) {
  const auto expected = findings_of(e.decision), found = findings_of(a.decision);
  if (expected.size() != found.size() || !std::equal(expected.begin(), expected.end(), found.begin(),
                                                     [](const auto& x, const auto& y) { return x.first == y.first; })) {
    mismatches.push_back(where + ": findings differ from enforcement's; only under enforce:" +
                         keys_missing(expected, found) + "\n  only here:" + keys_missing(found, expected));
    return;
  }
  if (!a.decision.is_null() && a.decision.value("mode", "") != mode)
    mismatches.push_back(where + ": the decision line says mode " + a.decision.value("mode", "") + ", not " + mode);
  for (auto at = found.begin(), enforced_at = expected.begin(); at != found.end(); ++at, ++enforced_at) {
    const std::string& key = at->first;
    const Seen &seen = at->second, &enforced = enforced_at->second;
    const bool would_deny = enforced.action == "deny" && mode != "enforce";
    if (seen.action != capped(enforced.action, mode) || seen.would_deny != would_deny)
      mismatches.push_back(where + ": " + key + "\n  enforce: action " + enforced.action + "; here: action " +
                           seen.action + (seen.would_deny ? ", wouldDeny" : "") + " (expected action " +
                           capped(enforced.action, mode) + (would_deny ? ", wouldDeny)" : ")"));
  }
}

size_t count_starting(const std::vector<std::string>& texts, const std::string& prefix) {
  return std::count_if(texts.begin(), texts.end(), [&](const std::string& t) { return t.starts_with(prefix); });
}

// /mutate and /validate's answers in the object's mode, against the enforcing run's.
void compare_answers(const std::string& where, const std::string& mode, const Answer& e, const Answer& a,
                     std::vector<std::string>& mismatches) {
  auto fail = [&](const std::string& what) { mismatches.push_back(where + ": " + what); };
  if (mode == "enforce") {
    if (a.patch != e.patch) fail("patch " + a.patch.dump() + ", enforcement's " + e.patch.dump());
    if (a.allowed != e.allowed || a.message != e.message) fail("answered " + a.message + ", enforcement " + e.message);
    if (a.mutate_warnings != e.mutate_warnings || a.validate_warnings != e.validate_warnings)
      fail("warned " + Json(a.mutate_warnings).dump() + Json(a.validate_warnings).dump() + ", enforcement " +
           Json(e.mutate_warnings).dump() + Json(e.validate_warnings).dump());
    if (!a.withheld.is_null()) fail("mutations withheld while enforcing: " + a.withheld.dump());
    return;
  }
  if (e.code == 400) {  // unreadable: the same refusal, whatever the mode
    if (a.code != 400 || a.message != e.message) fail("answered " + a.message + "; enforcement: " + e.message);
    return;
  }
  if (!a.allowed) fail("refused while observing: " + a.message);
  if (!a.patch.is_null()) fail("patched while observing: " + a.patch.dump());
  // What was withheld is what enforcement patched.
  const Json withheld = a.withheld.is_null() ? Json() : Json::parse(a.withheld.value("patch", ""), nullptr, false);
  if (withheld != e.patch) fail("withheld " + withheld.dump() + "; enforcement patched " + e.patch.dump());
  if (mode == "audit") {
    if (!a.mutate_warnings.empty() || !a.validate_warnings.empty()) fail("the user was warned under audit");
    if (a.validate_annotated == a.decision.is_null()) fail("findings and audit annotations disagree under audit");
    return;
  }
  // warn: a warning per withheld change (each conversion among them), and per warn finding.
  if (e.patch.is_null() != a.mutate_warnings.empty() ||
      count_starting(a.mutate_warnings, "would ") != a.mutate_warnings.size() ||
      count_starting(a.mutate_warnings, "would convert ") != count_starting(e.mutate_warnings, "converted "))
    fail("/mutate warned " + Json(a.mutate_warnings).dump() + "; enforcement patched " + e.patch.dump() +
         " and warned " + Json(e.mutate_warnings).dump());
  const auto findings = findings_of(a.decision);
  const size_t warn_findings =
      std::count_if(findings.begin(), findings.end(), [](const auto& f) { return f.second.action == "warn"; });
  if (!a.decision.contains("moreFindings") && a.validate_warnings.size() != warn_findings)
    fail("/validate warned " + Json(a.validate_warnings).dump() + " for " + std::to_string(warn_findings) +
         " warn findings");
}

// ---- Metrics ----

using Labels = std::map<std::string, std::string>;

// The samples of counter `name`: their labels and values.
std::vector<std::pair<Labels, double>> samples(const std::string& text, const std::string& name) {
  std::vector<std::pair<Labels, double>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(name + "{")) continue;
    const size_t close = line.rfind('}');
    Labels labels;
    for (size_t at = name.size() + 1; at < close;) {
      const size_t eq = line.find("=\"", at), end = line.find('"', eq + 2);
      labels[line.substr(at, eq - at)] = line.substr(eq + 2, end - eq - 2);
      at = end + 2;  // past `",`
    }
    out.emplace_back(std::move(labels), std::stod(line.substr(close + 1)));
  }
  return out;
}

using Sums = std::map<std::string, double>;

// Counter `name` summed by the labels `by` (joined with "/"), skipping zeros.
Sums sum_by(const std::string& text, const std::string& name, const std::vector<std::string>& by,
            const Labels& where = {}) {
  Sums out;
  for (const auto& [labels, value] : samples(text, name)) {
    if (value == 0) continue;
    bool selected = true;
    for (const auto& [k, v] : where) selected = selected && labels.count(k) && labels.at(k) == v;
    if (!selected) continue;
    std::string key;
    for (const auto& label : by) key += (key.empty() ? "" : "/") + (labels.count(label) ? labels.at(label) : "?");
    out[key] += value;
  }
  return out;
}

std::string shown(const Sums& sums) { return Json(sums).dump(); }

// Rule results counted with enforcement's action in every mode, under the tenant's mode; what was
// withheld plus what was applied is what enforcement applied.
void compare_metrics(const RunSpec& run, const std::string& metrics, const std::string& enforced) {
  INFO("run " << run.name);
  const std::string results = "gpu_admission_rule_results_total";
  CHECK(shown(sum_by(metrics, results, {"rule"}, {{"action", "deny"}})) ==
        shown(sum_by(enforced, results, {"rule"}, {{"action", "deny"}})));
  CHECK(shown(sum_by(metrics, results, {"rule", "action", "tenant"})) ==
        shown(sum_by(enforced, results, {"rule", "action", "tenant"})));
  for (const auto& [labels, value] : samples(metrics, results)) {
    INFO("tenant " << labels.at("tenant"));
    if (value > 0) CHECK(labels.at("mode") == run.mode_for(labels.at("tenant")));
  }
  const Sums applied = sum_by(metrics, "gpu_admission_mutations_total", {"mutation"});
  const Sums withheld = sum_by(metrics, "gpu_admission_mutations_withheld_total", {"mutation"});
  Sums both = applied;
  for (const auto& [mutation, count] : withheld) both[mutation] += count;
  CHECK(shown(both) == shown(sum_by(enforced, "gpu_admission_mutations_total", {"mutation"})));
  for (const auto& [labels, value] : samples(metrics, "gpu_admission_mutations_withheld_total")) {
    INFO("tenant " << labels.at("tenant") << ", mutation " << labels.at("mutation"));
    if (value > 0) CHECK(run.mode_for(labels.at("tenant")) != "enforce");
  }
  if (run.mode_for("") != "enforce" && run.tenant_modes.empty()) CHECK(applied.empty());
}

}  // namespace

TEST_CASE("serve: every mode finds what enforcement finds, and only enforcement acts on it", "[serve][modes]") {
  // The world the rule fixtures are judged in (test/policy/evaluation/rules/test_rule_fixtures.cpp).
  const fs::path root = test_paths::source_dir();
  const fs::path policy_path = root / "test/fixtures/policy.yaml";
  const wh::PolicyLoad fixture_load = wh::load_policy_file(policy_path.string());
  REQUIRE(fixture_load.ok());
  const wh::TextFile policy_file = wh::read_text_file(policy_path.string(), wh::kMaxPolicyFileBytes);
  const wh::YamlParse parsed = wh::parse_yaml_or_json(policy_file.text);
  REQUIRE(parsed.documents.size() == 1);

  size_t own_objects = 0;
  const std::vector<CorpusObject> corpus = load_corpus(root, *fixture_load.policy, own_objects);
  INFO("objects: " << own_objects << " of the checkout, " << corpus.size() - own_objects << " of the shared corpus");
  REQUIRE(own_objects > 400);

  const std::vector<RunSpec> runs = {
      {"enforce (--enforcement enforce)", "enforce", "", {}},
      {"warn (--enforcement warn)", "warn", "", {}},
      {"audit (--enforcement audit)", "audit", "", {}},
      {"warn (spec.enforcement: warn)", "", "warn", {}},
      // The modes of the policy: alpha observes silently, beta enforces, everyone else is warned.
      {"tenants (spec.enforcement: warn; alpha: audit; beta: enforce; under --enforcement enforce)", "enforce", "warn",
       {{"alpha", "audit"}, {"beta", "enforce"}}},
  };
  std::vector<RunResult> results;
  for (const RunSpec& run : runs) results.push_back(serve_corpus(run, parsed.documents[0].value, corpus));

  // Object by object, each run against the enforcing one.
  std::vector<std::string> mismatches;
  size_t with_findings = 0, denied = 0, patched = 0, unreadable = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const Answer& e = results[0].answers[i];
    if (!e.problem.empty()) mismatches.push_back(corpus[i].where + " under " + runs[0].name + ": " + e.problem);
    check_reference(corpus[i], e, mismatches);
    with_findings += !e.decision.is_null();
    denied += !e.allowed;
    patched += !e.patch.is_null();
    unreadable += e.code == 400;
    for (size_t r = 1; r < runs.size(); ++r) {
      const Answer& a = results[r].answers[i];
      const std::string mode = runs[r].mode_for(corpus[i].tenant);
      const std::string where = corpus[i].where + " (namespace " + corpus[i].ns + ") under " + runs[r].name;
      if (!a.problem.empty()) {
        mismatches.push_back(where + ": " + a.problem);
        continue;
      }
      compare_findings(where, mode, e, a, mismatches);
      compare_answers(where, mode, e, a, mismatches);
    }
  }
  INFO("under enforcement: " << with_findings << " objects with findings, " << denied << " denied, " << patched
                             << " patched, " << unreadable << " unreadable");
  for (size_t m = 0; m < mismatches.size() && m < 40; ++m) FAIL_CHECK(mismatches[m]);
  CHECK(mismatches.size() == 0);
  // The corpus exercises what is compared.
  CHECK(with_findings > 300);
  CHECK(denied > 250);
  CHECK(patched > 50);

  for (size_t r = 1; r < runs.size(); ++r) compare_metrics(runs[r], results[r].metrics, results[0].metrics);
  // The enforcing run applied what it found, and withheld nothing.
  CHECK(sum_by(results[0].metrics, "gpu_admission_mutations_withheld_total", {"mutation"}).empty());
  CHECK_FALSE(sum_by(results[0].metrics, "gpu_admission_mutations_total", {"mutation"}).empty());
  CHECK_FALSE(sum_by(results[0].metrics, "gpu_admission_rule_results_total", {"rule"}, {{"action", "deny"}}).empty());
}
