// The decoded pod: only what rules and mutations need, plus what patches need (container
// indices, which maps exist). Strings are views into the decoded document or into the compiled
// policy (for values added by mutations), so a view is cheap to fill and to reuse: clear() keeps
// the capacity of its vectors for the next request.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_admission::policy {

enum class ContainerKind : uint8_t { Init, App, Ephemeral };

// Which object the pod came from; templates are evaluated as the pod they will create.
enum class WorkloadKind : uint8_t {
  Pod,
  Deployment,
  StatefulSet,
  DaemonSet,
  ReplicaSet,
  ReplicationController,
  Job,
  CronJob,
};

std::string_view workload_kind_name(WorkloadKind kind);
// JSON Pointer of the pod (template) inside the object: "" for a Pod, "/spec/template", ...
std::string_view workload_pod_pointer(WorkloadKind kind);
// The same as a field path prefix, with a trailing '.', e.g. "spec.template."
std::string_view workload_field_prefix(WorkloadKind kind);

struct ResourceQuantity {
  enum class Form : uint8_t { String, Integer, Float };
  std::string_view name;
  Form form = Form::String;
  std::string_view text;   // Form::String: the quantity as written
  int64_t integer = 0;     // Form::Integer
  double number = 0;       // Form::Float
};

// The entry named `name` in a container's requests or limits, or nullptr.
const ResourceQuantity* find_resource(const std::vector<ResourceQuantity>& list, std::string_view name);

using StringViewPairs = std::vector<std::pair<std::string_view, std::string_view>>;

// One entry of a container's env list.
struct EnvVar {
  uint32_t index = 0;       // position in the env list
  std::string_view name;
  std::string_view value;   // the literal value ("" when absent)
  bool value_from = false;  // set through valueFrom (a ConfigMap, Secret or field reference)
};

// One entry of a container's envFrom list: every key of the source becomes `prefix` + key.
struct EnvFromSource {
  uint32_t index = 0;       // position in envFrom
  std::string_view prefix;
};

// One entry of a container's volumeMounts: where a volume of the pod appears in the container.
struct VolumeMount {
  uint32_t index = 0;  // position in volumeMounts
  std::string_view name;
  std::string_view mount_path;
};

// One entry of a container's resources.claims: the pod's claim by name, optionally one request.
struct ContainerClaimRef {
  std::string_view name;     // a spec.resourceClaims[].name of the pod
  std::string_view request;  // "" for every request of the claim
};

// One entry of spec.resourceClaims: a claim shared by name, or a template the pod's own claim is
// made from (exactly one of the two is set in a valid pod).
struct PodResourceClaim {
  uint32_t index = 0;                // position in spec.resourceClaims
  std::string_view name;
  std::string_view claim_name;       // resourceClaimName
  std::string_view template_name;    // resourceClaimTemplateName
};

struct ContainerView {
  ContainerKind kind = ContainerKind::App;
  uint32_t index = 0;        // position within its list (initContainers, containers, ...)
  std::string_view name;
  bool restartable = false;  // init container with restartPolicy: Always (a sidecar)
  bool privileged = false;
  bool has_env = false;      // the env list exists (patches append to it)
  uint32_t env_size = 0;     // entries in the env list
  // The entries of the env list whose text could name a variable a rule reads (kDeviceEnvVars,
  // kMpsEnvPrefix in policy/base/tenant_labels.h, and PodView::policy_env_vars; the scan:
  // policy/decoding/env_names.h), in list order; no other entry can matter to a rule.
  std::vector<EnvVar> env;
  std::vector<EnvFromSource> env_from;
  std::vector<VolumeMount> volume_mounts;
  bool has_resources = false;
  bool has_requests = false;
  bool has_limits = false;
  std::vector<ResourceQuantity> requests;
  std::vector<ResourceQuantity> limits;
  std::vector<ContainerClaimRef> claims;  // resources.claims
};

struct Toleration {
  std::string_view key;
  std::string_view op;  // "", "Equal" or "Exists"
  std::string_view value;
  std::string_view effect;
};

struct NodeSelectorRequirement {
  std::string_view key;
  std::string_view op;
  std::vector<std::string_view> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
};

