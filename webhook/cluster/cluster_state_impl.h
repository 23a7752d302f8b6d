// The inside of ClusterState (cluster_state.h), shared by its two files: cluster_state.cpp
// (namespaces, claims and templates, the publisher, the per-review lookups) and
// cluster_groups.cpp (PodGroups of scheduling.k8s.io). Not for use outside webhook/cluster/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "webhook/cluster/cluster_objects.h"
#include "webhook/cluster/cluster_state.h"
#include "webhook/cluster/object_index.h"

namespace gpu_admission::webhook::cluster {


inline constexpr std::string_view kNamespaces = "namespaces";
inline constexpr std::string_view kClaims = "resourceclaims";
inline constexpr std::string_view kTemplates = "resourceclaimtemplates";
inline constexpr std::string_view kPods = "pods";
inline constexpr std::string_view kPodGroups = "podgroups";
inline constexpr size_t kMaxObjectBytes = 4u << 20;  // one object: the API server takes requests of 3 MiB at most
inline constexpr size_t kMaxRememberedAbsent = 4096;

inline std::string key_of(std::string_view namespace_name, std::string_view name) {
  std::string key;
  key.reserve(namespace_name.size() + 1 + name.size());
  key.append(namespace_name).push_back('/');
  key.append(name);
  return key;
}

// key_of for a lookup on the request path: in place for names of valid length (a namespace of
// at most 63 characters, a name of at most 253), so that a cache hit allocates nothing.
class LookupKey {
 public:
  LookupKey(std::string_view namespace_name, std::string_view name) {
    const size_t size = namespace_name.size() + 1 + name.size();
    if (size > sizeof(buffer_)) {
      long_key_ = key_of(namespace_name, name);
      view_ = long_key_;
      return;
    }
    namespace_name.copy(buffer_, namespace_name.size());
    buffer_[namespace_name.size()] = '/';
    name.copy(buffer_ + namespace_name.size() + 1, name.size());
    view_ = std::string_view(buffer_, size);
  }
  LookupKey(const LookupKey&) = delete;
  LookupKey& operator=(const LookupKey&) = delete;
  std::string_view view() const { return view_; }

 private:
  char buffer_[63 + 1 + 253];
  std::string long_key_;
  std::string_view view_;
};

// An index fed by an informer. `Make` turns an object into its entry, and says in `problem`
// what it could not decode (the entry then answers for it: a claim's answers "not found").
template <typename Entry>
class IndexStore final : public InformerStore {
 public:
  using Make = std::function<std::shared_ptr<const Entry>(simdjson::dom::element, std::string& problem)>;
  IndexStore(bool namespaced, Make make, std::chrono::milliseconds grace)
      : index(grace), namespaced_(namespaced), make_(std::move(make)) {}

  void begin_list() override { staged_.clear(); }
  std::string add_listed(simdjson::dom::element object, const ObjectMeta& meta) override {
    std::string problem;
    staged_.emplace_back(key(meta), make_(object, problem));
    return problem;
  }
  void end_list() override {
    index.replace_all(std::move(staged_));
    staged_ = {};
    index.publish();  // synced (and so ready) must mean visible
  }
  // A MODIFIED object that cannot be decoded replaces the entry it had: what it was before is
  // never used again.
  std::string apply(EventType type, simdjson::dom::element object, const ObjectMeta& meta) override {
    std::string problem;
    if (type == EventType::Deleted) index.erase(key(meta));
    else index.upsert(key(meta), make_(object, problem));
    return problem;
  }

  ShardedIndex<Entry> index;

 private:
  std::string key(const ObjectMeta& meta) const {
    return namespaced_ ? key_of(meta.namespace_name, meta.name) : std::string(meta.name);
  }
  bool namespaced_;
  Make make_;
  std::vector<std::pair<std::string, std::shared_ptr<const Entry>>> staged_;
};

using ClaimStore = IndexStore<ClaimEntry>;
using PodGroupStore = IndexStore<PodGroupEntry>;

struct ClusterState::Impl {
  Impl(KubeConfig config, ClusterOptions options_in, Metrics* metrics_in, Logger* logger_in)
      : client(std::move(config)), options(options_in), metrics(metrics_in), logger(logger_in) {
    client.set_logger(logger_in);
  }

