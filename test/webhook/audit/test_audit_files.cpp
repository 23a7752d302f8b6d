// `audit FILE` reads its inputs as streams (audit_files.cpp): a JSON List item by item, YAML
// document by document. Each case audits the same input twice, streamed and with the whole-file
// reading the audit used before (kept below as the reference), and wants the same result or the
// same error: a large List in any item order, the spool in a temporary file, in memory and the
// file read where it lies, YAML, and the inputs the streaming pass hands back to the whole-file
// reading (not a List, invalid JSON, a List inside the List, repeated keys, flow YAML).
#include "audit_test_support.h"

#include <algorithm>

#include "webhook/audit/audit_output.h"
#include "webhook/io/manifests.h"
#include "webhook/io/yaml_json.h"
#include "webhook/cluster/watch_decoder.h"

using namespace audit_test;
using gpu_admission::Json;

namespace {

// The whole-file reading: every file parsed into one tree, objects sorted by kind (stable),
// each re-serialised and parsed again. The reference the streamed reading must match.
std::optional<std::string> read_whole_reference(const std::vector<std::string>& paths, const std::vector<AuditKind>& kinds,
                                                Auditor& auditor) {
  std::vector<ManifestObject> objects;
  for (const std::string& path : paths) {
    ManifestRead read = read_manifest_file(path);
    if (read.error) return *read.error;
    for (auto& o : read.objects) objects.push_back(std::move(o));
  }
  std::vector<std::pair<size_t, const ManifestObject*>> ordered;
  for (const auto& o : objects) {
    const Json& object = o.object;
    const std::string kind = object.is_object() && object.contains("kind") && object["kind"].is_string()
                                 ? object["kind"].get<std::string>() : "";
    const std::string api_version = object.is_object() && object.contains("apiVersion") && object["apiVersion"].is_string()
                                        ? object["apiVersion"].get<std::string>() : "";
    const std::string_view group = gpu_admission::policy::api_group_of(api_version);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const AuditKind& k) { return k.group == group && k.kind == kind; });
    if (o.from_review || it == kinds.end()) {
      auditor.skip(o.from_review ? "AdmissionReviews (judge them with check)" : "objects of other kinds");
      continue;
    }
    ordered.emplace_back(static_cast<size_t>(it - kinds.begin()), &o);
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  simdjson::dom::parser parser;
  REQUIRE(!cluster::allow_stored_depth(parser));
  for (const auto& [index, o] : ordered) {
    AuditKind kind = kinds[index];
    const std::string api_version = o->object.value("apiVersion", "");
    const auto slash = api_version.find('/');
    kind.version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    const std::string text = to_json_text(o->object);
    simdjson::dom::element element;
    REQUIRE(!parser.parse(text).get(element));
    auditor.add(kind, element);
  }
  return std::nullopt;
}

