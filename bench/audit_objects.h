// The objects of the audit benchmark's cluster as the API server stores them: pod templates of
// workloads (with the API server's defaults), pods made from them (what /mutate added: tenant
// labels, the pool's nodeSelector, MIG slices, NVIDIA_VISIBLE_DEVICES=void; what the API server
// and the scheduler added: the service-account token volume, default tolerations, nodeName; and
// the kubelet's status), their owners (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
// CronJobs, PyTorchJobs) and Namespaces, each with full metadata and managedFields.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/audit_model.h"
#include "policy/base/json.h"

namespace gpu_admission::bench::audit {

// What a pod template is for: decides its image, command, env, volumes and probes.
enum class AppShape { ModelServer, Trainer, Notebook, Batch, CpuService, NodeAgent };

struct TemplatePlan {
  std::string app;                 // the app label and the base of the owner's name
  AppShape shape = AppShape::CpuService;
  const Namespace* ns = nullptr;
  const Tenant* tenant = nullptr;  // null: a namespace of no tenant
  int pool = -1;                   // index into pools() of a GPU pod's pool; -1: no GPUs
  int gpus = 0;                    // GPUs of the main container (slices in a MIG pool)
  bool pin_in_template = false;    // the template names its pool (else pool-selector pins its pods)
  Violation violation = Violation::None;
  std::string restart_policy = "Always";
};

// Decides the pool, the pinning and the GPU count a violation needs (gpu-cap: more than the
// tenant's cap; tenant-pool: the tenant's foreign pool, pinned).
void apply_violation(TemplatePlan& plan, Violation v);

// {"metadata":{"labels"...},"spec":{...}} as a workload's spec.template holds it.
Json pod_template(const TemplatePlan& plan, const std::vector<std::pair<std::string, std::string>>& extra_labels = {});

struct OwnerRef {
  std::string api_version, kind, name, uid;
};

// One pod of an owner.
struct PodInstance {
  std::string name;
  std::string generate_name;       // "" for pods named by their controller (StatefulSet, PyTorchJob)
  std::string uid;
  uint64_t seed = 0;               // of the container IDs and image digests in its status
  std::string node;
  std::string node_ip, pod_ip;
  int64_t created = 0;
  bool succeeded = false;          // phase Succeeded (a finished Job's pod)
  std::string hostname, subdomain;  // StatefulSet pods
  bool pin_to_node = false;        // DaemonSet pods: node affinity on metadata.name
  std::vector<std::pair<std::string, std::string>> labels;  // the pod's own (statefulset.kubernetes.io/pod-name, ...)
  std::vector<std::pair<std::string, std::string>> env;     // added to the main container (RANK, ...)
};

// Makes the pods of one template: what is the same for all of them is built once (the pod's
// tree, whose per-pod fields are overwritten in place, and the managedFields' field sets).
class PodMaker {
 public:
  // `manager`: the managedFields manager of the pod's spec (kube-controller-manager,
  // training-operator, kubectl-client-side-apply). `owner` empty (kind "") for a standalone pod.
  // The pods of one maker all carry the same label keys and the same number of `env` entries.
  PodMaker(const TemplatePlan& plan, const Json& pod_template, OwnerRef owner, std::string manager,
           std::vector<std::pair<std::string, std::string>> pod_labels = {});
  // The pod as a list item holds it (no apiVersion and kind), as JSON text.
  std::string make(const PodInstance& pod);
  // The same with apiVersion and kind, as a tree (for the samples `gpu-admission check` reads).
  Json make_object(const PodInstance& pod);

 private:
  Json pod_;                 // the pod being made: the template's, with the last pod's own fields
  size_t base_env_ = 0;      // entries of the main container's env before a pod's own
  std::string manager_;
  std::string spec_fields_;  // fieldsV1 of the manager's entry (after the first pod)
  std::string status_fields_[2];  // fieldsV1 of the kubelet's entry: running, succeeded
};

// Metadata of a top-level or owned object. `owner` with an empty kind: none.
Json object_meta(const std::string& name, const std::string& ns, const std::string& uid, int64_t created,
                 Json labels, Json annotations = Json::object(), const OwnerRef& owner = {});

// The managedFields entry of `manager` for the fields of `fields` (an object's metadata/spec
// or status, as stored), as JSON text: the set of field paths server-side apply tracks.
std::string managed_entry(const std::string& manager, const std::string& api_version, int64_t time, const Json& fields,
                   const std::string& subresource = "");

// A Namespace of `ns`'s table entry (tenant label selectors read example.com/team).
Json namespace_object(const Namespace& ns, const std::string& uid, int64_t created);

}  // namespace gpu_admission::bench::audit
