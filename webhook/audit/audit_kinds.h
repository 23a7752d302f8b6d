// The kinds an audit judges, in the order it reads them: first the facts (Namespaces, then
// ResourceClaimTemplates, ResourceClaims and PodGroups, which pods refer to), then every kind with a pod
// template (core and apps/batch workloads, the built-in ML kinds, the policy's spec.workloads),
// then Pods. Discovery says which of them a cluster serves, in which version and under which
// plural name; kinds it does not serve are left out with a note (a CRD that is not installed).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/compiled_policy.h"
#include "policy/config/template_paths.h"
#include "policy/dra/claim_view.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::webhook::audit {

enum class KindRole : uint8_t {
  Namespace,      // its labels choose tenants (a fact, not judged)
  Claim,          // a ResourceClaim or ResourceClaimTemplate: a fact for pods, and judged
  PodGroup,       // a PodGroup (scheduling.k8s.io): a fact for its pods, and judged
  Workload,       // a Pod or a core/apps/batch workload (policy::WorkloadKind)
  TemplateKind,   // judged by template paths (ML kinds, spec.workloads)
};

struct AuditKind {
  std::string group;     // "" for the core group
  std::string version;   // from discovery ("v1"); the newest served for claims
  std::string resource;  // plural, from discovery ("deployments")
  std::string kind;      // "Deployment"
  KindRole role = KindRole::Workload;
  policy::WorkloadKind workload = policy::WorkloadKind::Pod;      // Workload
  policy::ClaimKind claim = policy::ClaimKind::Claim;              // Claim
  const policy::WorkloadKindDef* def = nullptr;                    // TemplateKind

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // The collection: cluster-wide when `namespace_name` is empty.
  std::string list_path(std::string_view namespace_name = {}) const;
  // How results and metrics name the kind: "Deployment", "PyTorchJob.kubeflow.org" (a kind
  // outside the core, apps, batch and resource.k8s.io groups carries its group).
  std::string label() const;
  bool is_pod() const { return role == KindRole::Workload && workload == policy::WorkloadKind::Pod; }
};

// Every kind the audit wants for `policy`, without versions and plurals (discovery fills them),
// in reading order. `defs` of TemplateKinds point into the policy (or the built-in table).
std::vector<AuditKind> wanted_kinds(const policy::CompiledPolicy& policy);

// What discovery found for one API group version: kind -> plural of the resources it serves
// that can be listed (sub-resources such as pods/status are left out).
struct ServedResources {
  std::string group_version;
  std::vector<std::pair<std::string, std::string>> kind_to_resource;
  const std::string* resource_of(std::string_view kind) const;
};

// Reads an APIResourceList document (/api/v1, /apis/GROUP/VERSION); an error message naming
// what is wrong when it is not one.
std::optional<std::string> read_resource_list(std::string_view json, ServedResources& out);
// The preferred version of every group in an APIGroupList (/apis): group -> version.
std::optional<std::string> read_group_list(std::string_view json, std::vector<std::pair<std::string, std::string>>& out);

}  // namespace gpu_admission::webhook::audit