// The audit's JSON result, or "error: ...".
std::string audited(const std::vector<std::string>& paths, bool streamed, const FileReadOptions& options = {}) {
  Auditor auditor(fixture_policy(), 1'800'000'000);
  const auto kinds = wanted_kinds(fixture_policy());
  const auto error = streamed ? read_files_into(paths, kinds, auditor, options) : read_whole_reference(paths, kinds, auditor);
  if (error) return "error: " + *error;
  return audit_json(auditor.finish()).dump(1);
}

// The same result (or error) streamed and read whole.
std::string same_both_ways(const std::vector<std::string>& paths, const FileReadOptions& options = {}) {
  const std::string streamed = audited(paths, true, options);
  const std::string whole = audited(paths, false);
  CHECK(streamed == whole);
  return streamed;
}

Json labelled_meta(const std::string& ns, const std::string& name, const std::string& uid) {
  Json m = {{"name", name}, {"namespace", ns}, {"uid", uid}};
  if (ns == "team-alpha") m["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}};
  return m;
}

Json owner(const std::string& api_version, const std::string& kind, const std::string& name, const std::string& uid) {
  return Json::array({{{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}, {"controller", true}}});
}

Json container(bool privileged, int gpus = 0) {
  Json c = {{"name", "main"}, {"image", "registry.example.com/app:1"}};
  if (privileged) c["securityContext"] = {{"privileged", true}};
  if (gpus > 0) c["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  return c;
}

// `pods` small pods over three namespaces: a Deployment's (through ReplicaSets) and a Job's,
// pods of their own, a tenth privileged, some unlabelled in team-alpha, some finished, some
// asking for too many GPUs; their Namespaces, Deployments, ReplicaSets and Jobs. The List holds
// pods first and Namespaces last: the reading must put them back in the kinds' order.
Json big_list(int pods) {
  const std::vector<std::string> namespaces = {"team-alpha", "beta-dev", "sandbox"};
  Json items = Json::array();
  Json workloads = Json::array();
  for (size_t n = 0; n < namespaces.size(); ++n) {
    const std::string& ns = namespaces[n];
    for (int d = 0; d < 10; ++d) {
      const std::string dep = "web-" + std::to_string(d), dep_uid = ns + "-dep-" + std::to_string(d);
      const bool bad = d % 4 == 0;
      Json template_spec = {{"containers", Json::array({container(bad)})}};
      workloads.push_back({{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", labelled_meta(ns, dep, dep_uid)},
                           {"spec", {{"template", {{"spec", template_spec}}}}}});
      Json rs_meta = labelled_meta(ns, dep + "-1", dep_uid + "-rs");
      rs_meta["ownerReferences"] = owner("apps/v1", "Deployment", dep, dep_uid);
      workloads.push_back({{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"metadata", rs_meta},
                           {"spec", {{"template", {{"spec", template_spec}}}}}});
      workloads.push_back({{"apiVersion", "batch/v1"}, {"kind", "Job"},
                           {"metadata", labelled_meta(ns, "train-" + std::to_string(d), ns + "-job-" + std::to_string(d))},
                           {"spec", {{"template", {{"spec", {{"containers", Json::array({container(false, d % 3)})},
                                                              {"restartPolicy", "Never"}}}}}}}});
    }
    workloads.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}, {"uid", "ns-" + ns}}}});
  }
  for (int i = 0; i < pods; ++i) {
    const std::string& ns = namespaces[static_cast<size_t>(i) % namespaces.size()];
    const int d = (i / 3) % 10;
    Json meta = labelled_meta(ns, "pod-" + std::to_string(i), "uid-" + std::to_string(i));
    if (i % 97 == 0) meta.erase("labels");
    switch (i % 5) {
      case 0: meta["ownerReferences"] = owner("apps/v1", "ReplicaSet", "web-" + std::to_string(d) + "-1", ns + "-dep-" + std::to_string(d) + "-rs"); break;
      case 1: meta["ownerReferences"] = owner("batch/v1", "Job", "train-" + std::to_string(d), ns + "-job-" + std::to_string(d)); break;
      default: break;
    }
    Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta},
                {"spec", {{"containers", Json::array({container(i % 10 == 3 || (i % 5 == 0 && d % 4 == 0), i % 7 == 2 ? 3 : 0)})}}},
                {"status", {{"phase", i % 50 == 7 ? "Succeeded" : "Running"}}}};
    items.push_back(std::move(pod));
  }
  for (auto& w : workloads) items.push_back(std::move(w));
  return {{"apiVersion", "v1"}, {"items", std::move(items)}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}};
}

