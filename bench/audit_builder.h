// Builds the audit benchmark's cluster one workload at a time (audit_cluster.cpp decides which):
// each call stores a top-level object, the objects it owns and its pods, stamped with uids, nodes
// and IPs (resourceVersions are the API server's to give), and keeps the independent count of
// what an audit must find (the violation each top-level object was given, and the pods it has
// that are judged).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "bench/audit_cluster.h"
#include "bench/audit_objects.h"

namespace gpu_admission::bench::audit {

class ClusterBuilder {
 public:
  ClusterBuilder(long pods, uint64_t seed);

  long budget() const { return budget_; }  // pods still to make
  Rng& rng() { return rng_; }

  // Top-level workloads. Each makes at most budget() pods (fewer than asked when it runs out).
  void deployment(const TemplatePlan& plan, int replicas);
  void stateful_set(const TemplatePlan& plan, int replicas);
  void daemon_set(const TemplatePlan& plan, bool gpu_nodes_only);
  // One master and `workers` workers; a finished job's pods have succeeded.
  void pytorch_job(const TemplatePlan& plan, int workers, bool finished);
  // `history` finished Jobs of one pod each, and a running Job of `parallelism` pods when `running`.
  void cron_job(const TemplatePlan& plan, int history, bool running, int parallelism);
  void job(const TemplatePlan& plan, int parallelism, bool finished);
  void notebook(const TemplatePlan& plan);

  // A name not used yet in `ns` for `base` ("llama-3-70b-chat-3").
  std::string unique_name(const std::string& ns, const std::string& base);
  size_t all_nodes() const { return node_count_; }

  GeneratedCluster finish();

 private:
  struct Node {
    std::string name, ip;
  };
  struct Judged {
    int pods = 0;           // pods of the top-level object that an audit judges
    bool template_judged;   // its own pod template is judged too
  };

  // Stores `object` in resource `plural`, with the
  // managedFields of `managed_fields` (JSON text of the list) when given. Returns its text.
  std::string store(const std::string& plural, Json& object, const std::string& managed_fields = "");
  void add_resource(const char* group, const char* version, const char* kind, const char* plural, bool namespaced);
  const Node& node_for(const TemplatePlan& plan);
  std::string pod_ip();
  // Counts `n` objects of `kind` as an audit counts them: judged, or not judged when `plan`'s
  // namespace is one bench/audit-policy.yaml exempts (the System ones).
  void count_judged(const TemplatePlan& plan, const std::string& kind, long n);
  // Pods of one owner: `count` (clamped to the budget) made by `maker`; returns how many.
  // `first`, when not null, receives the first pod as an object (a sample).
  int make_pods(const TemplatePlan& plan, PodMaker& maker, int count, const std::string& generate_name,
                bool succeeded, int64_t owner_created, Json* first,
                const std::function<void(PodInstance&, int index)>& shape = {});
  // The independent count: a top-level object of `plan`, judged with `judged.pods` of its pods.
  void expect(const TemplatePlan& plan, const std::string& api_version, const std::string& kind,
              const std::string& name, Judged judged);
  // Whether this shape, kind and violation has no sample yet (then the caller makes one).
  bool wants_sample(const TemplatePlan& plan, const std::string& kind);
  static std::string sample_key(const TemplatePlan& plan, const std::string& kind);
  void sample(const TemplatePlan& plan, const std::string& kind, Json top, Json pod);
  int64_t created_before_now();

  Rng rng_;
  long budget_;
  size_t pod_ips_ = 0;
  size_t node_count_ = 0;
  std::vector<std::vector<Node>> pool_nodes_;  // by pool index
  std::vector<Node> cpu_nodes_;
  std::vector<Resource> resources_;
  std::map<std::string, size_t> resource_index_;
  std::map<std::string, int> names_;  // ns/base -> uses

  // The independent count.
  std::map<std::string, long> judged_, skipped_;
  // namespace/name of every pod named from a generateName: a suffix drawn twice is drawn again,
  // as the API server retries a generated name that exists (5,000 pods of one DaemonSet draw
  // from 27^5 suffixes: about one collision each).
  std::unordered_set<std::string> generated_names_;
  std::map<std::tuple<std::string, std::string>, std::pair<long, long>> totals_;  // tenant, rule -> objects, pods
  std::map<std::string, long> namespace_violations_;
  Json objects_ = Json::array();
  long violating_pods_ = 0, judged_pods_ = 0, pods_made_ = 0;
  Json samples_ = Json::array();
  std::map<std::string, bool> sampled_;
};

}  // namespace gpu_admission::bench::audit
