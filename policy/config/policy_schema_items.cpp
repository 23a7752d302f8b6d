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

// --- exceptions ---

void read_exception_rules(FieldReader& r, const Json& v, const std::string& p, void* o) {
  std::vector<std::string> names;
  r.read_string_list(v, p, names);
  if (v.is_array() && names.empty() && v.empty()) r.error(p, "must name at least one rule");
  for (size_t i = 0; i < names.size(); ++i) {
    auto id = enum_from_name<RuleId>(kRuleNames, names[i]);
    if (id) member<&ExceptionConfig::rules>(o).push_back(*id);
    else
      r.error(index_path(p, i), "unknown rule \"" + names[i] + "\" (expected one of: " + names_list(kRuleNames) + ")");
  }
}
Json write_exception_rules(const void* o) {
  Json rules = Json::array();
  for (RuleId rule : member<&ExceptionConfig::rules>(o)) rules.push_back(std::string(name_of(rule)));
  return rules;
}

// expires: an RFC 3339 time, kept as written for messages and `policy show`.
void read_expires(FieldReader& r, const Json& v, const std::string& p, void* o) {
  auto& e = *static_cast<ExceptionConfig*>(o);
  if (!r.read_string(v, p, e.expires_text, false)) return;
  e.expires = parse_rfc3339(e.expires_text);
  if (!e.expires) r.error(p, "\"" + e.expires_text + "\" is not an RFC 3339 time (write it as 2026-12-31T23:59:59Z)");
}
Json write_expires(const void* o) {
  const auto& e = *static_cast<const ExceptionConfig*>(o);
  return e.expires ? Json(e.expires_text) : Json();
}

// --- the tables ---

using Pool = PoolConfig;
using Tenant = TenantConfig;
using Exception = ExceptionConfig;

constexpr Field kTaintFields[] = {
    named_field("key", FieldKind::String, {"non-empty string", "required",
        "the taint's key"}, kRequired),
    named_field("value", FieldKind::String, {"string", "`\"\"`",
        "the taint's value"}),
    named_field("effect", FieldKind::Enum, {"`NoSchedule`, `PreferNoSchedule` or `NoExecute`", "required",
        "the taint's effect"}, kRequired),
};

constexpr Field kPoolMigFields[] = {
    enum_field<&Pool::mig_strategy, kMigStrategyNames>("strategy", {"`none`, `single` or `mixed`", "`none`",
        "the NVIDIA device plugin's MIG strategy on these nodes. `mixed`: slices are requested as "
        "`nvidia.com/mig-<profile>` and `mig-resources` turns whole-GPU requests into slices; `single`: "
        "slices are requested as `nvidia.com/gpu` and `mig-resources` adds a `nvidia.com/gpu.product: "
        "<gpuModel>-MIG-<profile>` node selector"}),
    string_field<&Pool::mig_default_profile>("defaultProfile", {"MIG profile", "none",
        "the profile `mig-resources` uses when a pod's `gpu-admission.io/mig-profile` annotation names none "
        "(or an invalid one). Required when `strategy` is `mixed` or `single`, and must be a profile of the "
        "`gpuModel` (`1g.10gb`, `3g.40gb+me`, ...)"}, kOmitEmpty),
};
constexpr Mapping kPoolMig{"spec.pools[].mig", kPoolMigFields};

constexpr Field kPoolFields[] = {
    required(string_field<&Pool::name, true>("name", {"non-empty string", "required",
        "the pool's name, unique among pools; tenants refer to it"})),
    required(custom_field("nodeSelector", read_node_selector, write_pairs<&Pool::node_selector>,
                          {"mapping of label to value", "required",
                              "the node labels that define the pool; at least one, and no two pools may have "
                              "the same set. A pod pins itself to the pool by selecting all of them; "
                              "`pool-selector` adds them"}, 0, nullptr, FieldKind::StringMap)),
    enum_field<&Pool::trust, kTrustNames>("trust", {"`cooperative` or `adversarial`", "`cooperative`",
        "`adversarial` marks a pool whose tenants must not share a GPU: `mps-adversarial` and `gpu-sharing` "
        "apply there"}),
    string_field<&Pool::gpu_model>("gpuModel", {"string", "`\"\"`",
        "the nodes' GPU product (their `nvidia.com/gpu.product` label, e.g. `A100-SXM4-80GB`, "
        "`NVIDIA-B300-SXM6-AC`). It selects the MIG profile table by family (see [MIG profile "
        "tables](#mig-profile-tables)). Required when `mig.strategy` is not `none`, and must then be a model "
        "with a table; a model without one counts 7 compute slices per GPU"}, kOmitEmpty),
    section_field<kPoolMig>("mig", {"mapping", "strategy `none`",
        "how the pool's GPUs are partitioned with MIG"}, kReadLast),
    enum_field<&Pool::sharing, kSharingNames>("sharing", {"`none`, `mps` or `time-slicing`", "`none`",
        "how the device plugin shares the pool's GPUs. In an adversarial pool, `mps` makes every GPU pod a "
        "`mps-adversarial` finding and `time-slicing` a `gpu-sharing` finding (and `policy lint` warns about "
        "both)"}),
    custom_field("taints", read_pool_taints, write_pool_taints, {"list of taints", "`[]`",
        "the pool's own node taints; a GPU pod in the pool must tolerate them as well as "
        "`spec.defaults.gpuTaints`"}, 0, &kPoolTaintItem,
                 FieldKind::MappingList),
    custom_field("runtimeClasses", read_pool_runtime_classes, write_optional<&Pool::runtime_classes>,
                 {"list of RuntimeClass names", "left out: `spec.runtimeClasses`",
                     "the list for GPU pods in this pool, replacing `spec.runtimeClasses` there. An empty "
                     "list (`[]`) inherits `spec.runtimeClasses` like a pool that leaves the field out: an "
                     "empty list is never \"any\" (a template that renders an empty list must not open a pool); "
                     "`policy lint` warns about `[]` while `spec.runtimeClasses` is set. A pod with no pool "
                     "uses `spec.runtimeClasses`"}, kNullIsAbsent, nullptr, FieldKind::StringList),
};