  KubeClient client;
  const ClusterOptions options;
  Metrics* metrics;
  Logger* logger;

  IndexStore<NamespaceEntry> namespaces{
      false, [](simdjson::dom::element o, std::string& problem) { return make_namespace_entry(o, &problem); },
      options.retire_grace};
  std::unique_ptr<ClaimStore> claims;
  std::unique_ptr<ClaimStore> templates;
  std::unique_ptr<Informer> namespace_informer;
  std::unique_ptr<Informer> claim_informer;
  std::unique_ptr<Informer> template_informer;

  // Discovery: set once by the bootstrap thread, then read-only.
  std::atomic<bool> discovered{false};
  std::string version;  // "" when resource.k8s.io is not served

  // PodGroups (cluster_groups.cpp), discovered after the claims by the same thread.
  std::unique_ptr<PodGroupStore> groups;
  std::unique_ptr<Informer> group_informer;
  std::atomic<bool> groups_discovered{false};
  std::string groups_version;  // "" when no version of scheduling.k8s.io serves podgroups
  std::atomic<int> fetches_in_flight{0};

  // Objects a GET just found absent, so that the evaluator's repeated lookups for one pod cost
  // one GET (miss path only; bounded; forgotten after negative_ttl).
  std::mutex absent_mutex;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> recently_absent;
  bool known_absent(const std::string& key);
  void remember_absent(std::string key);

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread bootstrap;
  std::thread publisher;

