#include "webhook/audit/audit_kinds.h"

#include <array>

#include <simdjson.h>

#include "policy/dra/pod_group.h"

namespace gpu_admission::webhook::audit {
namespace {

using policy::WorkloadKind;

struct CoreRow {
  const char* group;
  const char* kind;
  WorkloadKind workload;
};
// Workloads whose pod template is judged as the pods it creates. Pods come last (see wanted_kinds).
constexpr std::array<CoreRow, 7> kCoreWorkloads = {{
    {"apps", "Deployment", WorkloadKind::Deployment},
    {"apps", "ReplicaSet", WorkloadKind::ReplicaSet},
    {"apps", "StatefulSet", WorkloadKind::StatefulSet},
    {"apps", "DaemonSet", WorkloadKind::DaemonSet},
    {"", "ReplicationController", WorkloadKind::ReplicationController},
    {"batch", "Job", WorkloadKind::Job},
    {"batch", "CronJob", WorkloadKind::CronJob},
}};

AuditKind workload_kind(const char* group, const char* kind, WorkloadKind workload) {
  AuditKind k;
  k.group = group;
  k.kind = kind;
  k.role = KindRole::Workload;
  k.workload = workload;
  return k;
}

}  // namespace

std::string AuditKind::list_path(std::string_view namespace_name) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (!namespace_name.empty() && role != KindRole::Namespace) path += "/namespaces/" + std::string(namespace_name);
  return path + "/" + resource;
}

std::string AuditKind::label() const {
  if (group.empty() || group == "apps" || group == "batch" || group == "resource.k8s.io") return kind;
  return kind + "." + group;
}

std::vector<AuditKind> wanted_kinds(const policy::CompiledPolicy& policy) {
  std::vector<AuditKind> out;
  AuditKind ns;
  ns.kind = "Namespace";
  ns.role = KindRole::Namespace;
  out.push_back(ns);
  for (auto [kind, claim] : {std::pair{"ResourceClaimTemplate", policy::ClaimKind::Template},
                             std::pair{"ResourceClaim", policy::ClaimKind::Claim}}) {
    AuditKind k;
    k.group = "resource.k8s.io";
    k.kind = kind;
    k.role = KindRole::Claim;
    k.claim = claim;
    out.push_back(k);
  }
  AuditKind group;
  group.group = std::string(policy::kSchedulingGroup);
  group.kind = std::string(policy::kPodGroupKind);
  group.role = KindRole::PodGroup;
  out.push_back(group);
  for (const CoreRow& row : kCoreWorkloads) out.push_back(workload_kind(row.group, row.kind, row.workload));
  auto add_template_kind = [&](const policy::WorkloadKindDef& def) {
    for (const AuditKind& k : out)
      if (k.group == def.group && k.kind == def.kind) return;  // spec.workloads first, as policy.workload_kind()
    AuditKind k;
    k.group = def.group;
    k.kind = def.kind;
    k.role = KindRole::TemplateKind;
    k.def = &def;
    out.push_back(k);
  };
  for (const auto& def : policy.policy_workload_kinds()) add_template_kind(def);
  for (const auto& def : policy::builtin_ml_kinds()) add_template_kind(def);
  out.push_back(workload_kind("", "Pod", WorkloadKind::Pod));
  return out;
}

const std::string* ServedResources::resource_of(std::string_view kind) const {
  for (const auto& [k, resource] : kind_to_resource)
    if (k == kind) return &resource;
  return nullptr;
}

std::optional<std::string> read_resource_list(std::string_view json, ServedResources& out) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(json.data(), json.size()).get(root))
    return std::string("not JSON: ") + simdjson::error_message(err);
  std::string_view group_version;
  if (root["groupVersion"].get(group_version)) return std::string("no groupVersion: not an APIResourceList");
  out.group_version = std::string(group_version);
  simdjson::dom::array resources;
  if (root["resources"].get(resources)) return std::string("no resources: not an APIResourceList");
  for (auto resource : resources) {
    std::string_view name, kind;
    if (resource["name"].get(name) || resource["kind"].get(kind)) continue;
    if (name.find('/') != std::string_view::npos) continue;  // a sub-resource (pods/status)
    bool listable = false;
    simdjson::dom::array verbs;
    if (!resource["verbs"].get(verbs))
      for (auto verb : verbs) {
        std::string_view text;
        listable = listable || (!verb.get(text) && text == "list");
      }
    if (listable && !out.resource_of(kind)) out.kind_to_resource.emplace_back(std::string(kind), std::string(name));
  }
  return std::nullopt;
}

std::optional<std::string> read_group_list(std::string_view json, std::vector<std::pair<std::string, std::string>>& out) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(json.data(), json.size()).get(root))
    return std::string("not JSON: ") + simdjson::error_message(err);
  simdjson::dom::array groups;
  if (root["groups"].get(groups)) return std::string("no groups: not an APIGroupList");
  for (auto group : groups) {
    std::string_view name, version;
    if (group["name"].get(name) || group["preferredVersion"]["version"].get(version)) continue;
    out.emplace_back(std::string(name), std::string(version));
  }
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::audit