constexpr Field kRequirementFields[] = {
    named_field("key", FieldKind::String, {"non-empty string", "required",
        "the namespace label the requirement reads"}, kRequired),
    named_field("operator", FieldKind::Enum, {"`In`, `NotIn`, `Exists` or `DoesNotExist`", "required",
        "how the label is compared"},
                kRequired),
    named_field("values", FieldKind::StringList, {"list of strings", "`[]`",
        "the values for `In` and `NotIn` (at least one); must be empty for `Exists` and `DoesNotExist`"}),
};
constexpr Mapping kRequirement{"spec.tenants[].namespaceSelector.matchExpressions[]", kRequirementFields};

constexpr Field kSelectorFields[] = {
    string_map_field<&LabelSelector::match_labels>("matchLabels", {"mapping of label to value", "`{}`",
        "every pair must be on the namespace"},
                                                   kOmitEmpty),
    custom_field("matchExpressions", read_match_expressions, write_match_expressions,
                 {"list of requirements", "`[]`",
                     "every requirement must hold"}, kNullIsAbsent | kOmitEmpty, &kRequirement,
                 FieldKind::MappingList),
};

constexpr Field kTenantFields[] = {
    required(string_field<&Tenant::name, true>("name", {"non-empty string", "required",
        "the tenant's name, unique among tenants and a valid label value: `tenant-labels` writes it into the "
        "pod label `gpu-admission.io/tenant`"})),
    string_list_field<&Tenant::namespaces>("namespaces", {"list of strings", "`[]`",
        "the tenant's namespaces, exact names or `*` globs. An exact name may belong to one tenant only. A "
        "tenant needs `namespaces`, `namespaceSelector` or both"}),
    custom_field("namespaceSelector", read_namespace_selector, write_namespace_selector,
                 {"label selector", "none",
                     "the tenant's namespaces, chosen by their labels. `serve` needs cluster state for this "
                     "(the labels come from the API server); `check` and `test` take them from Namespace "
                     "objects among their inputs or from `--namespace-labels`. A namespace whose labels are "
                     "unknown matches no selector"}, 0, &kSelector, FieldKind::Mapping),
    check_entry(check_tenant_namespaces),
    string_map_field<&Tenant::labels>("labels", {"mapping of label to value", "`{}`",
        "labels `tenant-labels` adds to every pod of the tenant (for cost attribution and quotas) and "
        "`tenant-label` protects. Keys and values must be valid Kubernetes labels; `gpu-admission.io/tenant` "
        "is set by the webhook and cannot be listed"}),
    count_field<&Tenant::max_gpus_per_pod>("maxGpusPerPod",
        {"whole number, 0 to 1000000", "`spec.defaults.maxGpusPerPod`",
        "the tenant's per-pod GPU cap, counted as for the default"}),
    string_list_field<&Tenant::pools>("pools", {"list of pool names", "`[]`",
        "the pools the tenant's pods may use; each must be the name of a pool. When it is not empty, every "
        "GPU pod of the tenant must be pinned to one of them"}),
    string_field<&Tenant::default_pool>("defaultPool", {"pool name", "none",
        "the pool `pool-selector` pins a GPU pod to when it names none; must be one of the tenant's `pools`. "
        "`policy lint` warns about a tenant with pools and no default"}, kNullIsAbsent | kOmitEmpty),
    custom_field("rules", read_tenant_rules, write_tenant_rules, {"mapping of rule ID to action", "`{}`",
        "this tenant's actions, rule by rule, over `spec.rules` (a rule `off` globally can be turned on for "
        "one tenant, and the other way round); the tenant's mode still caps them"}, kOmitEmpty),
    optional_enum_field<&Tenant::enforcement, kEnforcementNames>("enforcement",
        {"`enforce`, `warn` or `audit`", "`spec.enforcement`",
        "this tenant's mode (see Rolling out below): how far the guard acts on its pods. `serve "
        "--enforcement` caps it"},
                                                                  kNullIsAbsent),
};