struct TempPath {
  std::string path;
  explicit TempPath(const std::string& text, const std::string& suffix = ".json") : path(write_temp(text, suffix)) {}
  ~TempPath() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("audit files: a List of 20,000 pods in any item order, streamed, as it was read whole", "[audit]") {
  const Json list = big_list(20'000);
  TempPath compact(list.dump());
  TempPath pretty(list.dump(2));
  // What the audit found, so that the comparison compares something.
  const std::string result = same_both_ways({compact.path});
  const Json out = Json::parse(result.substr(0, 7) == "error: " ? "{}" : result);
  REQUIRE(out.contains("judged"));
  CHECK(out["judged"]["Pod"].get<int>() > 19'000);
  CHECK(out["judged"]["Deployment"] == 30);
  CHECK(out["violatingObjects"].get<int>() > 100);
  CHECK(out["skipped"]["finished pods (Succeeded or Failed)"] == 400);
  // Pretty-printed, read where it lies, with the spool in memory, in chunks of every size.
  CHECK(same_both_ways({pretty.path}) == result);
  FileReadOptions in_place;
  in_place.keep_open_above = 0;
  CHECK(audited({compact.path}, true, in_place) == result);
  FileReadOptions in_memory;
  in_memory.spool_dir = "/nonexistent/spool";
  CHECK(audited({compact.path}, true, in_memory) == result);
  // The same objects as YAML documents, and split over two files.
  std::string yaml;
  for (const Json& item : list["items"]) yaml += "---\n" + to_yaml(item);
  TempPath as_yaml(yaml, ".yaml");
  CHECK(same_both_ways({as_yaml.path}) == result);
  // One YAML List (`kubectl get -A -o yaml`), its entries split off one by one.
  TempPath yaml_list(to_yaml(list), ".yaml");
  CHECK(same_both_ways({yaml_list.path}) == result);
  Json first = list, second = list;
  first["items"] = Json::array();
  second["items"] = Json::array();
  for (size_t i = 0; i < list["items"].size(); ++i) (i % 2 ? first : second)["items"].push_back(list["items"][i]);
  TempPath first_half(first.dump()), second_half(second.dump(1));
  same_both_ways({first_half.path, second_half.path});
}

TEST_CASE("audit files: what the streaming pass cannot take is read whole, with the same result or error", "[audit]") {
  const std::string pod_ok = R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok", "namespace": "sandbox"},
    "spec": {"containers": [{"name": "c", "image": "i"}]}})";
  const std::string pod_bad = R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "sandbox"},
    "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}})";
  const std::string ns = R"({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sandbox"}})";
  const std::string review = R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {"uid": "u", "operation": "CREATE", "object": )" + pod_bad + "}}";
  const auto list = [](const std::string& items, const std::string& kind = "List") {
    return R"({"apiVersion": "v1", "kind": ")" + kind + R"(", "items": [)" + items + "]}";
  };
  struct Case {
    std::string name, text;
    std::string says;  // the error ("" for a result)
  };
  const std::vector<Case> cases = {
      {"kind before items, other kinds and scalars among them", list(pod_bad + ", 42, \"x\", null, " + ns + ", " + pod_ok), ""},
      {"a PodList", list(pod_bad, "PodList"), ""},
      {"an AdmissionReview among the items", list(review + ", " + pod_ok), ""},
      {"a List inside the List", list(list(pod_bad) + ", " + pod_ok), ""},
      {"a repeated key: the last one counts",
       list(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "twice", "namespace": "sandbox"},
                "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]},
                "spec": {"containers": [{"name": "c", "image": "i"}]}})"), ""},
      {"a repeated kind", list(R"({"apiVersion": "v1", "kind": "Secret", "kind": "Pod", "metadata": {"name": "k", "namespace": "sandbox"}, "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}})"), ""},
      {"a pod without a name", list(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "sandbox"}})"), ""},
      {"not a List: one Pod", pod_bad, ""},
      {"not a List: items but kind Lis", list(pod_bad, "Lis"), ""},
      {"a JSON array", "[" + pod_bad + "]", ""},
      {"a byte order mark", "\xEF\xBB\xBF" + list(pod_bad), ""},
      {"flow YAML that is not JSON", "{apiVersion: v1, kind: List, items: [" + pod_bad + "]}", ""},
      {"JSON objects one after another (flow YAML documents)", pod_bad + "\n---\n" + pod_ok, ""},
      {"an empty file", "", ""},
      {"only whitespace", " \n\t\n", ""},
      {"truncated", list(pod_bad).substr(0, 60), "invalid"},
      {"an item that is flow YAML, not JSON", list(pod_ok + ", {\"a\": tru}"), ""},
      {"an item that is neither", list(pod_ok + ", {\"a\": [}"), "invalid JSON"},
      {"invalid UTF-8 in an item", list(pod_ok + ", {\"a\": \"\xC3\x28\"}"), "invalid UTF-8"},
      {"a control character", list("{\"a\": \"x\x01y\"}"), "control character"},
      {"too deep", list(std::string(10'000, '[') + std::string(10'000, ']')), "nesting deeper"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    TempPath file(c.text);
    const std::string result = same_both_ways({file.path});
    if (c.says.empty()) {
      CHECK(result.rfind("error: ", 0) == std::string::npos);
    } else {
      CHECK(result.find(c.says) != std::string::npos);
      CHECK(result.find(file.path) != std::string::npos);
    }
  }
}

