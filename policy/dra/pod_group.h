// Workloads and PodGroups (Kubernetes 1.36+ scheduling.k8s.io, feature gate GenericWorkload;
// claims with DRAWorkloadResourceClaims): a PodGroup's spec.resourceClaims are devices shared by
// every pod of the group, the pods that name it in spec.schedulingGroup.podGroupName. This unit
// decodes a PodGroup (scheduling.k8s.io/v1alpha2 in 1.36, v1alpha3 and v1beta1 in 1.37: the same
// shape) into a PodGroupView, and declares the PodGroupResolver through which the evaluator finds
// a pod's group (the inputs of `check`, the cluster state of `serve`): no I/O here. Strings are
// views into the decoded document.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "policy/decoding/pod_decoder.h"  // DecodeError
#include "policy/views/pod_view.h"        // PodResourceClaim

namespace gpu_admission::policy {

inline constexpr std::string_view kSchedulingGroup = "scheduling.k8s.io";
inline constexpr std::string_view kPodGroupKind = "PodGroup";
inline constexpr std::string_view kPodGroupResource = "podgroups";

struct PodGroupView {
  std::string_view api_version;
  std::string_view name;
  std::string_view namespace_name;
  std::string_view uid;  // metadata.uid (status.reservedFor names the group by it)
  // spec.resourceClaims: {name, resourceClaimName | resourceClaimTemplateName}, the same shape as
  // a pod's entries (index: the position in the list).
  std::vector<PodResourceClaim> resource_claims;
  // status.resourceClaimStatuses: entry name -> the claim made from its template for the group.
  std::vector<std::pair<std::string_view, std::string_view>> claim_statuses;

  void clear();
  // The entry that stands for the claim named `claim_name`: one naming it, or a template entry
  // the status maps to it; nullptr when none does.
  const PodResourceClaim* entry_for_claim(std::string_view claim_name) const;
};

// Where the evaluator finds a pod's PodGroup, by namespace and name; nullptr means not found.
// Implementations must be safe to call from many threads at once.
class PodGroupResolver {
 public:
  virtual ~PodGroupResolver() = default;
  virtual const PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const = 0;
};

// True for kind PodGroup of group scheduling.k8s.io (the AdmissionReview's request.kind).
bool is_pod_group_kind(std::string_view group, std::string_view kind);

// True for scheduling.k8s.io/v1alpha2, /v1alpha3 and /v1beta1 (the versions that serve PodGroups).
bool pod_group_api_version_supported(std::string_view api_version);

// The newest of v1beta1, v1alpha3, v1alpha2 among `served` (versions of scheduling.k8s.io that
// serve podgroups); "" when none. Its v1 serves PriorityClasses only.
std::string_view pick_pod_group_version(const std::vector<std::string_view>& served);

// Decodes a PodGroup into `out` (cleared first). `assumed_api_version`, when not empty, is the
// apiVersion of an object that has none (list items); the object's own `kind` is not read.
// Errors name the field: a wrong type, an apiVersion that serves no PodGroups. An entry that
// names no claim or template is kept (pods of the group count it as unresolved), as the pod
// decoder keeps one.
// Duplicate keys are refused unless `check_duplicates` is false. `out.api_version` may view
// `assumed_api_version`: keep it alive as long as `out`.
std::optional<DecodeError> decode_pod_group(simdjson::dom::element object, PodGroupView& out,
                                            bool check_duplicates = true, std::string_view assumed_api_version = {});

}  // namespace gpu_admission::policy
