#include "policy/config/policy_loader.h"

#include <algorithm>
#include <set>
#include <span>

#include "policy/config/device_access_fields.h"
#include "policy/config/field_reader.h"
#include "policy/config/rollout_fields.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/config/template_paths.h"

namespace gpu_admission::policy {
namespace {

using json = Json;

// The fields of each mapping whose keys the loader checks, in the order its "unknown field" errors
// list them. The readers below get their lists from kFieldTables by the mapping's path, and
// accepted_policy_fields() lists the same tables: a field added here is a field documented in
// docs/policy-reference.md, or test/policy/config/test_policy_reference.cpp fails.
constexpr std::string_view kDocumentFields[] = {"apiVersion", "kind", "metadata", "spec"};
// Kubernetes-style metadata: only the name is used; labels and annotations are allowed.
constexpr std::string_view kMetadataFields[] = {"name", "labels", "annotations", "namespace"};
constexpr std::string_view kSpecFields[] = {"exemptions", "gpuResources", "deviceClasses", "gpuHostPaths", "gpuEnvVars",
                                            "deviceAnnotationPrefixes", "gpuSharingAnnotations", "defaults",
                                            "rules", "mutations",
                                            "pools", "tenants", "workloads", "runtimeClasses",
                                            "deviceTolerations", "enforcement", "exceptions"};
constexpr std::string_view kExemptionFields[] = {"namespaces", "usernames"};
constexpr std::string_view kGpuResourceFields[] = {"full", "migPrefix", "shared", "fractional"};
constexpr std::string_view kDeviceClassFields[] = {"full", "mig", "imex", "imexAllowed"};
constexpr std::string_view kDefaultsFields[] = {"maxGpusPerPod", "unmappedGpuPods", "gpuTaints"};
constexpr std::string_view kTaintFields[] = {"key", "value", "effect"};
constexpr std::string_view kPoolFields[] = {"name", "nodeSelector", "trust", "gpuModel", "mig", "sharing", "taints",
                                            "runtimeClasses"};
constexpr std::string_view kPoolMigFields[] = {"strategy", "defaultProfile"};
constexpr std::string_view kTenantFields[] = {"name",          "namespaces", "namespaceSelector", "labels",
                                              "maxGpusPerPod", "pools",      "defaultPool", "rules", "enforcement"};
constexpr std::string_view kExceptionFields[] = {"name",      "reason",    "rules",   "namespaces",
                                                 "tenants",   "usernames", "podLabels", "expires"};
constexpr std::string_view kSelectorFields[] = {"matchLabels", "matchExpressions"};
constexpr std::string_view kRequirementFields[] = {"key", "operator", "values"};
constexpr std::string_view kWorkloadFields[] = {"apiVersion", "kind", "templates"};
constexpr std::string_view kDeviceTolerationFields[] = {"key", "operator", "value", "effect"};

// A checked mapping: its path, `[]` standing for any item of a list ("" is the document).
struct FieldTable {
  std::string_view object;
  FieldNames fields;
};
constexpr FieldTable kFieldTables[] = {
    {"", kDocumentFields},
    {"metadata", kMetadataFields},
    {"spec", kSpecFields},
    {"spec.exemptions", kExemptionFields},
    {"spec.gpuResources", kGpuResourceFields},
    {"spec.deviceClasses", kDeviceClassFields},
    {"spec.defaults", kDefaultsFields},
    {"spec.defaults.gpuTaints[]", kTaintFields},
    {"spec.pools[]", kPoolFields},
    {"spec.pools[].mig", kPoolMigFields},
    {"spec.pools[].taints[]", kTaintFields},
    {"spec.tenants[]", kTenantFields},
    {"spec.tenants[].namespaceSelector", kSelectorFields},
    {"spec.tenants[].namespaceSelector.matchExpressions[]", kRequirementFields},
    {"spec.workloads[]", kWorkloadFields},
    {"spec.deviceTolerations[]", kDeviceTolerationFields},
    {"spec.exceptions[]", kExceptionFields},
};

// The fields of the mapping at `object`, found at compile time: a path without a table does not
// compile, so every check_fields call below names a mapping that accepted_policy_fields() lists.
consteval FieldNames fields_of(std::string_view object) {
  for (const auto& table : kFieldTables)
    if (table.object == object) return table.fields;
  throw "no entry in kFieldTables for this mapping";
}

using Reader = FieldReader;

void read_pool(Reader& r, const json& v, const std::string& path, PoolConfig& pool) {
  if (!r.expect_object(v, path)) return;
  r.check_fields(v, path, fields_of("spec.pools[]"));
  if (v.contains("name")) r.read_string(v["name"], child_path(path, "name"), pool.name, false);
  else r.error(path, "missing required field \"name\"");
  if (v.contains("nodeSelector")) {
    r.read_string_map(v["nodeSelector"], child_path(path, "nodeSelector"), pool.node_selector);
    if (pool.node_selector.empty()) r.error(child_path(path, "nodeSelector"), "must name at least one node label");
  } else {
    r.error(path, "missing required field \"nodeSelector\"");
  }
  if (v.contains("trust")) r.read_enum(v["trust"], child_path(path, "trust"), kTrustNames, pool.trust);
  if (v.contains("gpuModel")) r.read_string(v["gpuModel"], child_path(path, "gpuModel"), pool.gpu_model);
  if (v.contains("sharing")) r.read_enum(v["sharing"], child_path(path, "sharing"), kSharingNames, pool.sharing);
  if (v.contains("taints"))
    r.read_taints(v["taints"], child_path(path, "taints"), fields_of("spec.pools[].taints[]"), pool.taints);
  if (v.contains("runtimeClasses") && !v["runtimeClasses"].is_null())
    read_runtime_classes(v["runtimeClasses"], child_path(path, "runtimeClasses"), pool.runtime_classes.emplace(), r.sink());
  if (v.contains("mig") && !v["mig"].is_null()) {
    std::string mp = child_path(path, "mig");
    const json& mig = v["mig"];
    if (r.expect_object(mig, mp)) {
      r.check_fields(mig, mp, fields_of("spec.pools[].mig"));
      if (mig.contains("strategy")) r.read_enum(mig["strategy"], child_path(mp, "strategy"), kMigStrategyNames, pool.mig_strategy);
      if (mig.contains("defaultProfile"))
        r.read_string(mig["defaultProfile"], child_path(mp, "defaultProfile"), pool.mig_default_profile);
    }
  }
}

void read_requirement(Reader& r, const json& v, const std::string& path, LabelSelector& out) {
  if (!r.expect_object(v, path)) return;
  r.check_fields(v, path, fields_of("spec.tenants[].namespaceSelector.matchExpressions[]"));
  LabelRequirement req;
  if (!v.contains("key") || !r.read_string(v["key"], child_path(path, "key"), req.key, false)) {
    if (!v.contains("key")) r.error(path, "missing required field \"key\"");
    return;
  }
  constexpr std::array<std::string_view, 4> kOps = {"In", "NotIn", "Exists", "DoesNotExist"};
  if (!v.contains("operator")) {
    r.error(path, "missing required field \"operator\" (In, NotIn, Exists or DoesNotExist)");
    return;
  }
  r.read_enum(v["operator"], child_path(path, "operator"), kOps, req.op);
  if (v.contains("values")) r.read_string_list(v["values"], child_path(path, "values"), req.values);
  const bool set_op = req.op == LabelRequirement::Op::In || req.op == LabelRequirement::Op::NotIn;
  if (set_op && req.values.empty()) r.error(path, "operator " + std::string(kOps[static_cast<size_t>(req.op)]) + " needs values");
  if (!set_op && !req.values.empty())
    r.error(child_path(path, "values"), "must be empty for operator " + std::string(kOps[static_cast<size_t>(req.op)]));
  out.match_expressions.push_back(std::move(req));
}

// A Kubernetes label selector: matchLabels and matchExpressions.
void read_selector(Reader& r, const json& v, const std::string& path, std::optional<LabelSelector>& out) {
  if (v.is_null() || !r.expect_object(v, path)) return;
  r.check_fields(v, path, fields_of("spec.tenants[].namespaceSelector"));
  LabelSelector selector;
  if (v.contains("matchLabels")) r.read_string_map(v["matchLabels"], child_path(path, "matchLabels"), selector.match_labels);
  if (v.contains("matchExpressions") && !v["matchExpressions"].is_null()) {
    const json& list = v["matchExpressions"];
    const std::string lp = child_path(path, "matchExpressions");
    if (!list.is_array()) r.error(lp, std::string("must be a list, got ") + type_name(list));
    else
      for (size_t i = 0; i < list.size(); ++i) read_requirement(r, list[i], index_path(lp, i), selector);
  }
  out = std::move(selector);
}

void read_tenant(Reader& r, const json& v, const std::string& path, TenantConfig& tenant) {
  if (!r.expect_object(v, path)) return;
  r.check_fields(v, path, fields_of("spec.tenants[]"));
  if (v.contains("name")) r.read_string(v["name"], child_path(path, "name"), tenant.name, false);
  else r.error(path, "missing required field \"name\"");
  if (v.contains("namespaces")) r.read_string_list(v["namespaces"], child_path(path, "namespaces"), tenant.namespaces);
  if (v.contains("namespaceSelector"))
    read_selector(r, v["namespaceSelector"], child_path(path, "namespaceSelector"), tenant.namespace_selector);
  if (tenant.namespaces.empty() && !tenant.namespace_selector)
    r.error(path, "missing required field \"namespaces\" or \"namespaceSelector\" (which namespaces are the tenant's)");
  if (v.contains("labels")) r.read_string_map(v["labels"], child_path(path, "labels"), tenant.labels);
  if (v.contains("maxGpusPerPod")) r.read_count(v["maxGpusPerPod"], child_path(path, "maxGpusPerPod"), tenant.max_gpus_per_pod);
  if (v.contains("pools")) r.read_string_list(v["pools"], child_path(path, "pools"), tenant.pools);
  if (v.contains("defaultPool") && !v["defaultPool"].is_null())
    r.read_string(v["defaultPool"], child_path(path, "defaultPool"), tenant.default_pool);
  if (v.contains("rules")) read_rule_actions(r, v["rules"], child_path(path, "rules"), tenant.rules);
  if (v.contains("enforcement") && !v["enforcement"].is_null()) {
    Enforcement mode = Enforcement::Enforce;
    if (r.read_enum(v["enforcement"], child_path(path, "enforcement"), kEnforcementNames, mode)) tenant.enforcement = mode;
  }
}

// spec.workloads[]: {apiVersion: example.com/v1, kind: Trainer, templates: ["spec.roles[*].template"]}.
void read_workload(Reader& r, const json& v, const std::string& path, WorkloadConfig& w) {
  if (!r.expect_object(v, path)) return;
  r.check_fields(v, path, fields_of("spec.workloads[]"));
  const std::string av = child_path(path, "apiVersion");
  if (!v.contains("apiVersion")) r.error(path, "missing required field \"apiVersion\"");
  else if (r.read_string(v["apiVersion"], av, w.api_version, false) && api_group_of(w.api_version).empty())
    r.error(av, "must name an API group (group/version, e.g. example.com/v1)");
  if (!v.contains("kind")) r.error(path, "missing required field \"kind\"");
  else r.read_string(v["kind"], child_path(path, "kind"), w.kind, false);
  const std::string group(api_group_of(w.api_version));
  if ((group == "apps" || group == "batch") && workload_kind_from(w.kind))
    r.error(child_path(path, "kind"), "\"" + w.kind + "\" of " + group + " is a built-in workload kind");
  const std::string tp = child_path(path, "templates");
  if (!v.contains("templates")) {
    r.error(path, "missing required field \"templates\" (the pod template paths)");
    return;
  }
  r.read_string_list(v["templates"], tp, w.templates);
  if (v["templates"].is_array() && v["templates"].empty()) r.error(tp, "must list at least one template path");
  for (size_t i = 0; v["templates"].is_array() && i < v["templates"].size(); ++i) {
    TemplatePath parsed;
    const json& item = v["templates"][i];
    if (!item.is_string()) continue;
    if (auto err = parse_template_path(item.get<std::string>(), parsed))
      r.error(index_path(tp, i), "malformed template path " + *err);
  }
}

// Returns the mapping at spec.<key> when it is present and not null (errors reported).
const json* section(Reader& r, const json& spec, const char* key) {
  if (!spec.contains(key) || spec[key].is_null()) return nullptr;
  const json& v = spec[key];
  return r.expect_object(v, std::string("spec.") + key) ? &v : nullptr;
}

void read_exemptions(Reader& r, const json& spec, PolicyConfig& config) {
  const json* e = section(r, spec, "exemptions");
  if (!e) return;
  const std::string p = "spec.exemptions";
  r.check_fields(*e, p, fields_of("spec.exemptions"));
  if (e->contains("namespaces")) r.read_string_list((*e)["namespaces"], p + ".namespaces", config.exempt_namespaces);
  if (e->contains("usernames")) r.read_string_list((*e)["usernames"], p + ".usernames", config.exempt_usernames);
}

void read_gpu_resources(Reader& r, const json& spec, PolicyConfig& config) {
  const json* g = section(r, spec, "gpuResources");
  if (!g) return;
  const std::string p = "spec.gpuResources";
  r.check_fields(*g, p, fields_of("spec.gpuResources"));
  if (g->contains("full")) r.read_string_list((*g)["full"], p + ".full", config.gpu_full);
  if (g->contains("migPrefix")) r.read_string((*g)["migPrefix"], p + ".migPrefix", config.mig_prefix, false);
  if (g->contains("shared")) r.read_string_list((*g)["shared"], p + ".shared", config.gpu_shared);
  if (g->contains("fractional")) r.read_string_list((*g)["fractional"], p + ".fractional", config.gpu_fractional);
}

void read_device_classes(Reader& r, const json& spec, PolicyConfig& config) {
  const json* d = section(r, spec, "deviceClasses");
  if (!d) return;
  const std::string p = "spec.deviceClasses";
  r.check_fields(*d, p, fields_of("spec.deviceClasses"));
  if (d->contains("full")) r.read_string_list((*d)["full"], p + ".full", config.device_classes_full);
  if (d->contains("mig")) r.read_string_list((*d)["mig"], p + ".mig", config.device_classes_mig);
  if (d->contains("imex")) r.read_string_list((*d)["imex"], p + ".imex", config.device_classes_imex);
  if (d->contains("imexAllowed"))
    r.read_string_list((*d)["imexAllowed"], p + ".imexAllowed", config.device_classes_imex_allowed);
}

// spec.gpuHostPaths: absolute paths, each denied with everything under it.
void read_gpu_host_paths(Reader& r, const json& spec, PolicyConfig& config) {
  if (!spec.contains("gpuHostPaths")) return;
  r.read_string_list(spec["gpuHostPaths"], "spec.gpuHostPaths", config.gpu_host_paths);
  for (size_t i = 0; i < config.gpu_host_paths.size(); ++i) {
    if (!config.gpu_host_paths[i].starts_with('/'))
      r.error(index_path("spec.gpuHostPaths", i), "must be an absolute path (starting with /)");
  }
}

// spec.gpuEnvVars: env names gpu-device-access denies besides the built-in ones. A name is what
// the API server accepts as one: printable ASCII other than '='. A name listed twice, or one that
// is built in, is denied all the same: accepted.
void read_gpu_env_vars(Reader& r, const json& spec, PolicyConfig& config) {
  if (!spec.contains("gpuEnvVars")) return;
  const json& list = spec["gpuEnvVars"];
  r.read_string_list(list, "spec.gpuEnvVars", config.gpu_env_vars);
  if (!list.is_array()) return;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) continue;
    for (const char ch : list[i].get_ref<const std::string&>()) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c <= 0x7e && c != '=') continue;
      r.error(index_path("spec.gpuEnvVars", i), "must be an env var name: printable ASCII characters other than '='");
      break;
    }
  }
}

