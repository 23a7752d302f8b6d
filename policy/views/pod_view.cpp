#include "policy/views/pod_view.h"

#include <string>

namespace gpu_admission::policy {

std::string_view workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::Pod: return "Pod";
    case WorkloadKind::Deployment: return "Deployment";
    case WorkloadKind::StatefulSet: return "StatefulSet";
    case WorkloadKind::DaemonSet: return "DaemonSet";
    case WorkloadKind::ReplicaSet: return "ReplicaSet";
    case WorkloadKind::ReplicationController: return "ReplicationController";
    case WorkloadKind::Job: return "Job";
    case WorkloadKind::CronJob: return "CronJob";
  }
  return "Pod";
}

std::string_view workload_pod_pointer(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::Pod: return "";
    case WorkloadKind::CronJob: return "/spec/jobTemplate/spec/template";
    default: return "/spec/template";
  }
}

std::string_view workload_field_prefix(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::Pod: return "";
    case WorkloadKind::CronJob: return "spec.jobTemplate.spec.template.";
    default: return "spec.template.";
  }
}

void PodView::clear() {
  workload = WorkloadKind::Pod;
  custom_template = false;
  template_prefix = template_pointer = {};
  template_is_spec = false;
  api_version = name = generate_name = namespace_name = {};
  policy_env_vars = {};
  has_metadata = has_labels = has_annotations = has_spec = has_node_selector = false;
  labels.clear();
  annotations.clear();
  node_selector.clear();
  required_node_affinity.clear();
  tolerations.clear();
  host_pid = host_ipc = host_network = false;
  host_paths.clear();
  resource_claims.clear();
  pod_group = {};
  runtime_class_name = {};
  for (auto& c : containers) {
    c.claims.clear();
    c.has_env = false;
    c.env_size = 0;
    c.env.clear();
    c.env_from.clear();
    c.volume_mounts.clear();
    c.requests.clear();
    c.limits.clear();
    recycled_containers_.push_back(std::move(c));
  }
  containers.clear();
}

ContainerView& PodView::add_container() {
  if (recycled_containers_.empty()) return containers.emplace_back();
  ContainerView& c = containers.emplace_back(std::move(recycled_containers_.back()));
  recycled_containers_.pop_back();
  c.kind = ContainerKind::App;
  c.index = 0;
  c.name = {};
  c.restartable = c.privileged = c.has_resources = c.has_requests = c.has_limits = false;
  return c;
}

namespace {
std::string_view lookup(const StringViewPairs& pairs, std::string_view key, bool* found) {
  for (const auto& [k, v] : pairs) {
    if (k == key) {
      if (found) *found = true;
      return v;
    }
  }
  if (found) *found = false;
  return {};
}
}  // namespace

std::string_view PodView::label(std::string_view key, bool* found) const { return lookup(labels, key, found); }
std::string_view PodView::annotation(std::string_view key, bool* found) const { return lookup(annotations, key, found); }
std::string_view PodView::node_selector_value(std::string_view key, bool* found) const {
  return lookup(node_selector, key, found);
}

const ResourceQuantity* find_resource(const std::vector<ResourceQuantity>& list, std::string_view name) {
  for (const auto& q : list)
    if (q.name == name) return &q;
  return nullptr;
}

std::string_view container_list_name(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::Init: return "initContainers";
    case ContainerKind::App: return "containers";
    case ContainerKind::Ephemeral: return "ephemeralContainers";
  }
  return "containers";
}

std::string pod_field(const PodView& pod, std::string_view pod_relative) {
  std::string out(pod_field_prefix(pod));
  if (pod.template_is_spec && pod_relative.starts_with("spec.")) pod_relative.remove_prefix(5);
  out += pod_relative;
  return out;
}

std::string container_field(const PodView& pod, const ContainerView& c) {
  std::string out = pod_field(pod, "spec.");
  out += container_list_name(c.kind);
  out += '[';
  out += std::to_string(c.index);
  out += ']';
  return out;
}

}  // namespace gpu_admission::policy
