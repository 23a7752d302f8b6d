// The schema's walker (reading and writing a mapping by its table) and the tables of the document,
// metadata and spec's own mappings; spec's list items are in policy_schema_items.cpp. See
// policy_schema.h.
#include "policy/config/policy_schema.h"

#include <algorithm>

#include "policy/config/device_access_fields.h"
#include "policy/config/policy_loader.h"
#include "policy/config/rollout_fields.h"
#include "policy/config/schema_kinds.h"
#include "policy/config/schema_tables.h"

namespace gpu_admission::policy {
namespace schema {

std::vector<std::string_view> field_names(const Mapping& m) {
  std::vector<std::string_view> out;
  for (const auto& f : m.fields)
    if (!f.name.empty()) out.push_back(f.name);
  return out;
}

void read_taints(FieldReader& r, const Json& v, const std::string& path, const Mapping& item,
                 std::vector<TaintConfig>& out) {
  const auto names = field_names(item);
  r.read_taints(v, path, names, out);
}

Json taints_json(const std::vector<TaintConfig>& ts) {
  Json out = Json::array();
  for (const auto& t : ts) {
    Json o = {{"key", t.key}};
    if (!t.value.empty()) o["value"] = t.value;
    o["effect"] = t.effect;
    out.push_back(o);
  }
  return out;
}

namespace {

// --- custom readers of spec's fields with checks of their own ---

// Reads the top-level apiVersion/kind: a string that must be `expected`.
template <const std::string_view& Expected, const char* What>
void read_constant(FieldReader& r, const Json& v, const std::string& p, void*) {
  std::string text;
  if (r.read_string(v, p, text) && text != Expected)
    r.error(p, std::string("unsupported ") + What + " \"" + text + "\" (expected " + std::string(Expected) + ")");
}
template <const std::string_view& Value>
Json write_constant(const void*) {
  return std::string(Value);
}
constexpr char kApiVersionWord[] = "apiVersion";
constexpr char kKindWord[] = "kind";

// spec.gpuHostPaths: absolute paths, each denied with everything under it.
void read_gpu_host_paths(FieldReader& r, const Json& v, const std::string& p, void* o) {
  auto& paths = member<&PolicyConfig::gpu_host_paths>(o);
  r.read_string_list(v, p, paths);
  for (size_t i = 0; i < paths.size(); ++i)
    if (!paths[i].starts_with('/')) r.error(index_path(p, i), "must be an absolute path (starting with /)");
}

// spec.gpuEnvVars: env names gpu-device-access denies besides the built-in ones. A name is what
// the API server accepts as one: printable ASCII other than '='. A name listed twice, or one that
// is built in, is denied all the same: accepted.
void read_gpu_env_vars(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string_list(v, p, member<&PolicyConfig::gpu_env_vars>(o));
  if (!v.is_array()) return;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) continue;
    for (const char ch : v[i].get_ref<const std::string&>()) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c <= 0x7e && c != '=') continue;
      r.error(index_path(p, i), "must be an env var name: printable ASCII characters other than '='");
      break;
    }
  }
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
void read_gpu_sharing_annotations(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string_list(v, p, member<&PolicyConfig::gpu_sharing_annotations>(o));
  if (!v.is_array()) return;
  // Indexed by the YAML list: an entry that is not a string was already reported, and not kept.
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].is_string() && !v[i].get<std::string>().empty() && !annotation_key_shape(v[i].get<std::string>()))
      r.error(index_path(p, i), "must be an annotation key: name or prefix/name, without spaces");
}

void read_rules(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (v.is_null() || !r.expect_object(v, p)) return;
  std::vector<std::pair<RuleId, Action>> actions;
  read_rule_actions(r, v, p, actions);
  for (const auto& [rule, action] : actions) member<&PolicyConfig::rule_actions>(o)[static_cast<size_t>(rule)] = action;
}
Json write_rules(const void* o) {
  Json rules = Json::object();
  const auto& actions = member<&PolicyConfig::rule_actions>(o);
  for (size_t i = 0; i < kRuleCount; ++i)
    rules[std::string(kRuleNames[i])] = std::string(kActionNames[static_cast<size_t>(actions[i])]);
  return rules;
}

void read_mutations(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (v.is_null() || !r.expect_object(v, p)) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string mp = child_path(p, it.key());
    auto id = enum_from_name<MutationId>(kMutationNames, it.key());
    if (!id) {
      r.error(mp, "unknown mutation \"" + it.key() + "\" (expected one of: " + names_list(kMutationNames) + ")");
      continue;
    }
    bool enabled = true;
    if (r.read_bool(it.value(), mp, enabled)) member<&PolicyConfig::mutations>(o)[static_cast<size_t>(*id)] = enabled;
  }
}
Json write_mutations(const void* o) {
  Json mutations = Json::object();
  for (size_t i = 0; i < kMutationCount; ++i)
    mutations[std::string(kMutationNames[i])] = member<&PolicyConfig::mutations>(o)[i];
  return mutations;
}