void read_device_annotation_prefixes(Reader& r, const json& spec, PolicyConfig& config) {
  if (!spec.contains("deviceAnnotationPrefixes")) return;
  r.read_string_list(spec["deviceAnnotationPrefixes"], "spec.deviceAnnotationPrefixes", config.device_annotation_prefixes);
}

// An annotation key as Kubernetes spells one: `name` or `prefix/name`, both parts non-empty,
// printable ASCII without spaces.
bool annotation_key_shape(std::string_view key) {
  const size_t slash = key.find('/');
  if (key.empty() || slash == 0 || slash + 1 == key.size()) return false;
  if (slash != std::string_view::npos && key.find('/', slash + 1) != std::string_view::npos) return false;
  return std::all_of(key.begin(), key.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; });
}

// spec.gpuSharingAnnotations: exact pod annotation keys (not prefixes: KAI and Run:ai read
// `gpu-fraction` as it is, and `example.com/gpu-fraction` is nobody's).
void read_gpu_sharing_annotations(Reader& r, const json& spec, PolicyConfig& config) {
  if (!spec.contains("gpuSharingAnnotations")) return;
  const std::string p = "spec.gpuSharingAnnotations";
  const json& list = spec["gpuSharingAnnotations"];
  r.read_string_list(list, p, config.gpu_sharing_annotations);
  if (!list.is_array()) return;
  // Indexed by the YAML list: an entry that is not a string was already reported, and not kept.
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].is_string() && !list[i].get<std::string>().empty() &&
        !annotation_key_shape(list[i].get<std::string>()))
      r.error(index_path(p, i), "must be an annotation key: name or prefix/name, without spaces");
}

