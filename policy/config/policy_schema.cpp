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
constexpr char kPools[] = "pools";
constexpr char kTenants[] = "tenants";
constexpr char kWorkloadKinds[] = "workload kinds";
constexpr char kExceptions[] = "exceptions";

constexpr Field kExemptionFields[] = {
    string_list_field<&PC::exempt_namespaces>("namespaces", {"list of strings", "",
        "requests in these namespaces skip every rule and mutation. Each entry is an exact name or a glob "
        "where `*` stands for any run of characters (`infra-*`)"}),
    string_list_field<&PC::exempt_usernames>("usernames", {"list of strings", "",
        "requests made by these users (the AdmissionReview's `userInfo.username`) skip every rule and "
        "mutation; exact names or `*` globs"}),
};
constexpr Mapping kExemptions{"spec.exemptions", kExemptionFields};

constexpr Field kGpuResourceFields[] = {
    string_list_field<&PC::gpu_full>("full", {"list of strings", "",
        "extended resources of which each unit is one whole GPU"}),
    string_field<&PC::mig_prefix, true>("migPrefix", {"non-empty string", "",
        "a resource named this prefix followed by a MIG profile (`nvidia.com/mig-3g.40gb`) is a MIG slice; it "
        "counts as its share of a GPU (3 of the model's 7 compute slices is 3/7 of a GPU)"}),
    string_list_field<&PC::gpu_shared>("shared", {"list of strings", "",
        "extended resources of which each unit is a shared replica of a GPU (time-slicing or MPS replicas); "
        "each unit counts as one GPU. In an adversarial pool, `gpu-sharing` refuses them"}),
    string_list_field<&PC::gpu_fractional>("fractional", {"list of strings", "",
        "extended resources of a GPU-sharing layer that ask for a fraction of a GPU (HAMi: "
        "`nvidia.com/gpumem`, `nvidia.com/gpumem-percentage`, `nvidia.com/gpucores`). They make a GPU pod but "
        "count no GPUs themselves (the count comes from the GPU resource beside them). In an adversarial "
        "pool, `gpu-sharing` refuses them"}, kOmitEmpty),
};
constexpr Mapping kGpuResources{"spec.gpuResources", kGpuResourceFields};

constexpr Field kDeviceClassFields[] = {
    string_list_field<&PC::device_classes_full>("full", {"list of strings", "",
        "DeviceClasses of which each device is one whole GPU"}),
    string_list_field<&PC::device_classes_mig>("mig", {"list of strings", "",
        "DeviceClasses of which each device is one MIG slice: it counts as its profile's share of a GPU when "
        "the request's selector pins the profile, and as one whole GPU otherwise"}),
    string_list_field<&PC::device_classes_imex>("imex", {"list of strings", "",
        "DeviceClasses of the NVIDIA compute-domain driver that hand out IMEX channels or daemons (Multi-Node "
        "NVLink memory sharing between the workloads of a ComputeDomain). They count no GPUs. In an "
        "adversarial pool, `gpu-device-access` refuses a request of one of them with `allocationMode: All` or "
        "a `count` above 1 (every channel, or a range of them)"}),
    string_list_field<&PC::device_classes_imex_allowed>("imexAllowed", {"list of strings", "",
        "DeviceClasses whose requests for every IMEX channel of a compute domain adversarial pools accept (a "
        "class the platform reserves for its own multi-node jobs). Any class may be listed, `imex` or not"}),
};
constexpr Mapping kDeviceClasses{"spec.deviceClasses", kDeviceClassFields};

constexpr Field kDefaultsFields[] = {
    count_field<&PC::default_max_gpus_per_pod>("maxGpusPerPod", {"whole number, 0 to 1000000", "no cap",
        "the most GPUs a pod may ask for when its tenant sets no `maxGpusPerPod` (also for pods of no "
        "tenant). Counted in GPUs: whole GPUs, shared replicas, MIG slices as their share of a GPU, and DRA "
        "devices"}, kWriteLast),
    enum_field<&PC::unmapped_gpu_pods, kUnmappedGpuPodsNames>("unmappedGpuPods", {"`deny` or `allow`", "",
        "what `tenant-pool` does with a GPU pod in a namespace that belongs to no tenant: with `deny` it is "
        "refused (nothing says which pools it may use), with `allow` it is judged by the other rules only. A "
        "namespace whose labels could not be read from the API server while a `namespaceSelector` tenant "
        "might own it is not \"no tenant\": its GPU pods are refused either way"}),
    custom_field("gpuTaints", read_gpu_taints, write_gpu_taints, {"list of taints", "",
        "taints carried by every GPU node; `gpu-tolerations` requires every GPU pod to tolerate all of them"},
                 0, &kDefaultsTaintItem,
                 FieldKind::MappingList),
};
constexpr Mapping kDefaults{"spec.defaults", kDefaultsFields};