TEST_CASE("audit files: YAML is read document by document, errors at the file's lines", "[audit]") {
  std::string yaml = "# pods\n";
  for (int i = 0; i < 50; ++i)
    yaml += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) +
            ", namespace: sandbox}\nspec:\n  containers: [{name: c, image: i" +
            (i % 7 == 0 ? ", securityContext: {privileged: true}" : "") + "}]\n";
  yaml += "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: sandbox}\n...\n";
  TempPath good(yaml, ".yaml");
  const std::string result = same_both_ways({good.path});
  CHECK(result.find("\"Pod\": 50") != std::string::npos);
  // A broken document far down: named at its line in the file, nothing judged.
  TempPath broken(yaml + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: [\n", ".yaml");
  const std::string error = same_both_ways({broken.path});
  const int lines = static_cast<int>(std::count(yaml.begin(), yaml.end(), '\n'));
  CHECK(error.find(broken.path + ":" + std::to_string(lines + 5) + ":1: invalid YAML") != std::string::npos);
  // Anchors within a document, merge keys.
  TempPath anchors("---\napiVersion: v1\nkind: Pod\nmetadata: &m {name: a, namespace: sandbox}\nspec:\n"
                   "  containers: [&c {name: c, image: i, securityContext: {privileged: true}}]\n"
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {<<: {namespace: sandbox}, name: b}\nspec:\n"
                   "  containers: [{name: c, image: i}]\n", ".yaml");
  same_both_ways({anchors.path});
}

TEST_CASE("audit files: YAML Lists are split into their entries, with the whole-file reading's result", "[audit]") {
  const std::string bad = "  kind: Pod\n  metadata: {name: bad, namespace: sandbox}\n  spec:\n    containers:\n"
                          "    - {name: c, image: i, securityContext: {privileged: true}}\n";
  const std::string ok = "  kind: Pod\n  metadata:\n    name: ok\n    namespace: sandbox\n  spec:\n"
                         "    containers: [{name: c, image: i}]\n";
  const auto entry = [](const std::string& body, int indent) {
    std::string text = std::string(static_cast<size_t>(indent), ' ') + "- apiVersion: v1\n";
    for (size_t at = 0; at < body.size();) {
      const size_t end = body.find('\n', at);
      text += std::string(static_cast<size_t>(indent), ' ') + body.substr(at, end + 1 - at);
      at = end + 1;
    }
    return text;
  };
  struct Case {
    std::string name, text, says;
  };
  const std::vector<Case> cases = {
      {"kubectl's -o yaml", "apiVersion: v1\nitems:\n" + entry(bad, 0) + entry(ok, 0) + "kind: List\nmetadata:\n  resourceVersion: \"\"\n", ""},
      {"an indented sequence, kind first, comments between entries",
       "kind: List # all of it\napiVersion: v1\nitems: # the pods\n\n  # first\n" + entry(bad, 2) + "\n  # second\n" + entry(ok, 2), ""},
      {"a PodList", "apiVersion: v1\nkind: PodList\nitems:\n" + entry(bad, 0), ""},
      {"an empty and a flow sequence", "kind: List\nitems: []\n---\nkind: List\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: sandbox}}]\n", ""},
      {"items that are not a sequence", "apiVersion: v1\nkind: ConfigMap\nitems:\n  a: b\n", ""},
      {"not a List: a sequence under items of another kind", "apiVersion: example.com/v1\nkind: Thing\nitems:\n" + entry(bad, 0), ""},
      {"a multi-line value before items: read whole", "kind: List\nnote: \"two\n  lines\"\nitems:\n" + entry(bad, 0), ""},
      {"a List of Lists", "kind: List\nitems:\n- kind: List\n  items:\n" + entry(bad, 2), ""},
      {"scalars and empty entries", "kind: List\nitems:\n- 42\n-\n- just text\n" + entry(ok, 0), ""},
      {"a List after a document", "apiVersion: v1\nkind: Namespace\nmetadata: {name: sandbox}\n---\nkind: List\nitems:\n" + entry(bad, 0) + "...\n", ""},
      {"a broken entry", "kind: List\nitems:\n" + entry(ok, 0) + entry(ok, 0) + "- kind: Pod\n  metadata: {name: [\n", "invalid YAML"},
      {"a broken line after the entries", "apiVersion: v1\nitems:\n" + entry(bad, 0) + entry(ok, 0) + "kind: [List\n", "invalid YAML"},
  };
  for (const Case& c : cases) {
    INFO(c.name << "\n" << c.text);
    TempPath file(c.text, ".yaml");
    const std::string result = same_both_ways({file.path});
    if (c.says.empty()) {
      CHECK(result.rfind("error: ", 0) == std::string::npos);
    } else {
      CHECK(result.find(c.says) != std::string::npos);
    }
  }
}

TEST_CASE("audit files: a List too large to read whole names the line and item that is wrong", "[audit]") {
  // 66 MiB of small pods (past the 64 MiB a text read whole may have), item 150,001 broken.
  std::string text = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n";
  const std::string pod = R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "sandbox"}, )"
                          R"("spec": {"containers": [{"name": "c", "image": "registry.example.com/a-long-image-name:1"}]}})";
  std::string padded = pod;
  padded.insert(padded.size() - 1, ", \"pad\": \"" + std::string(460 - pod.size() - 12, 'x') + "\"");
  const size_t count = (66u << 20) / (padded.size() + 2);
  for (size_t i = 0; i < count; ++i) text += padded + ",\n";
  text += R"({"kind": "Pod", "spec": tru})";
  text += "\n]}\n";
  REQUIRE(text.size() > (64u << 20));
  TempPath file(text);
  const std::string error = audited({file.path}, true);
  INFO(error.substr(0, 300));
  CHECK(error.find("error: " + file.path + ":" + std::to_string(count + 2) + ": item " + std::to_string(count + 1) +
                   " of the List: not JSON") == 0);
  // Not a List at all: its size is what is wrong.
  TempPath not_list("[" + text.substr(text.find('\n') + 1));
  CHECK(audited({not_list.path}, true).find("too large (more than 64 MiB) for anything but a List") != std::string::npos);
}

TEST_CASE("audit files: unreadable inputs are named", "[audit]") {
  CHECK(audited({"/nonexistent/pods.json"}, true) == "error: /nonexistent/pods.json: cannot read: No such file or directory");
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(audited({dir}, true) == "error: " + dir + ": cannot read: is a directory");
}