void read_defaults(Reader& r, const json& spec, PolicyConfig& config) {
  const json* d = section(r, spec, "defaults");
  if (!d) return;
  const std::string p = "spec.defaults";
  r.check_fields(*d, p, fields_of("spec.defaults"));
  if (d->contains("maxGpusPerPod")) r.read_count((*d)["maxGpusPerPod"], p + ".maxGpusPerPod", config.default_max_gpus_per_pod);
  if (d->contains("unmappedGpuPods"))
    r.read_enum((*d)["unmappedGpuPods"], p + ".unmappedGpuPods", kUnmappedGpuPodsNames, config.unmapped_gpu_pods);
  if (d->contains("gpuTaints"))
    r.read_taints((*d)["gpuTaints"], p + ".gpuTaints", fields_of("spec.defaults.gpuTaints[]"), config.gpu_taints);
}

void read_rules(Reader& r, const json& spec, PolicyConfig& config) {
  const json* rules = section(r, spec, "rules");
  if (!rules) return;
  std::vector<std::pair<RuleId, Action>> actions;
  read_rule_actions(r, *rules, "spec.rules", actions);
  for (const auto& [rule, action] : actions) config.rule_actions[static_cast<size_t>(rule)] = action;
}

void read_rollout(Reader& r, const json& spec, PolicyConfig& config) {
  if (spec.contains("enforcement") && !spec["enforcement"].is_null())
    r.read_enum(spec["enforcement"], "spec.enforcement", kEnforcementNames, config.enforcement);
  if (spec.contains("exceptions"))
    read_exceptions(r, spec["exceptions"], "spec.exceptions", fields_of("spec.exceptions[]"), config.exceptions);
}