void read_exception_list(FieldReader& r, const Json& v, const std::string& p, void* o) {
  const auto names = field_names(kExceptionItem);
  read_exceptions(r, v, p, names, member<&PolicyConfig::exceptions>(o));
}
Json write_exception_list(const void* o) { return exceptions_to_json(member<&PolicyConfig::exceptions>(o)); }

void read_spec_runtime_classes(FieldReader& r, const Json& v, const std::string& p, void* o) {
  read_runtime_classes(v, p, member<&PolicyConfig::runtime_classes>(o), r.sink());
}

void read_toleration_list(FieldReader& r, const Json& v, const std::string& p, void* o) {
  const auto names = field_names(kDeviceTolerationItem);
  read_device_tolerations(v, p, member<&PolicyConfig::device_tolerations>(o), r.sink(names));
}
Json write_toleration_list(const void* o) {
  return device_tolerations_to_json(member<&PolicyConfig::device_tolerations>(o));
}

void read_gpu_taints(FieldReader& r, const Json& v, const std::string& p, void* o) {
  read_taints(r, v, p, kDefaultsTaintItem, member<&PolicyConfig::gpu_taints>(o));
}
Json write_gpu_taints(const void* o) { return taints_json(member<&PolicyConfig::gpu_taints>(o)); }

// The spec mapping, read into the same PolicyConfig as the document.
void read_spec(FieldReader& r, const Json& v, const std::string& p, void* o);
Json write_spec(const void* o);

// --- the tables ---

using PC = PolicyConfig;
constexpr FieldDoc D(std::string_view) { return {}; }
constexpr char kPools[] = "pools";
constexpr char kTenants[] = "tenants";
constexpr char kWorkloadKinds[] = "workload kinds";

constexpr Field kExemptionFields[] = {
    string_list_field<&PC::exempt_namespaces>("namespaces", D("spec.exemptions.namespaces")),
    string_list_field<&PC::exempt_usernames>("usernames", D("spec.exemptions.usernames")),
};
constexpr Mapping kExemptions{"spec.exemptions", kExemptionFields};

constexpr Field kGpuResourceFields[] = {
    string_list_field<&PC::gpu_full>("full", D("spec.gpuResources.full")),
    string_field<&PC::mig_prefix, true>("migPrefix", D("spec.gpuResources.migPrefix")),
    string_list_field<&PC::gpu_shared>("shared", D("spec.gpuResources.shared")),
    string_list_field<&PC::gpu_fractional>("fractional", D("spec.gpuResources.fractional"), kOmitEmpty),
};
constexpr Mapping kGpuResources{"spec.gpuResources", kGpuResourceFields};

constexpr Field kDeviceClassFields[] = {
    string_list_field<&PC::device_classes_full>("full", D("spec.deviceClasses.full")),
    string_list_field<&PC::device_classes_mig>("mig", D("spec.deviceClasses.mig")),
    string_list_field<&PC::device_classes_imex>("imex", D("spec.deviceClasses.imex")),
    string_list_field<&PC::device_classes_imex_allowed>("imexAllowed", D("spec.deviceClasses.imexAllowed")),
};
constexpr Mapping kDeviceClasses{"spec.deviceClasses", kDeviceClassFields};

constexpr Field kDefaultsFields[] = {
    count_field<&PC::default_max_gpus_per_pod>("maxGpusPerPod", D("spec.defaults.maxGpusPerPod"), kWriteLast),
    enum_field<&PC::unmapped_gpu_pods, kUnmappedGpuPodsNames>("unmappedGpuPods", D("spec.defaults.unmappedGpuPods")),
    custom_field("gpuTaints", read_gpu_taints, write_gpu_taints, D("spec.defaults.gpuTaints"), 0, &kDefaultsTaintItem,
                 FieldKind::MappingList),
};
constexpr Mapping kDefaults{"spec.defaults", kDefaultsFields};

constexpr Field kSpecFields[] = {
    section_field<kExemptions>("exemptions", D("spec.exemptions")),
    section_field<kGpuResources>("gpuResources", D("spec.gpuResources")),
    section_field<kDeviceClasses>("deviceClasses", D("spec.deviceClasses")),
    custom_field("gpuHostPaths", read_gpu_host_paths, write_value<&PC::gpu_host_paths>, D("spec.gpuHostPaths"), 0,
                 nullptr, FieldKind::StringList),
    custom_field("gpuEnvVars", read_gpu_env_vars, write_value<&PC::gpu_env_vars>, D("spec.gpuEnvVars"), 0, nullptr,
                 FieldKind::StringList),
    string_list_field<&PC::device_annotation_prefixes>("deviceAnnotationPrefixes", D("spec.deviceAnnotationPrefixes")),
    custom_field("gpuSharingAnnotations", read_gpu_sharing_annotations, write_value<&PC::gpu_sharing_annotations>,
                 D("spec.gpuSharingAnnotations"), 0, nullptr, FieldKind::StringList),
    section_field<kDefaults>("defaults", D("spec.defaults")),
    custom_field("rules", read_rules, write_rules, D("spec.rules")),
    custom_field("mutations", read_mutations, write_mutations, D("spec.mutations")),
    list_field<&PC::pools, kPoolItem, kPools>("pools", D("spec.pools"), kReadLast),
    list_field<&PC::tenants, kTenantItem, kTenants>("tenants", D("spec.tenants"), kReadLast),
    list_field<&PC::workloads, kWorkloadItem, kWorkloadKinds>("workloads", D("spec.workloads"), kReadLast | kOmitEmpty),
    custom_field("runtimeClasses", read_spec_runtime_classes, write_value<&PC::runtime_classes>,
                 D("spec.runtimeClasses"), kReadLast | kOmitEmpty, nullptr, FieldKind::StringList),
    custom_field("deviceTolerations", read_toleration_list, write_toleration_list, D("spec.deviceTolerations"),
                 kReadLast | kOmitEmpty, &kDeviceTolerationItem, FieldKind::MappingList),
    enum_field<&PC::enforcement, kEnforcementNames>("enforcement", D("spec.enforcement"), kNullIsAbsent),
    custom_field("exceptions", read_exception_list, write_exception_list, D("spec.exceptions"), kOmitEmpty,
                 &kExceptionItem, FieldKind::MappingList),
};
constexpr Mapping kSpec{"spec", kSpecFields};

