// Who controls what: the controller ownerReference of every object the audit reads, so that a
// pod is reported at the object a person edits (Pod -> ReplicaSet -> Deployment, Pod -> Job ->
// CronJob, Pod -> JobSet -> TrainJob, Pod -> an operator's custom resource). Holds one entry per
// owned workload, never one per pod: pods are resolved as they are read. Chains are followed at
// most kMaxOwnerDepth links (so a cycle, which the API server would never make, ends there).
// Links are looked up within the object's own namespace: an ownerReference is namespace-local,
// and anyone may write any uid into one, so a pod naming another namespace's ReplicaSet must not
// be reported (or hidden) at that namespace's Deployment.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include <simdjson.h>

namespace gpu_admission::webhook::audit {

struct ObjectRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;  // empty for objects read from files without metadata.uid
};

inline constexpr int kMaxOwnerDepth = 16;

// The controller of `object` (the ownerReference with controller: true, else the first one);
// false when it has none (or none that names kind, name and uid).
bool read_controller(simdjson::dom::element object, ObjectRef& out);

class OwnerIndex {
 public:
  // The object `uid` of `namespace_name` is controlled by `owner`.
  void add(std::string_view namespace_name, std::string_view uid, ObjectRef owner);
  // The top of the chain of controllers above `start`, an object of `namespace_name` (`start`
  // itself when none is known).
  const ObjectRef& top(std::string_view namespace_name, const ObjectRef& start) const;
  size_t size() const { return controller_of_.size(); }

 private:
  std::unordered_map<std::string, ObjectRef> controller_of_;  // by namespace + "/" + uid
};

}  // namespace gpu_admission::webhook::audit