void read_mutations(Reader& r, const json& spec, PolicyConfig& config) {
  const json* m = section(r, spec, "mutations");
  if (!m) return;
  for (auto it = m->begin(); it != m->end(); ++it) {
    std::string mp = child_path("spec.mutations", it.key());
    auto id = enum_from_name<MutationId>(kMutationNames, it.key());
    if (!id) {
      r.error(mp, "unknown mutation \"" + it.key() + "\" (expected one of: " + names_list(kMutationNames) + ")");
      continue;
    }
    bool enabled = true;
    if (r.read_bool(it.value(), mp, enabled)) config.mutations[static_cast<size_t>(*id)] = enabled;
  }
}

template <typename Item, typename ReadOne>
void read_list(Reader& r, const json& spec, const char* key, const char* what, std::vector<Item>& out, ReadOne read_one) {
  if (!spec.contains(key) || spec[key].is_null()) return;
  const json& list = spec[key];
  const std::string p = std::string("spec.") + key;
  if (!list.is_array()) {
    r.error(p, std::string("must be a list of ") + what + ", got " + type_name(list));
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    Item item;
    read_one(r, list[i], index_path(p, i), item);
    out.push_back(std::move(item));
  }
}

void read_spec(Reader& r, const json& spec, PolicyConfig& config) {
  const std::string path = "spec";
  if (!r.expect_object(spec, path)) return;
  r.check_fields(spec, path, fields_of("spec"));
  read_exemptions(r, spec, config);
  read_gpu_resources(r, spec, config);
  read_device_classes(r, spec, config);
  read_gpu_host_paths(r, spec, config);
  read_gpu_env_vars(r, spec, config);
  read_device_annotation_prefixes(r, spec, config);
  read_gpu_sharing_annotations(r, spec, config);
  read_defaults(r, spec, config);
  read_rules(r, spec, config);
  read_mutations(r, spec, config);
  read_rollout(r, spec, config);
  read_list(r, spec, "pools", "pools", config.pools, read_pool);
  read_list(r, spec, "tenants", "tenants", config.tenants, read_tenant);
  read_list(r, spec, "workloads", "workload kinds", config.workloads, read_workload);
  if (spec.contains("runtimeClasses"))
    read_runtime_classes(spec["runtimeClasses"], "spec.runtimeClasses", config.runtime_classes, r.sink());
  if (spec.contains("deviceTolerations"))
    read_device_tolerations(spec["deviceTolerations"], "spec.deviceTolerations", config.device_tolerations,
                            r.sink(fields_of("spec.deviceTolerations[]")));
}

}  // namespace