  std::string group_version() const { return "resource.k8s.io/" + version; }
  std::string collection(std::string_view resource) const {
    return "/apis/resource.k8s.io/" + version + "/" + std::string(resource);
  }
  bool wait(std::chrono::milliseconds duration) {
    std::unique_lock lock(mutex);
    wake.wait_for(lock, duration, [&] { return stopping; });
    return !stopping;
  }
  // Calls `attempt` until it returns true (the API server answered), logging each failure with
  // `path` and the reply it left in its argument, and backing off in between; returns early when
  // stopping.
  void until_answered(std::string_view path, const std::function<bool(HttpResult&)>& attempt);
  void discover();
  void discover_groups();
  void start_group_informer();
  void start_claim_informers();
  void publish_loop();
  void publish_all();
  // Lookups; a miss costs one GET bounded by what is left until `deadline` (none once it passed).
  using Deadline = std::chrono::steady_clock::time_point;
  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name, std::string_view name,
                                Deadline deadline);
  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name, Deadline deadline);
  policy::NamespaceLookup labels_of(std::string_view namespace_name, Deadline deadline);
  policy::PodSource::Outcome pod_json(std::string_view namespace_name, std::string_view name, std::string& out,
                                      Deadline deadline);
  // One GET of a single object within the deadline and the cap on concurrent GETs; `resource`
  // names it in the lookup metrics (counted there when it cannot be sent).
  std::optional<HttpResult> get_object(std::string_view resource, const std::string& path, Deadline deadline);
  Deadline review_deadline() const { return std::chrono::steady_clock::now() + options.lookup_timeout; }

  // The informer of `resource`, listing and watching `path` into `store` (not started).
  std::unique_ptr<Informer> make_informer(std::string_view resource, std::string path, InformerStore& store) {
    return std::make_unique<Informer>(std::string(resource), std::move(path), client, store, options.informer, metrics,
                                      logger);
  }

  // The store of a namespaced kind that cluster state decodes (claims, claim templates, PodGroups):
  // `make(object, group_version)` decodes one; what it cannot decode is the informer's problem.
  template <typename Entry, typename Make>
  std::unique_ptr<IndexStore<Entry>> make_decoding_store(std::string group_version, Make make) const {
    return std::make_unique<IndexStore<Entry>>(
        true,
        [gv = std::move(group_version), make](simdjson::dom::element o, std::string& problem) {
          auto entry = make(o, gv);
          if (!entry->ok()) problem = entry->error;
          return entry;
        },
        options.retire_grace);
  }

  // Where objects of one such kind are looked up: its store and informer, its resource (in the
  // metrics and the GET's path), the tag of its keys among those recently absent, and the group
  // and version it is served in.
  template <typename Entry>
  struct Cached {
    IndexStore<Entry>& store;
    Informer* informer;
    std::string_view resource;
    char absent_tag;
    std::string_view group;
    const std::string& version;
  };

  // The cached object of `namespace_name`/`name` (nullptr for one that could not be decoded); on
  // a miss, fetch_into.
  template <typename Entry, typename Make>
  const decltype(Entry::view)* find_cached(const Cached<Entry>& kind, std::string_view namespace_name,
                                           std::string_view name, Deadline deadline, Make make) {
    if (const Entry* entry = kind.store.index.find(LookupKey(namespace_name, name).view())) {
      if (metrics != nullptr) metrics->count_cluster_lookup(kind.resource, "hit");
      return entry->ok() ? &entry->view : nullptr;
    }
    return fetch_into(kind, namespace_name, name, deadline, make);
  }

  // A miss: one GET within the review's deadline. What it finds is kept and visible to the next
  // lookup at once (a pod's siblings come together); an object that cannot be decoded is kept as
  // such (it answers "not found" without another GET until the watch replaces it); a 404 is
  // remembered for negative_ttl.
  template <typename Entry, typename Make>
  const decltype(Entry::view)* fetch_into(const Cached<Entry>& kind, std::string_view namespace_name,
                                          std::string_view name, Deadline deadline, Make make) {
    const std::string absent_key = kind.absent_tag + key_of(namespace_name, name);
    if (known_absent(absent_key)) {
      if (metrics != nullptr) metrics->count_cluster_lookup(kind.resource, "absent");
      return nullptr;
    }
    const std::string gv = std::string(kind.group) + "/" + kind.version;
    const std::string path = "/apis/" + gv + "/namespaces/" + url_encode(namespace_name) + "/" +
                             std::string(kind.resource) + "/" + url_encode(name);
    const std::optional<HttpResult> got = get_object(kind.resource, path, deadline);
    if (!got) return nullptr;
    const char* outcome = "error";
    const decltype(Entry::view)* found = nullptr;
    simdjson::dom::parser parser;
    simdjson::dom::element object;
    if (got->ok() && allow_stored_depth(parser) == simdjson::SUCCESS &&
        parser.parse(got->body).get(object) == simdjson::SUCCESS) {
      auto entry = make(object, gv);
      if (!entry->ok()) {
        if (kind.informer != nullptr) kind.informer->decode_errors().report(namespace_name, name, entry->error);
        else if (metrics != nullptr) metrics->count_cluster_decode_error(kind.resource);
      }
      const Entry* stored = kind.store.index.insert_if_absent(key_of(namespace_name, name), std::move(entry));
      kind.store.index.publish();
      outcome = "fetched";
      found = stored->ok() ? &stored->view : nullptr;
    } else if (got->status == 404) {
      outcome = "absent";
      remember_absent(absent_key);
    } else if (logger != nullptr) {
      logger->warn("cluster lookup failed", {{"resource", kind.resource},
                                             {"endpoint", client.url(path)},
                                             {"namespace", namespace_name},
                                             {"name", name},
                                             {"error", got->ok() ? "not a JSON object" : got->describe()}});
    }
    if (metrics != nullptr) metrics->count_cluster_lookup(kind.resource, outcome);
    return found;
  }
};

}  // namespace gpu_admission::webhook::cluster
