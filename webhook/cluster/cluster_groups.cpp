// PodGroups in cluster state (see cluster_state.h): discovery of the scheduling.k8s.io version
// that serves podgroups (Kubernetes 1.36+ with GenericWorkload), their informer, and the lookup
// a pod of a group makes, with the same one-GET fallback on a miss as a claim's (a pod may be
// created a moment after its group).
#include <simdjson.h>

#include "policy/dra/pod_group.h"
#include "webhook/cluster/cluster_state_impl.h"

namespace gpu_admission::webhook::cluster {

std::vector<std::string> pod_group_version_candidates(std::string_view api_group_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(api_group_json.data(), api_group_json.size()).get(root) != simdjson::SUCCESS) return {};
  simdjson::dom::array versions;
  if (root.at_key("versions").get_array().get(versions) != simdjson::SUCCESS) return {};
  std::vector<std::string_view> served;
  for (const auto entry : versions) {
    std::string_view version;
    if (entry.at_key("version").get_string().get(version) == simdjson::SUCCESS) served.push_back(version);
  }
  // Newest first: the first that serves podgroups wins.
  std::vector<std::string> out;
  while (true) {
    const std::string_view pick = policy::pick_pod_group_version(served);
    if (pick.empty()) return out;
    out.emplace_back(pick);
    std::erase(served, pick);
  }
}

bool serves_resource(std::string_view resource_list_json, std::string_view resource) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(resource_list_json.data(), resource_list_json.size()).get(root) != simdjson::SUCCESS) return false;
  simdjson::dom::array resources;
  if (root.at_key("resources").get_array().get(resources) != simdjson::SUCCESS) return false;
  for (const auto entry : resources) {
    std::string_view name;
    if (entry.at_key("name").get_string().get(name) == simdjson::SUCCESS && name == resource) return true;
  }
  return false;
}

// Finds the version that serves podgroups, retrying with backoff while the API server does not
// answer; a 404 of the group (GenericWorkload off, or before 1.36) means none.
void ClusterState::Impl::discover_groups() {
  constexpr std::string_view kGroupPath = "/apis/scheduling.k8s.io";
  until_answered(kGroupPath, [&](HttpResult& result) {
    result = client.get(std::string(kGroupPath), options.discovery_timeout, 1u << 20);
    bool answered = result.ok() || result.status == 404;
    std::string found;
    if (result.ok()) {
      for (const std::string& candidate : pod_group_version_candidates(result.body)) {
        const std::string path = std::string(kGroupPath) + "/" + candidate;
        result = client.get(path, options.discovery_timeout, 1u << 20);
        if (!result.ok() && result.status != 404) {
          answered = false;
          break;
        }
        if (result.ok() && serves_resource(result.body, kPodGroups)) {
          found = candidate;
          break;
        }
      }
    }
    if (!answered) return false;
    groups_version = found;
    if (logger != nullptr) {
      if (found.empty())
        logger->info("the API server serves no PodGroups (scheduling.k8s.io v1beta1, v1alpha3 or v1alpha2): pods "
                     "that name a scheduling group are judged with their group unresolved");
      else
        logger->info("cluster state: PodGroups in scheduling.k8s.io/" + found);
    }
    if (!found.empty()) start_group_informer();
    groups_discovered.store(true, std::memory_order_release);
    return true;
  });
}

void ClusterState::Impl::start_group_informer() {
  const std::string gv = "scheduling.k8s.io/" + groups_version;
  groups = make_decoding_store<PodGroupEntry>(gv, make_pod_group_entry);
  std::lock_guard lock(mutex);
  if (stopping) return;
  group_informer = make_informer(kPodGroups, "/apis/" + gv + "/" + std::string(kPodGroups), *groups);
  group_informer->start();
}

const policy::PodGroupView* ClusterState::Impl::find_group(std::string_view namespace_name, std::string_view name,
                                                           Deadline deadline) {
  if (!groups_discovered.load(std::memory_order_acquire) || groups_version.empty() || !groups) {
    const bool none = groups_discovered.load(std::memory_order_acquire);
    if (metrics != nullptr) metrics->count_cluster_lookup(kPodGroups, none ? "absent" : "error");
    return nullptr;
  }
  const Cached<PodGroupEntry> cached{*groups, group_informer.get(), kPodGroups, 'g', "scheduling.k8s.io",
                                     groups_version};
  return find_cached(cached, namespace_name, name, deadline, make_pod_group_entry);
}

const policy::PodGroupView* ClusterState::find_group(std::string_view namespace_name, std::string_view name) const {
  return impl_->find_group(namespace_name, name, impl_->review_deadline());
}

std::string ClusterState::pod_groups_version() const {
  return impl_->groups_discovered.load(std::memory_order_acquire) ? impl_->groups_version : "";
}

}  // namespace gpu_admission::webhook::cluster