PolicyLoadResult load_policy_config(const json& document, const SourceMap& marks) {
  PolicyLoadResult result;
  Reader r(marks, result.issues);
  if (!document.is_object()) {
    r.error("", std::string("the policy must be a mapping, got ") + type_name(document));
    return result;
  }
  r.check_fields(document, "", fields_of(""));
  std::string api_version, kind;
  if (!document.contains("apiVersion")) r.error("", "missing required field \"apiVersion\"");
  else if (r.read_string(document["apiVersion"], "apiVersion", api_version) && api_version != kPolicyApiVersion)
    r.error("apiVersion", "unsupported apiVersion \"" + api_version + "\" (expected " + std::string(kPolicyApiVersion) + ")");
  if (!document.contains("kind")) r.error("", "missing required field \"kind\"");
  else if (r.read_string(document["kind"], "kind", kind) && kind != kPolicyKind)
    r.error("kind", "unsupported kind \"" + kind + "\" (expected " + std::string(kPolicyKind) + ")");
  if (document.contains("metadata") && !document["metadata"].is_null()) {
    const json& md = document["metadata"];
    if (r.expect_object(md, "metadata")) {
      r.check_fields(md, "metadata", fields_of("metadata"));
      if (md.contains("name")) r.read_string(md["name"], "metadata.name", result.config.name);
    }
  }
  if (!document.contains("spec") || document["spec"].is_null()) {
    r.error("", "missing required field \"spec\"");
    return result;
  }
  read_spec(r, document["spec"], result.config);
  return result;
}

