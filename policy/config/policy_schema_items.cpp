// The schema's tables of the items of spec's lists: pools, tenants (and their namespace
// selector), workloads, exceptions, device tolerations and taints. See policy_schema.h.
#include <array>

#include "policy/config/device_access_fields.h"
#include "policy/config/rollout_fields.h"
#include "policy/config/schema_kinds.h"
#include "policy/config/schema_tables.h"
#include "policy/config/template_paths.h"
#include "policy/decoding/pod_decoder.h"

namespace gpu_admission::policy::schema {

extern const Mapping kPoolTaintItem;  // spec.pools[].taints[]
extern const Mapping kSelector;       // spec.tenants[].namespaceSelector

namespace {

constexpr FieldDoc D(std::string_view) { return {}; }
constexpr std::array<std::string_view, 4> kOperatorNames = {"In", "NotIn", "Exists", "DoesNotExist"};

// --- pools ---

void read_node_selector(FieldReader& r, const Json& v, const std::string& p, void* o) {
  auto& selector = member<&PoolConfig::node_selector>(o);
  r.read_string_map(v, p, selector);
  if (selector.empty()) r.error(p, "must name at least one node label");
}

void read_pool_taints(FieldReader& r, const Json& v, const std::string& p, void* o) {
  read_taints(r, v, p, kPoolTaintItem, member<&PoolConfig::taints>(o));
}
Json write_pool_taints(const void* o) { return taints_json(member<&PoolConfig::taints>(o)); }

// spec.pools[].runtimeClasses: left out (or null) is not the same as empty.
void read_pool_runtime_classes(FieldReader& r, const Json& v, const std::string& p, void* o) {
  read_runtime_classes(v, p, member<&PoolConfig::runtime_classes>(o).emplace(), r.sink());
}

// --- tenants ---

void read_requirement(FieldReader& r, const Json& v, const std::string& path, LabelSelector& out);

void read_namespace_selector(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (v.is_null() || !r.expect_object(v, p)) return;
  LabelSelector selector;
  read_mapping(r, v, p, kSelector, &selector);
  member<&TenantConfig::namespace_selector>(o) = std::move(selector);
}
Json write_namespace_selector(const void* o) {
  const auto& selector = member<&TenantConfig::namespace_selector>(o);
  return selector ? write_mapping(kSelector, &*selector) : Json();
}

void read_match_expressions(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (!v.is_array()) {
    r.error(p, std::string("must be a list, got ") + type_name(v));
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) read_requirement(r, v[i], index_path(p, i), *static_cast<LabelSelector*>(o));
}
Json write_match_expressions(const void* o) {
  Json list = Json::array();
  for (const auto& e : member<&LabelSelector::match_expressions>(o)) {
    Json item = {{"key", e.key}, {"operator", std::string(kOperatorNames[static_cast<size_t>(e.op)])}};
    if (!e.values.empty()) item["values"] = e.values;
    list.push_back(item);
  }
  return list;
}

// A tenant's namespaces come from a list, a selector or both.
void check_tenant_namespaces(FieldReader& r, const Json&, const std::string& path, void* o) {
  const auto& tenant = *static_cast<const TenantConfig*>(o);
  if (tenant.namespaces.empty() && !tenant.namespace_selector)
    r.error(path, "missing required field \"namespaces\" or \"namespaceSelector\" (which namespaces are the tenant's)");
}

void read_tenant_rules(FieldReader& r, const Json& v, const std::string& p, void* o) {
  read_rule_actions(r, v, p, member<&TenantConfig::rules>(o));
}
Json write_tenant_rules(const void* o) { return rule_actions_to_json(member<&TenantConfig::rules>(o)); }

// --- workloads ---

void read_workload_api_version(FieldReader& r, const Json& v, const std::string& p, void* o) {
  auto& api_version = member<&WorkloadConfig::api_version>(o);
  if (r.read_string(v, p, api_version, false) && api_group_of(api_version).empty())
    r.error(p, "must name an API group (group/version, e.g. example.com/v1)");
}

void check_workload_kind(FieldReader& r, const Json&, const std::string& path, void* o) {
  const auto& w = *static_cast<const WorkloadConfig*>(o);
  const std::string group(api_group_of(w.api_version));
  if ((group == "apps" || group == "batch") && workload_kind_from(w.kind))
    r.error(child_path(path, "kind"), "\"" + w.kind + "\" of " + group + " is a built-in workload kind");
}

void read_workload_templates(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string_list(v, p, member<&WorkloadConfig::templates>(o));
  if (v.is_array() && v.empty()) r.error(p, "must list at least one template path");
  for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
    TemplatePath parsed;
    if (!v[i].is_string()) continue;
    if (auto err = parse_template_path(v[i].get<std::string>(), parsed))
      r.error(index_path(p, i), "malformed template path " + *err);
  }
}

// --- the tables ---

using Pool = PoolConfig;
using Tenant = TenantConfig;

constexpr Field kTaintFields[] = {
    named_field("key", FieldKind::String, D("taints[].key"), kRequired),
    named_field("value", FieldKind::String, D("taints[].value")),
    named_field("effect", FieldKind::Enum, D("taints[].effect"), kRequired),
};

constexpr Field kPoolMigFields[] = {
    enum_field<&Pool::mig_strategy, kMigStrategyNames>("strategy", D("spec.pools[].mig.strategy")),
    string_field<&Pool::mig_default_profile>("defaultProfile", D("spec.pools[].mig.defaultProfile"), kOmitEmpty),
};
constexpr Mapping kPoolMig{"spec.pools[].mig", kPoolMigFields};

constexpr Field kPoolFields[] = {
    required(string_field<&Pool::name, true>("name", D("spec.pools[].name"))),
    required(custom_field("nodeSelector", read_node_selector, write_pairs<&Pool::node_selector>,
                          D("spec.pools[].nodeSelector"), 0, nullptr, FieldKind::StringMap)),
    enum_field<&Pool::trust, kTrustNames>("trust", D("spec.pools[].trust")),
    string_field<&Pool::gpu_model>("gpuModel", D("spec.pools[].gpuModel"), kOmitEmpty),
    section_field<kPoolMig>("mig", D("spec.pools[].mig"), kReadLast),
    enum_field<&Pool::sharing, kSharingNames>("sharing", D("spec.pools[].sharing")),
    custom_field("taints", read_pool_taints, write_pool_taints, D("spec.pools[].taints"), 0, &kPoolTaintItem,
                 FieldKind::MappingList),
    custom_field("runtimeClasses", read_pool_runtime_classes, write_optional<&Pool::runtime_classes>,
                 D("spec.pools[].runtimeClasses"), kNullIsAbsent, nullptr, FieldKind::StringList),
};

constexpr Field kRequirementFields[] = {
    named_field("key", FieldKind::String, D("spec.tenants[].namespaceSelector.matchExpressions[].key"), kRequired),
    named_field("operator", FieldKind::Enum, D("spec.tenants[].namespaceSelector.matchExpressions[].operator"),
                kRequired),
    named_field("values", FieldKind::StringList, D("spec.tenants[].namespaceSelector.matchExpressions[].values")),
};
constexpr Mapping kRequirement{"spec.tenants[].namespaceSelector.matchExpressions[]", kRequirementFields};

constexpr Field kSelectorFields[] = {
    string_map_field<&LabelSelector::match_labels>("matchLabels", D("spec.tenants[].namespaceSelector.matchLabels"),
                                                   kOmitEmpty),
    custom_field("matchExpressions", read_match_expressions, write_match_expressions,
                 D("spec.tenants[].namespaceSelector.matchExpressions"), kNullIsAbsent | kOmitEmpty, &kRequirement,
                 FieldKind::MappingList),
};

constexpr Field kTenantFields[] = {
    required(string_field<&Tenant::name, true>("name", D("spec.tenants[].name"))),
    string_list_field<&Tenant::namespaces>("namespaces", D("spec.tenants[].namespaces")),
    custom_field("namespaceSelector", read_namespace_selector, write_namespace_selector,
                 D("spec.tenants[].namespaceSelector"), 0, &kSelector, FieldKind::Mapping),
    check_entry(check_tenant_namespaces),
    string_map_field<&Tenant::labels>("labels", D("spec.tenants[].labels")),
    count_field<&Tenant::max_gpus_per_pod>("maxGpusPerPod", D("spec.tenants[].maxGpusPerPod")),
    string_list_field<&Tenant::pools>("pools", D("spec.tenants[].pools")),
    string_field<&Tenant::default_pool>("defaultPool", D("spec.tenants[].defaultPool"), kNullIsAbsent | kOmitEmpty),
    custom_field("rules", read_tenant_rules, write_tenant_rules, D("spec.tenants[].rules"), kOmitEmpty),
    optional_enum_field<&Tenant::enforcement, kEnforcementNames>("enforcement", D("spec.tenants[].enforcement"),
                                                                  kNullIsAbsent),
};

constexpr Field kWorkloadFields[] = {
    required(custom_field("apiVersion", read_workload_api_version, write_value<&WorkloadConfig::api_version>,
                          D("spec.workloads[].apiVersion"), 0, nullptr, FieldKind::String)),
    required(string_field<&WorkloadConfig::kind, true>("kind", D("spec.workloads[].kind"))),
    check_entry(check_workload_kind),
    required(custom_field("templates", read_workload_templates, write_value<&WorkloadConfig::templates>,
                          D("spec.workloads[].templates"), 0, nullptr, FieldKind::StringList),
             " (the pod template paths)"),
};

// Read by read_exceptions (rollout_fields.cpp), whose checks span the fields.
constexpr Field kExceptionFields[] = {
    named_field("name", FieldKind::String, D("spec.exceptions[].name"), kRequired),
    named_field("reason", FieldKind::String, D("spec.exceptions[].reason"), kRequired),
    named_field("rules", FieldKind::StringList, D("spec.exceptions[].rules"), kRequired),
    named_field("namespaces", FieldKind::StringList, D("spec.exceptions[].namespaces")),
    named_field("tenants", FieldKind::StringList, D("spec.exceptions[].tenants")),
    named_field("usernames", FieldKind::StringList, D("spec.exceptions[].usernames")),
    named_field("podLabels", FieldKind::StringMap, D("spec.exceptions[].podLabels")),
    named_field("expires", FieldKind::String, D("spec.exceptions[].expires")),
};

// Read by read_device_tolerations (device_access_fields.cpp), whose checks span the fields.
constexpr Field kDeviceTolerationFields[] = {
    named_field("key", FieldKind::String, D("spec.deviceTolerations[].key")),
    named_field("operator", FieldKind::Enum, D("spec.deviceTolerations[].operator")),
    named_field("value", FieldKind::String, D("spec.deviceTolerations[].value")),
    named_field("effect", FieldKind::Enum, D("spec.deviceTolerations[].effect")),
};

}  // namespace