// Kubernetes-style metadata: only the name is used; labels and annotations are allowed.
constexpr Field kMetadataFields[] = {
    string_field<&PC::name>("name", D("metadata.name")),
    named_field("labels", FieldKind::Custom, D("metadata.labels")),
    named_field("annotations", FieldKind::Custom, D("metadata.annotations")),
    named_field("namespace", FieldKind::Custom, D("metadata.namespace")),
};
constexpr Mapping kMetadata{"metadata", kMetadataFields};

constexpr Field kDocumentFields[] = {
    required(custom_field("apiVersion", read_constant<kPolicyApiVersion, kApiVersionWord>,
                          write_constant<kPolicyApiVersion>, D("apiVersion"), 0, nullptr, FieldKind::String)),
    required(custom_field("kind", read_constant<kPolicyKind, kKindWord>, write_constant<kPolicyKind>, D("kind"), 0,
                          nullptr, FieldKind::String)),
    section_field<kMetadata>("metadata", D("metadata")),
    required(custom_field("spec", read_spec, write_spec, D("spec"), kNullIsAbsent, &kSpec, FieldKind::Mapping)),
};
constexpr Mapping kDocument{"", kDocumentFields};

void read_spec(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (r.expect_object(v, p)) read_mapping(r, v, p, kSpec, o);
}
Json write_spec(const void* o) { return write_mapping(kSpec, o); }

// The mappings under `m`, depth first, parents before children.
void collect(const Mapping& m, std::vector<const Mapping*>& out) {
  if (std::find(out.begin(), out.end(), &m) != out.end()) return;
  out.push_back(&m);
  for (const auto& f : m.fields)
    if (f.fields) collect(*f.fields, out);
}

bool present(const Json& v, const Field& f) {
  return v.contains(f.name) && !(f.has(kNullIsAbsent) && v[f.name].is_null());
}

std::string missing(const Field& f) {
  return "missing required field \"" + std::string(f.name) + "\"" + std::string(f.missing_hint);
}

// A written value left out: null always, empty ones where the entry says so.
bool left_out(const Json& v, const Field& f) {
  if (v.is_null()) return true;
  if (!f.has(kOmitEmpty)) return false;
  return (v.is_string() && v.get_ref<const std::string&>().empty()) || ((v.is_array() || v.is_object()) && v.empty());
}

}  // namespace
}  // namespace schema

const Mapping& policy_document_schema() { return schema::kDocument; }

std::vector<const Mapping*> policy_mappings() {
  std::vector<const Mapping*> out;
  schema::collect(schema::kDocument, out);
  return out;
}

const Mapping* find_mapping(std::string_view path) {
  for (const Mapping* m : policy_mappings())
    if (m->path == path) return m;
  return nullptr;
}

void read_mapping(FieldReader& r, const Json& v, const std::string& path, const Mapping& m, void* object) {
  const auto names = schema::field_names(m);
  r.check_fields(v, path, names);
  if (m.required_first)
    for (const auto& f : m.fields)
      if (f.has(kRequired) && !schema::present(v, f)) r.error(path, schema::missing(f));
  for (const bool last : {false, true}) {
    for (const auto& f : m.fields) {
      if (f.has(kReadLast) != last) continue;
      if (f.check) {
        f.check(r, v, path, object);
      } else if (!schema::present(v, f)) {
        if (f.has(kRequired) && !m.required_first) r.error(path, schema::missing(f));
      } else if (f.read) {
        f.read(r, v[f.name], child_path(path, f.name), object);
      }
    }
  }
}

Json write_mapping(const Mapping& m, const void* object) {
  Json out = Json::object();
  for (const bool last : {false, true}) {
    for (const auto& f : m.fields) {
      if (f.has(kWriteLast) != last || !f.write) continue;
      Json v = f.write(object);
      if (!schema::left_out(v, f)) out[std::string(f.name)] = std::move(v);
    }
  }
  return out;
}

}  // namespace gpu_admission::policy
