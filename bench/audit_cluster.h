// The audit benchmark's cluster, generated from a seed: N pods (default 150,000) with their
// owners, as a 5,000-node GPU cluster holds them. Node agents (DaemonSets) and system services in
// the exempt namespaces; in each tenant's NAME-train namespace PyTorchJobs, CronJobs and Jobs
// (some finished); in NAME-serve Deployments (each with two old ReplicaSets scaled to 0, as
// rollouts leave them), StatefulSets and CPU services; in NAME-dev notebooks (pods of their own),
// small Jobs and services; CPU services in the namespaces of no tenant. About one top-level object
// in seven (and so each of its pods) violates exactly one rule of bench/audit-policy.yaml.
//
// Beside the objects it keeps its own count of what it injected, the ground truth an audit's
// result is compared with (audit.sh): per tenant and rule the violating top-level objects and
// their violating pods, per namespace the violating objects, the objects an audit judges per
// kind, and every violating object with its pods. And a sample of objects (one of each shape and
// violation, with its Namespace) to check against the policy with `gpu-admission check`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/base/json.h"

namespace gpu_admission::bench::audit {

// One stored object: where it is, and its text as a list item holds it (without apiVersion and
// kind, and without resourceVersion: the API server stamps that when it stores the object).
struct StoredObject {
  std::string namespace_name;  // "" for a Namespace
  std::string name;
  std::string text;
};

// A resource the stand-in serves (the tests' fake API server serves most of them already), with
// its objects as they were made.
struct Resource {
  std::string group;    // "" for the core group
  std::string version;
  std::string kind;
  std::string plural;
  bool namespaced = true;
  std::vector<StoredObject> items;
  size_t bytes = 0;     // of all items' text
};

struct GeneratedCluster {
  std::vector<Resource> resources;  // every listable resource served, in a fixed order
  Json expected;                    // the independent count (see above)
  Json samples;                     // [{"name", "expect": rule or "", "objects": [...]}]
};

GeneratedCluster generate_cluster(long pods, uint64_t seed);

}  // namespace gpu_admission::bench::audit