constexpr Field kSpecFields[] = {
    section_field<kExemptions>("exemptions", {"mapping", "none",
        "namespaces and users that no rule or mutation touches"}),
    section_field<kGpuResources>("gpuResources", {"mapping", "see below",
        "which extended resources are GPUs"}),
    section_field<kDeviceClasses>("deviceClasses", {"mapping", "see below",
        "which Dynamic Resource Allocation (DRA) DeviceClasses hand out GPUs"}),
    custom_field("gpuHostPaths", read_gpu_host_paths, write_value<&PC::gpu_host_paths>, {"list of absolute paths", "",
        "added to the built-in list of host paths that `gpu-device-access` refuses as `hostPath` volumes; "
        "each entry also covers everything under it. Use it for site-specific locations (a kubelet "
        "`--root-dir` other than `/var/lib/kubelet`, a driver installed under `/home/kubernetes/bin/nvidia`). "
        "Every entry must start with `/`"}, 0,
                 nullptr, FieldKind::StringList),
    custom_field("gpuEnvVars", read_gpu_env_vars, write_value<&PC::gpu_env_vars>, {"list of env var names", "",
        "added to the built-in env var names that `gpu-device-access` refuses (`NVIDIA_VISIBLE_DEVICES`, "
        "`NVIDIA_MIG_CONFIG_DEVICES`, `NVIDIA_MIG_MONITOR_DEVICES`, `NVIDIA_IMEX_CHANNELS`, `NVIDIA_MOFED`, "
        "`NVIDIA_NVSWITCH`, `NVIDIA_GDS`, `NVIDIA_GDRCOPY`, `CUDA_DISABLE_CONTROL`): an `env` entry of that "
        "exact name (case-sensitive), with a value or `valueFrom`, and an `envFrom` prefix that could spell "
        "it, are refused. Use it for the variables of a site's runtime or sharing layer that hand out devices "
        "or drop isolation. Each name must be non-empty, printable ASCII other than `=` (what the API server "
        "accepts as an env var name); a name listed twice, or one already built in, is accepted and changes "
        "nothing"}, 0, nullptr,
                 FieldKind::StringList),
    string_list_field<&PC::device_annotation_prefixes>("deviceAnnotationPrefixes", {"list of strings", "",
        "a pod annotation whose key starts with one of these prefixes (case-sensitive), or equals a prefix "
        "without its trailing `/` (the NRI CDI plugin reads the bare key `nvidia.cdi.k8s.io`; an entry "
        "without a trailing `/`, like `io.kubernetes.cri-o.Devices`, matches keys that begin with it), is "
        "refused by `gpu-device-access`: such annotations ask the container runtime or an NRI plugin to "
        "inject devices, or (`mounts.noderesource.dev/`, `mounts.nri.io/`) to mount any host path. Setting "
        "the field replaces the default list"}),
    custom_field("gpuSharingAnnotations", read_gpu_sharing_annotations, write_value<&PC::gpu_sharing_annotations>,
                 {"list of annotation keys", "",
                     "pod annotations with which a scheduler puts several pods on one GPU with no memory "
                     "isolation between them: KAI Scheduler and Run:ai read `gpu-fraction` (a share of a GPU, "
                     "`\"0.5\"`), `gpu-memory` (MiB of a GPU) and `gpu-fraction-num-devices` (that share on "
                     "several GPUs). A pod with an annotation whose key equals an entry (exactly, "
                     "case-sensitive: the schedulers read these bare keys, so `kai.scheduler/gpu-fraction` is "
                     "nobody's) is a GPU pod that counts no GPUs, like a `fractional` resource: it is pinned "
                     "to a pool and must tolerate the GPU taints. In a pool with `trust: adversarial`, "
                     "`gpu-sharing` refuses it; `hide-gpus` leaves its containers alone. Add the keys of "
                     "other schedulers or versions (`gpu-fraction.limit`, `gpu-memory.limit`); `[]` judges no "
                     "annotation. Each entry is `name` or `prefix/name`, without spaces. Setting the field "
                     "replaces the default list"}, 0, nullptr, FieldKind::StringList),
    section_field<kDefaults>("defaults", {"mapping", "see below",
        "the cap, the treatment of GPU pods outside every tenant, the GPU node taints"}),
    custom_field("rules", read_rules, write_rules, {"mapping of rule ID to action", "every rule `deny`",
        "the action of each rule (see [Rules](#rules))"}),
    custom_field("mutations", read_mutations, write_mutations,
                 {"mapping of mutation name to boolean", "every mutation `true`",
        "which mutations run (see [Mutations](#mutations))"}),
    list_field<&PC::pools, kPoolItem, kPools>("pools", {"list of pools", "",
        "the GPU node pools"}, kReadLast),
    list_field<&PC::tenants, kTenantItem, kTenants>("tenants", {"list of tenants", "",
        "who owns which namespaces, and what they may use"}, kReadLast),
    list_field<&PC::workloads, kWorkloadItem, kWorkloadKinds>("workloads", {"list of workload kinds", "",
        "extra custom resources whose pod templates are judged"}, kReadLast | kOmitEmpty),
    custom_field("runtimeClasses", read_spec_runtime_classes, write_value<&PC::runtime_classes>,
                 {"list of RuntimeClass names", "",
                     "when not empty, `gpu-device-access` refuses a GPU pod whose `spec.runtimeClassName` is "
                     "not in the list (container runtimes differ in how they hand GPUs to containers and "
                     "isolate them). A GPU pod without `runtimeClassName` runs with the node's default "
                     "runtime handler, which no list names: it is refused too, and the message lists the "
                     "allowed classes. Pods without GPUs are not judged. Each entry must be a DNS-1123 "
                     "subdomain (`nvidia`, `kata-qemu-nvidia-gpu`), listed once. Names are compared exactly"},
                 kReadLast | kOmitEmpty, nullptr, FieldKind::StringList),
    custom_field("deviceTolerations", read_toleration_list, write_toleration_list, {"list of tolerations", "",
        "`gpu-device-access` refuses a DRA GPU request (a `spec.deviceClasses` class) with a toleration that "
        "no entry allows, for pods (through their claims, also when devices are allocated) and for "
        "ResourceClaims and ResourceClaimTemplates on their own. An entry allows a toleration when the entry "
        "tolerates every device taint the toleration tolerates: `{key: k, operator: Exists}` allows `{key: k, "
        "operator: Equal, value: v}`; `{key: k, value: v, effect: NoSchedule}` allows neither `{key: k, "
        "operator: Exists}` nor `{key: k, value: v}` without an effect (which also tolerates `NoExecute`); a "
        "toleration with no key and `Exists` (every taint) is allowed only by such an entry. One entry must "
        "cover a toleration on its own. `tolerationSeconds` never matters (it only shortens a toleration)"},
                 kReadLast | kOmitEmpty, &kDeviceTolerationItem, FieldKind::MappingList),
    enum_field<&PC::enforcement, kEnforcementNames>("enforcement", {"`enforce`, `warn` or `audit`", "",
        "the strongest action any rule may take, for a staged rollout (see [Rolling "
        "out](#rolling-out-enforcement-tenant-rules-and-exceptions))"}, kNullIsAbsent),
    list_field<&PC::exceptions, kExceptionItem, kExceptions>("exceptions", {"list of exceptions", "",
        "rules turned off for the objects an exception selects, until it expires (see [Rolling "
        "out](#rolling-out-enforcement-tenant-rules-and-exceptions))"}, kOmitEmpty),
};
constexpr Mapping kSpec{"spec", kSpecFields};