std::string PolicyField::path() const {
  std::string out(object);
  if (!out.empty()) out += '.';
  out += name;
  return out;
}

std::vector<PolicyField> accepted_policy_fields() {
  std::vector<PolicyField> out;
  for (const auto& table : kFieldTables)
    for (auto name : table.fields) out.push_back({table.object, name});
  return out;
}

static json selector_to_json(const LabelSelector& selector) {
  constexpr std::array<std::string_view, 4> kOps = {"In", "NotIn", "Exists", "DoesNotExist"};
  json out = json::object();
  if (!selector.match_labels.empty()) {
    json labels = json::object();
    for (const auto& [k, v] : selector.match_labels) labels[k] = v;
    out["matchLabels"] = labels;
  }
  if (!selector.match_expressions.empty()) {
    json list = json::array();
    for (const auto& e : selector.match_expressions) {
      json o = {{"key", e.key}, {"operator", std::string(kOps[static_cast<size_t>(e.op)])}};
      if (!e.values.empty()) o["values"] = e.values;
      list.push_back(o);
    }
    out["matchExpressions"] = list;
  }
  return out;
}

static json taints_to_json(const std::vector<TaintConfig>& ts) {
  json out = json::array();
  for (const auto& t : ts) {
    json o = {{"key", t.key}};
    if (!t.value.empty()) o["value"] = t.value;
    o["effect"] = t.effect;
    out.push_back(o);
  }
  return out;
}

static json pairs_to_json(const StringPairs& ps) {
  json out = json::object();
  for (const auto& [k, v] : ps) out[k] = v;
  return out;
}

static json pools_to_json(const std::vector<PoolConfig>& list) {
  json pools = json::array();
  for (const auto& p : list) {
    json o = {{"name", p.name}, {"nodeSelector", pairs_to_json(p.node_selector)},
              {"trust", std::string(kTrustNames[static_cast<size_t>(p.trust)])}};
    if (!p.gpu_model.empty()) o["gpuModel"] = p.gpu_model;
    json mig = {{"strategy", std::string(kMigStrategyNames[static_cast<size_t>(p.mig_strategy)])}};
    if (!p.mig_default_profile.empty()) mig["defaultProfile"] = p.mig_default_profile;
    o["mig"] = mig;
    o["sharing"] = std::string(kSharingNames[static_cast<size_t>(p.sharing)]);
    o["taints"] = taints_to_json(p.taints);
    if (p.runtime_classes) o["runtimeClasses"] = *p.runtime_classes;
    pools.push_back(o);
  }
  return pools;
}