constexpr Field kWorkloadFields[] = {
    required(custom_field("apiVersion", read_workload_api_version, write_value<&WorkloadConfig::api_version>,
                          {"string `group/version`", "required",
                              "the kind's API version; the group is what is matched, and must not be empty"},
                          0, nullptr, FieldKind::String)),
    required(string_field<&WorkloadConfig::kind, true>("kind", {"non-empty string", "required",
        "the kind. A built-in workload kind of `apps` or `batch` cannot be redefined"})),
    check_entry(check_workload_kind),
    required(custom_field("templates", read_workload_templates, write_value<&WorkloadConfig::templates>,
                          {"list of template paths", "required",
                              "where the pod templates are, at least one path. Fields are separated by `.`, "
                              "`*` stands for every value of a mapping and `[*]` for every item of a list: "
                              "`spec.roles[*].template`, `spec.replicaSpecs.*.template`. Each template is "
                              "judged as the pod it will create; the object is refused when any template is"},
                          0, nullptr, FieldKind::StringList),
             " (the pod template paths)"),
};

// Every "missing required field" first, then the fields (kExceptionItem is required_first).
constexpr Field kExceptionFields[] = {
    required(string_field<&Exception::name, true>("name", {"string", "required",
        "the name reported with excepted findings; unique"})),
    required(string_field<&Exception::reason, true>("reason", {"string", "required",
        "why the exception exists (a ticket, an owner): for the people who read the policy"})),
    required(custom_field("rules", read_exception_rules, write_exception_rules, {"list of rule IDs", "required",
        "the rules it turns off; at least one"}, 0, nullptr, FieldKind::StringList)),
    string_list_field<&Exception::namespaces>("namespaces", {"list of globs", "any",
        "the object's namespace must match one. `policy lint` warns about an exception with neither "
        "`namespaces` nor `tenants`, or with a glob of `*` alone here and no `tenants`: it covers every "
        "namespace, those any tenant creates included"}, kOmitEmpty),
    string_list_field<&Exception::tenants>("tenants", {"list of tenant names", "any",
        "the object's tenant must be one of them (unknown names are errors)"}, kOmitEmpty),
    string_list_field<&Exception::usernames>("usernames", {"list of globs", "any",
        "the requesting user (`request.userInfo.username`) must match one: for a Deployment that is who "
        "applied it, for its pods the controller that creates them "
        "(`system:serviceaccount:kube-system:replicaset-controller`), so such an exception excepts the "
        "workload's template, not its pods. `check` and `test` have no user, so such an exception never "
        "matches there. Nor does it match when the scheduler allocates a claim (the scheduler, not the user, "
        "writes the claim's status): `policy lint` warns about every `usernames` exception, since an "
        "allocation judges the pod in full and a pod it admitted may never get its devices, and about a glob "
        "whose `*` spans a service-account namespace (`system:serviceaccount:*:argo`)"}, kOmitEmpty),
    string_map_field<&Exception::pod_labels>("podLabels", {"mapping", "any",
        "every label must be on the pod (a workload's pod template); a ResourceClaim on its own has no pod, "
        "so such an exception never matches it. `policy lint` warns about an exception that selects by "
        "`podLabels` for a rule of category `security` or `gpu` ([rules.md](rules.md#categories) lists them), "
        "whatever else it selects by: tenants set their own pods' labels, so select by `namespaces` or "
        "`tenants` instead"}, kOmitEmpty),
    custom_field("expires", read_expires, write_expires, {"RFC 3339 time (`2026-12-31T23:59:59Z`)", "never",
        "from this time on the exception does nothing. `policy lint` and `serve` (at start and each reload) "
        "warn from 14 days before, and about expired exceptions; `serve` logs `exception expired` once when "
        "it happens and exports `gpu_admission_exception_expiry_timestamp_seconds{exception}` (the chart "
        "alerts 14 days before); a finding the exception would have covered says so in its message (`... "
        "(exception monitoring-hostnet expired 2026-11-20T00:00:00Z)`). A tool that is not given the time "
        "treats every exception that expires as expired"}, kNullIsAbsent, nullptr, FieldKind::String),
};

// Read by read_device_tolerations (device_access_fields.cpp), whose checks span the fields.
constexpr Field kDeviceTolerationFields[] = {
    named_field("key", FieldKind::String, {"label key", "`\"\"`",
        "the taint key; empty only with `operator: Exists`, which then tolerates every key (`policy lint` "
        "warns)"}),
    named_field("operator", FieldKind::Enum, {"`Exists` or `Equal`", "`Equal`",
        "`Exists`: any value of the key; `Equal`: only `value`"}),
    named_field("value", FieldKind::String, {"label value", "`\"\"`",
        "the taint value for `Equal`; must be empty with `Exists`"}),
    named_field("effect", FieldKind::Enum, {"`NoSchedule`, `NoExecute` or empty", "`\"\"` (every effect)",
        "the taint effect the entry covers"}),
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