constexpr Mapping kPoolTaintItem{"spec.pools[].taints[]", kTaintFields};
constexpr Mapping kDefaultsTaintItem{"spec.defaults.gpuTaints[]", kTaintFields};
constexpr Mapping kPoolItem{"spec.pools[]", kPoolFields};
constexpr Mapping kSelector{"spec.tenants[].namespaceSelector", kSelectorFields};
constexpr Mapping kTenantItem{"spec.tenants[]", kTenantFields};
constexpr Mapping kWorkloadItem{"spec.workloads[]", kWorkloadFields};
constexpr Mapping kExceptionItem{"spec.exceptions[]", kExceptionFields, true};
constexpr Mapping kDeviceTolerationItem{"spec.deviceTolerations[]", kDeviceTolerationFields};

namespace {

void read_requirement(FieldReader& r, const Json& v, const std::string& path, LabelSelector& out) {
  if (!r.expect_object(v, path)) return;
  const auto names = field_names(kRequirement);
  r.check_fields(v, path, names);
  LabelRequirement req;
  if (!v.contains("key") || !r.read_string(v["key"], child_path(path, "key"), req.key, false)) {
    if (!v.contains("key")) r.error(path, "missing required field \"key\"");
    return;
  }
  if (!v.contains("operator")) {
    r.error(path, "missing required field \"operator\" (In, NotIn, Exists or DoesNotExist)");
    return;
  }
  r.read_enum(v["operator"], child_path(path, "operator"), kOperatorNames, req.op);
  if (v.contains("values")) r.read_string_list(v["values"], child_path(path, "values"), req.values);
  const bool set_op = req.op == LabelRequirement::Op::In || req.op == LabelRequirement::Op::NotIn;
  const std::string op(kOperatorNames[static_cast<size_t>(req.op)]);
  if (set_op && req.values.empty()) r.error(path, "operator " + op + " needs values");
  if (!set_op && !req.values.empty()) r.error(child_path(path, "values"), "must be empty for operator " + op);
  out.match_expressions.push_back(std::move(req));
}

}  // namespace
}  // namespace gpu_admission::policy::schema