static json tenants_to_json(const std::vector<TenantConfig>& list) {
  json tenants = json::array();
  for (const auto& t : list) {
    json o = {{"name", t.name}, {"namespaces", t.namespaces}};
    if (t.namespace_selector) o["namespaceSelector"] = selector_to_json(*t.namespace_selector);
    o["labels"] = pairs_to_json(t.labels);
    if (t.max_gpus_per_pod) o["maxGpusPerPod"] = *t.max_gpus_per_pod;
    o["pools"] = t.pools;
    if (!t.default_pool.empty()) o["defaultPool"] = t.default_pool;
    if (!t.rules.empty()) o["rules"] = rule_actions_to_json(t.rules);
    if (t.enforcement) o["enforcement"] = std::string(kEnforcementNames[static_cast<size_t>(*t.enforcement)]);
    tenants.push_back(o);
  }
  return tenants;
}

json policy_config_to_json(const PolicyConfig& c) {
  json rules = json::object();
  for (size_t i = 0; i < kRuleCount; ++i) rules[std::string(kRuleNames[i])] = std::string(kActionNames[static_cast<size_t>(c.rule_actions[i])]);
  json mutations = json::object();
  for (size_t i = 0; i < kMutationCount; ++i) mutations[std::string(kMutationNames[i])] = c.mutations[i];
  const json pools = pools_to_json(c.pools);
  const json tenants = tenants_to_json(c.tenants);
  json defaults = {{"unmappedGpuPods", std::string(kUnmappedGpuPodsNames[static_cast<size_t>(c.unmapped_gpu_pods)])},
                   {"gpuTaints", taints_to_json(c.gpu_taints)}};
  if (c.default_max_gpus_per_pod) defaults["maxGpusPerPod"] = *c.default_max_gpus_per_pod;
  json out = {
      {"apiVersion", std::string(kPolicyApiVersion)},
      {"kind", std::string(kPolicyKind)},
      {"metadata", {{"name", c.name}}},
      {"spec",
       {{"exemptions", {{"namespaces", c.exempt_namespaces}, {"usernames", c.exempt_usernames}}},
        {"gpuResources", {{"full", c.gpu_full}, {"migPrefix", c.mig_prefix}, {"shared", c.gpu_shared}}},
        {"deviceClasses",
         {{"full", c.device_classes_full},
          {"mig", c.device_classes_mig},
          {"imex", c.device_classes_imex},
          {"imexAllowed", c.device_classes_imex_allowed}}},
        {"gpuHostPaths", c.gpu_host_paths},
        {"gpuEnvVars", c.gpu_env_vars},
        {"deviceAnnotationPrefixes", c.device_annotation_prefixes},
        {"gpuSharingAnnotations", c.gpu_sharing_annotations},
        {"defaults", defaults},
        {"rules", rules},
        {"mutations", mutations},
        {"pools", pools},
        {"tenants", tenants}}},
  };
  if (!c.gpu_fractional.empty())  // left out when empty, as workloads below
    out["spec"]["gpuResources"]["fractional"] = c.gpu_fractional;
  if (!c.workloads.empty()) {  // left out when empty: the output (and the policy hash) stay as before
    json workloads = json::array();
    for (const auto& w : c.workloads)
      workloads.push_back({{"apiVersion", w.api_version}, {"kind", w.kind}, {"templates", w.templates}});
    out["spec"]["workloads"] = workloads;
  }
  // Left out when empty too, for the same reason.
  if (!c.runtime_classes.empty()) out["spec"]["runtimeClasses"] = c.runtime_classes;
  if (!c.device_tolerations.empty()) out["spec"]["deviceTolerations"] = device_tolerations_to_json(c.device_tolerations);
  out["spec"]["enforcement"] = std::string(kEnforcementNames[static_cast<size_t>(c.enforcement)]);
  if (!c.exceptions.empty()) out["spec"]["exceptions"] = exceptions_to_json(c.exceptions);
  return out;
}

}  // namespace gpu_admission::policy