struct HostPathVolume {
  uint32_t index = 0;  // position in spec.volumes
  std::string_view name;
  std::string_view path;
};

struct PodView {
  WorkloadKind workload = WorkloadKind::Pod;
  // A template of a kind from a table (ML workloads, spec.workloads): its field path prefix
  // ("spec.pytorchReplicaSpecs.Worker.template.") and JSON Pointer
  // ("/spec/pytorchReplicaSpecs/Worker/template"), owned by the caller. Unset for Pods and the
  // built-in workload kinds, whose prefix comes from `workload`.
  bool custom_template = false;
  std::string_view template_prefix;
  std::string_view template_pointer;
  // The custom template is a pod's spec itself (a Trainer v2.0 podSpecOverrides entry): its
  // fields have no `spec.` step, and it has no metadata of its own (pod_field, PodPatcher).
  bool template_is_spec = false;
  std::string_view api_version;
  std::string_view name;
  std::string_view generate_name;
  std::string_view namespace_name;  // metadata.namespace of the object (may be empty)

  bool has_metadata = false;        // the pod's (template's) metadata object exists
  bool has_labels = false;
  bool has_annotations = false;
  bool has_spec = false;
  bool has_node_selector = false;
  StringViewPairs labels;
  // The policy's own env names (spec.gpuEnvVars) this view was decoded for: its containers' env
  // holds every entry that could name one of them, besides the built-in names (ContainerView::env).
  // A view into the compiled policy, set by the decode call; gpu-device-access refuses to judge a
  // pod decoded without its policy's names.
  std::span<const std::string> policy_env_vars;
  // Every annotation's key. The values of the annotations gpu-admission reads (decoded_annotation
  // in tenant_labels.h) are decoded; the others hold their JSON text undecoded (escapes as sent),
  // since no rule reads them (a kubectl last-applied-configuration is kilobytes of escapes).
  StringViewPairs annotations;
  StringViewPairs node_selector;
  std::vector<NodeSelectorTerm> required_node_affinity;  // requiredDuringScheduling...nodeSelectorTerms
  std::vector<Toleration> tolerations;
  bool host_pid = false;
  bool host_ipc = false;
  bool host_network = false;
  std::vector<HostPathVolume> host_paths;
  std::vector<PodResourceClaim> resource_claims;  // spec.resourceClaims (DRA)
  // spec.schedulingGroup.podGroupName (Kubernetes 1.36+, GenericWorkload): the PodGroup whose
  // spec.resourceClaims the pod shares ("" when it names none).
  std::string_view pod_group;
  std::string_view runtime_class_name;  // spec.runtimeClassName ("" when absent)
  std::vector<ContainerView> containers;  // init, then app, then ephemeral, each in list order

  // Empties the view but keeps the capacity of every vector, containers' included.
  void clear();
  // Appends a container, reusing the storage of one removed by clear().
  ContainerView& add_container();

  std::string_view label(std::string_view key, bool* found = nullptr) const;
  std::string_view annotation(std::string_view key, bool* found = nullptr) const;  // a decoded_annotation key
  std::string_view node_selector_value(std::string_view key, bool* found = nullptr) const;

 private:
  std::vector<ContainerView> recycled_containers_;
};

// The field path prefix and JSON Pointer of the pod inside its object (custom template or kind's).
inline std::string_view pod_field_prefix(const PodView& pod) {
  return pod.custom_template ? pod.template_prefix : workload_field_prefix(pod.workload);
}
inline std::string_view pod_json_pointer(const PodView& pod) {
  return pod.custom_template ? pod.template_pointer : workload_pod_pointer(pod.workload);
}

// Field path in the object of `pod_relative` ("spec.nodeSelector", "metadata.labels"): the pod's
// prefix, then `pod_relative` without its `spec.` when the template is a pod spec.
std::string pod_field(const PodView& pod, std::string_view pod_relative);

// Field path of a container: "spec.initContainers[0]" (with the workload prefix).
std::string container_field(const PodView& pod, const ContainerView& c);
std::string_view container_list_name(ContainerKind kind);

}  // namespace gpu_admission::policy
