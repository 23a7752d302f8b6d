// webhook/cluster/ -- cluster state for `serve --cluster`, the gpu_webhook_cluster library. This
// header is its public face: ClusterState (the informers of namespaces, claims, claim templates and
// PodGroups, the claim and PodGroup resolvers and the namespace-label lookup the policy engine
// reads), the --cluster modes and the choice of configuration. The rest of the folder serves it:
// kube_config (finding the configuration as kubectl does; kubeconfig_merge, kubeconfig_context),
// exec_credentials and plugin_process (exec credential plugins), kube_client (a small Kubernetes
// API client on cpp-httplib and OpenSSL), watch_decoder (list pages, watch events, bounded line
// splitting), informer (list + watch of one resource), object_index (the lock-free sharded index),
// cluster_objects (the compact cached entries) and cluster_groups.cpp (PodGroups, where
// scheduling.k8s.io serves them). Code here may include policy/, ops/ and io/ headers, never
// admission/, server/ or cli/ (those learn cluster state through policy::ClaimResolver and
// policy::NamespaceLabels, and readiness through a function).
//
// Hot path: find() and labels_of() read published immutable shard maps, without locks; only a cache
// miss of a claim or template costs one GET of that object bounded by the lookup timeout (1 s),
// cached on success; a PodGroup's likewise. Lookups are counted by result (hit, fetched, absent,
// error).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/evaluation/evaluator.h"
#include "policy/config/label_selector.h"
#include "webhook/cluster/informer.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

namespace gpu_admission::webhook::cluster {

enum class ClusterMode { Auto, Off, Required };
std::optional<ClusterMode> parse_cluster_mode(std::string_view text);  // auto|off|required

struct ClusterConfigChoice {
  std::optional<KubeConfig> config;  // none: cluster state stays off
  std::string error;                 // fatal at start-up (exit 2)
  std::string reason;                // why it is off, for the log ("--cluster off", "no configuration")
};

// The configuration load_cluster_config() finds (--kubeconfig, $KUBECONFIG, ~/.kube/config,
// the in-cluster service account): an unusable one is an error in every mode but off;
// `required` without any is an error.
ClusterConfigChoice choose_cluster_config(ClusterMode mode, const KubeConfigOptions& options);

struct ClusterOptions {
  InformerOptions informer;
  std::chrono::milliseconds lookup_timeout{1'000};      // the GET of a cache miss
  std::chrono::milliseconds discovery_timeout{10'000};
  std::chrono::milliseconds publish_interval{100};      // how often changes become visible (coalescing)
  std::chrono::milliseconds retire_grace{10'000};       // how long replaced entries stay valid
  size_t max_concurrent_fetches = 16;                   // more misses at once: answered "error"
  std::chrono::milliseconds negative_ttl{2'000};        // a GET's "absent" is reused this long
};

class ClusterState final : public policy::ClaimResolver,
                           public policy::PodGroupResolver,
                           public policy::NamespaceLabels,
                           public policy::PodSource,
                           public policy::FactsProvider {
 public:
  ClusterState(KubeConfig config, ClusterOptions options, Metrics* metrics, Logger* logger);
  ~ClusterState() override;  // stop()
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Checks credentials (CA, client certificate, token file) and starts discovery and the
  // informers in the background. False with `error` set when the configuration is unusable.
  bool start(std::string& error);
  void stop();

  // "" once every resource has been listed completely; otherwise what is awaited.
  std::string not_ready_reason() const;

  // policy::ClaimResolver: the cached claim or template; on a miss, one bounded GET.
  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override;
  // policy::PodGroupResolver: the cached PodGroup; on a miss, one bounded GET. nullptr when the
  // API server serves no PodGroups.
  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const override;
  // policy::NamespaceLabels: the namespace's labels; on a miss, one bounded GET (a namespace
  // created a moment before its pod); nullptr when the namespace is unknown.
  const policy::LabelPairs* labels_of(std::string_view namespace_name) const override;
  policy::NamespaceLookup lookup(std::string_view namespace_name) const override;
  // policy::PodSource: one bounded GET of the pod (pods are not cached).
  Outcome pod_json(std::string_view namespace_name, std::string_view name, std::string& json) const override;
  // policy::FactsProvider: the lookups above for one review, every miss of the review together
  // bounded by the lookup timeout (1 s), however many there are.
  void review(Use& use) const override;

  // The resource.k8s.io version in use ("v1", "v1beta2", "v1beta1"), "" before discovery or
  // when the server does not serve one.
  std::string claims_version() const;
  // The scheduling.k8s.io version PodGroups are watched in ("v1beta1", "v1alpha3", "v1alpha2"),
  // "" before discovery or when none serves podgroups.
  std::string pod_groups_version() const;
  const KubeConfig& config() const;

  struct Counts {
    size_t namespaces = 0, claims = 0, templates = 0, pod_groups = 0;
  };
  Counts counts() const;
  // Makes every change so far visible to lookups now (tests; normally every publish_interval).
  void publish_now();

  struct Impl;  // cluster_state.cpp (public only so that its helpers there can name it)

 private:
  std::unique_ptr<Impl> impl_;
};

// The newest of v1, v1beta2, v1beta1 in an APIGroup discovery document; "" when none.
std::string pick_claims_version(std::string_view api_group_json);

// The versions of scheduling.k8s.io's APIGroup document that may serve PodGroups, newest first
// (v1beta1, v1alpha3, v1alpha2; its v1 serves PriorityClasses only). Discovery takes the first
// whose APIResourceList names `podgroups` (serves_resource).
std::vector<std::string> pod_group_version_candidates(std::string_view api_group_json);
bool serves_resource(std::string_view resource_list_json, std::string_view resource);

}  // namespace gpu_admission::webhook::cluster