// Kubernetes-style metadata: only the name is used; labels and annotations are allowed.
constexpr Field kMetadataFields[] = {
    string_field<&PC::name>("name", {"string", "",
        "the policy's name, shown in the logs and in the `gpu_admission_policy_info{name,hash}` metric"}),
    named_field("labels", FieldKind::Custom, {"any", "none",
        "accepted so that a Kubernetes-style manifest loads; ignored"}),
    named_field("annotations", FieldKind::Custom, {"any", "none",
        "accepted and ignored"}),
    named_field("namespace", FieldKind::Custom, {"any", "none",
        "accepted and ignored"}),
};
constexpr Mapping kMetadata{"metadata", kMetadataFields};

constexpr Field kDocumentFields[] = {
    required(custom_field("apiVersion", read_constant<kPolicyApiVersion, kApiVersionWord>,
                          write_constant<kPolicyApiVersion>, {"string", "required",
                              "must be `gpu-admission.io/v1alpha1`"}, 0, nullptr, FieldKind::String)),
    required(custom_field("kind", read_constant<kPolicyKind, kKindWord>, write_constant<kPolicyKind>,
                          {"string", "required",
        "must be `GpuAdmissionPolicy`"}, 0,
                          nullptr, FieldKind::String)),
    section_field<kMetadata>("metadata", {"mapping", "none",
        "Kubernetes-style metadata; only `name` is used"}),
    required(custom_field("spec", read_spec, write_spec, {"mapping", "required",
        "everything below"}, kNullIsAbsent, &kSpec, FieldKind::Mapping)),
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
