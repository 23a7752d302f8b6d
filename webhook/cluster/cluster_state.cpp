// ClusterState (see cluster_state.h): the stores behind the informers, discovery of the
// resource.k8s.io version, the publisher thread that makes coalesced changes visible, and the
// claim resolver with its bounded GET fallback (cluster_state_impl.h's find_cached, which
// PodGroups share).
#include "webhook/cluster/cluster_state.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "webhook/cluster/cluster_state_impl.h"

namespace gpu_admission::webhook::cluster {


std::optional<ClusterMode> parse_cluster_mode(std::string_view text) {
  if (text == "auto") return ClusterMode::Auto;
  if (text == "off") return ClusterMode::Off;
  if (text == "required") return ClusterMode::Required;
  return std::nullopt;
}

ClusterConfigChoice choose_cluster_config(ClusterMode mode, const KubeConfigOptions& options) {
  ClusterConfigChoice choice;
  if (mode == ClusterMode::Off) {
    choice.reason = "--cluster off";
    return choice;
  }
  KubeConfigLoad load = load_cluster_config(options);
  if (!load.error.empty()) {
    choice.error = load.error;
    return choice;
  }
  if (!load.config) {
    if (mode == ClusterMode::Required)
      choice.error = "--cluster required, but there is no cluster configuration: " + load.searched;
    choice.reason = "no cluster configuration: " + load.searched;
    return choice;
  }
  choice.config = std::move(load.config);
  return choice;
}

std::string pick_claims_version(std::string_view api_group_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(api_group_json.data(), api_group_json.size()).get(root) != simdjson::SUCCESS) return "";
  simdjson::dom::array versions;
  if (root.at_key("versions").get_array().get(versions) != simdjson::SUCCESS) return "";
  bool served[3] = {false, false, false};
  static constexpr std::string_view kPreference[3] = {"v1", "v1beta2", "v1beta1"};
  for (const auto entry : versions) {
    std::string_view version;
    if (entry.at_key("version").get_string().get(version) != simdjson::SUCCESS) continue;
    for (int i = 0; i < 3; ++i) served[i] = served[i] || version == kPreference[i];
  }
  for (int i = 0; i < 3; ++i)
    if (served[i]) return std::string(kPreference[i]);
  return "";
}

void ClusterState::Impl::until_answered(std::string_view path, const std::function<bool(HttpResult&)>& attempt) {
  auto backoff = options.informer.initial_backoff;
  while (true) {
    HttpResult result;
    if (attempt(result)) return;
    if (logger != nullptr)
      logger->warn("cluster discovery failed; retrying",
                   {{"endpoint", client.url(std::string(path))}, {"error", result.describe()}});
    if (!wait(backoff)) return;
    backoff = std::min(backoff * 2, options.informer.max_backoff);
  }
}

void ClusterState::Impl::discover() {
  constexpr std::string_view kGroupPath = "/apis/resource.k8s.io";
  until_answered(kGroupPath, [&](HttpResult& result) {
    result = client.get(std::string(kGroupPath), options.discovery_timeout, 1u << 20);
    if (!result.ok() && result.status != 404) return false;
    version = result.ok() ? pick_claims_version(result.body) : "";
    if (logger != nullptr) {
      if (version.empty())
        logger->warn("the API server serves no resource.k8s.io v1, v1beta2 or v1beta1: no DRA claims to cache; "
                     "pods that refer to claims are judged with their claims unresolved");
      else
        logger->info("cluster state: DRA claims in resource.k8s.io/" + version);
    }
    if (!version.empty()) start_claim_informers();
    discovered.store(true, std::memory_order_release);
    return true;
  });
}

void ClusterState::Impl::start_claim_informers() {
  const auto maker = [](policy::ClaimKind kind) {
    return [kind](simdjson::dom::element o, const std::string& gv) { return make_claim_entry(o, kind, gv); };
  };
  claims = make_decoding_store<ClaimEntry>(group_version(), maker(policy::ClaimKind::Claim));
  templates = make_decoding_store<ClaimEntry>(group_version(), maker(policy::ClaimKind::Template));
  std::lock_guard lock(mutex);
  if (stopping) return;
  claim_informer = make_informer(kClaims, collection(kClaims), *claims);
  template_informer = make_informer(kTemplates, collection(kTemplates), *templates);
  claim_informer->start();
  template_informer->start();
}

bool ClusterState::Impl::known_absent(const std::string& key) {
  std::lock_guard lock(absent_mutex);
  const auto it = recently_absent.find(key);
  if (it == recently_absent.end()) return false;
  if (std::chrono::steady_clock::now() - it->second < options.negative_ttl) return true;
  recently_absent.erase(it);
  return false;
}

void ClusterState::Impl::remember_absent(std::string key) {
  std::lock_guard lock(absent_mutex);
  if (recently_absent.size() >= kMaxRememberedAbsent) recently_absent.clear();
  recently_absent[std::move(key)] = std::chrono::steady_clock::now();
}

void ClusterState::Impl::publish_all() {
  namespaces.index.publish();
  if (metrics != nullptr) metrics->set_cluster_objects(kNamespaces, static_cast<double>(namespaces.index.size()));
  if (groups_discovered.load(std::memory_order_acquire) && groups) {
    groups->index.publish();
    if (metrics != nullptr) metrics->set_cluster_objects(kPodGroups, static_cast<double>(groups->index.size()));
  }
  if (!discovered.load(std::memory_order_acquire) || !claims) return;
  claims->index.publish();
  templates->index.publish();
  if (metrics != nullptr) {
    metrics->set_cluster_objects(kClaims, static_cast<double>(claims->index.size()));
    metrics->set_cluster_objects(kTemplates, static_cast<double>(templates->index.size()));
  }
}

void ClusterState::Impl::publish_loop() {
  while (wait(options.publish_interval)) publish_all();
}

std::optional<HttpResult> ClusterState::Impl::get_object(std::string_view resource, const std::string& path,
                                                        Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) {  // this review has waited its whole allowance already
    if (metrics != nullptr) metrics->count_cluster_lookup(resource, "error");
    return std::nullopt;
  }
  if (fetches_in_flight.fetch_add(1) >= static_cast<int>(options.max_concurrent_fetches)) {
    fetches_in_flight.fetch_sub(1);
    if (metrics != nullptr) metrics->count_cluster_lookup(resource, "error");
    return std::nullopt;
  }
  HttpResult result = client.get(path, left, kMaxObjectBytes);
  fetches_in_flight.fetch_sub(1);
  return result;
}

ClusterState::ClusterState(KubeConfig config, ClusterOptions options, Metrics* metrics, Logger* logger)
    : impl_(std::make_unique<Impl>(std::move(config), options, metrics, logger)) {}

ClusterState::~ClusterState() { stop(); }

bool ClusterState::start(std::string& error) {
  if (!impl_->client.init(error)) return false;
  Impl& s = *impl_;
  if (s.client.config().insecure_skip_tls_verify && s.logger != nullptr)
    s.logger->error("INSECURE: insecure-skip-tls-verify is set for the cluster; the API server's certificate is "
                    "NOT verified and anyone on the network path can feed this webhook false cluster state",
                    {{"source", s.client.config().source}});
  if (s.metrics != nullptr) s.metrics->precreate_cluster_series();
  s.namespace_informer = s.make_informer(kNamespaces, "/api/v1/namespaces", s.namespaces);
  s.namespace_informer->start();
  s.bootstrap = std::thread([&s] {
    s.discover();
    if (s.discovered.load(std::memory_order_acquire)) s.discover_groups();  // not when stopping
  });
  s.publisher = std::thread([&s] { s.publish_loop(); });
  return true;
}

void ClusterState::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  if (s.bootstrap.joinable()) s.bootstrap.join();
  if (s.publisher.joinable()) s.publisher.join();
  if (s.namespace_informer) s.namespace_informer->stop();
  if (s.claim_informer) s.claim_informer->stop();
  if (s.template_informer) s.template_informer->stop();
  if (s.group_informer) s.group_informer->stop();
}

std::string ClusterState::not_ready_reason() const {
  const Impl& s = *impl_;
  if (!s.namespace_informer || !s.namespace_informer->synced()) return "cluster state: namespaces not listed yet";
  if (!s.discovered.load(std::memory_order_acquire)) return "cluster state: resource.k8s.io not discovered yet";
  if (s.claim_informer && !s.claim_informer->synced()) return "cluster state: resourceclaims not listed yet";
  if (s.template_informer && !s.template_informer->synced())
    return "cluster state: resourceclaimtemplates not listed yet";
  if (!s.groups_discovered.load(std::memory_order_acquire))
    return "cluster state: scheduling.k8s.io not discovered yet";
  if (s.group_informer && !s.group_informer->synced()) return "cluster state: podgroups not listed yet";
  return "";
}

const policy::ClaimView* ClusterState::Impl::find(policy::ClaimKind kind, std::string_view namespace_name,
                                                  std::string_view name, Deadline deadline) {
  const std::string_view resource = kind == policy::ClaimKind::Claim ? kClaims : kTemplates;
  if (!discovered.load(std::memory_order_acquire) || version.empty()) {
    if (metrics != nullptr) metrics->count_cluster_lookup(resource, version.empty() ? "absent" : "error");
    return nullptr;
  }
  const bool claim = kind == policy::ClaimKind::Claim;
  const Cached<ClaimEntry> cached{claim ? *claims : *templates,
                                  claim ? claim_informer.get() : template_informer.get(),
                                  resource,
                                  claim ? 'c' : 't',
                                  "resource.k8s.io",
                                  version};
  return find_cached(cached, namespace_name, name, deadline, [kind](simdjson::dom::element o, const std::string& gv) {
    return make_claim_entry(o, kind, gv);
  });
}

// A namespace missing from the cache (created a moment before its pod) is fetched once; only
// misses are counted (a hit costs nothing on the request path). Labels that cannot be read (the
// GET failed or there was no time left for it) are unreadable, which is not the same as none.
policy::NamespaceLookup ClusterState::Impl::labels_of(std::string_view namespace_name, Deadline deadline) {
  if (const NamespaceEntry* entry = namespaces.index.find(namespace_name)) return {&entry->labels, false};
  const std::string absent_key = 'n' + std::string(namespace_name);
  if (known_absent(absent_key)) {
    if (metrics != nullptr) metrics->count_cluster_lookup(kNamespaces, "absent");
    return {};
  }
  const std::string path = "/api/v1/namespaces/" + url_encode(namespace_name);
  const std::optional<HttpResult> got = get_object(kNamespaces, path, deadline);
  if (!got) return {nullptr, true};
  const char* outcome = "error";
  policy::NamespaceLookup found{nullptr, true};
  simdjson::dom::parser parser;
  simdjson::dom::element object;
  if (got->ok() && allow_stored_depth(parser) == simdjson::SUCCESS &&
      parser.parse(got->body).get(object) == simdjson::SUCCESS) {
    const NamespaceEntry* stored =
        namespaces.index.insert_if_absent(std::string(namespace_name), make_namespace_entry(object));
    namespaces.index.publish();
    outcome = "fetched";
    found = {&stored->labels, false};
  } else if (got->status == 404) {
    outcome = "absent";
    found = {};
    remember_absent(absent_key);
  } else if (logger != nullptr) {
    logger->warn("cluster lookup failed", {{"resource", kNamespaces},
                                           {"endpoint", client.url(path)},
                                           {"name", namespace_name},
                                           {"error", got->ok() ? "not a JSON object" : got->describe()}});
  }
  if (metrics != nullptr) metrics->count_cluster_lookup(kNamespaces, outcome);
  return found;
}

// Pods are not cached: only a claim's allocation asks for one, by name, with one GET.
policy::PodSource::Outcome ClusterState::Impl::pod_json(std::string_view namespace_name, std::string_view name,
                                                         std::string& out, Deadline deadline) {
  const std::string path = "/api/v1/namespaces/" + url_encode(namespace_name) + "/pods/" + url_encode(name);
  const std::optional<HttpResult> got = get_object(kPods, path, deadline);
  if (!got) {
    out = "no time left to ask the API server (the review's lookups are bounded by " +
          std::to_string(options.lookup_timeout.count()) + " ms in all)";
    return policy::PodSource::Outcome::Error;
  }
  const char* outcome = got->ok() ? "fetched" : got->status == 404 ? "absent" : "error";
  if (metrics != nullptr) metrics->count_cluster_lookup(kPods, outcome);
  if (got->ok()) {
    out = got->body;
    return policy::PodSource::Outcome::Found;
  }
  if (got->status == 404) return policy::PodSource::Outcome::NotFound;
  out = "the API server did not answer: " + got->describe();
  if (logger != nullptr)
    logger->warn("cluster lookup failed", {{"resource", kPods},
                                           {"endpoint", client.url(path)},
                                           {"namespace", namespace_name},
                                           {"name", name},
                                           {"error", got->describe()}});
  return policy::PodSource::Outcome::Error;
}

namespace {

// The facts of one review: cluster state's lookups with one deadline for all of its misses.
class ReviewLookups final : public policy::ClaimResolver,
                            public policy::PodGroupResolver,
                            public policy::NamespaceLabels,
                            public policy::PodSource {
 public:
  ReviewLookups(ClusterState::Impl& state, ClusterState::Impl::Deadline deadline) : state_(state), deadline_(deadline) {}
  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override {
    return state_.find(kind, namespace_name, name, deadline_);
  }
  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const override {
    return state_.find_group(namespace_name, name, deadline_);
  }
  const policy::LabelPairs* labels_of(std::string_view namespace_name) const override {
    return lookup(namespace_name).labels;
  }
  policy::NamespaceLookup lookup(std::string_view namespace_name) const override {
    return state_.labels_of(namespace_name, deadline_);
  }
  Outcome pod_json(std::string_view namespace_name, std::string_view name, std::string& json) const override {
    return state_.pod_json(namespace_name, name, json, deadline_);
  }
  policy::ExternalFacts facts() const {
    policy::ExternalFacts facts{this, this, this};
    facts.groups = this;
    return facts;
  }

 private:
  ClusterState::Impl& state_;
  ClusterState::Impl::Deadline deadline_;
};

}  // namespace

const policy::ClaimView* ClusterState::find(policy::ClaimKind kind, std::string_view namespace_name,
                                            std::string_view name) const {
  return impl_->find(kind, namespace_name, name, impl_->review_deadline());
}

const policy::LabelPairs* ClusterState::labels_of(std::string_view namespace_name) const {
  return lookup(namespace_name).labels;
}

policy::NamespaceLookup ClusterState::lookup(std::string_view namespace_name) const {
  return impl_->labels_of(namespace_name, impl_->review_deadline());
}

policy::PodSource::Outcome ClusterState::pod_json(std::string_view namespace_name, std::string_view name,
                                                   std::string& json) const {
  return impl_->pod_json(namespace_name, name, json, impl_->review_deadline());
}

void ClusterState::review(Use& use) const {
  const ReviewLookups lookups(*impl_, impl_->review_deadline());
  use(lookups.facts());
}

std::string ClusterState::claims_version() const {
  return impl_->discovered.load(std::memory_order_acquire) ? impl_->version : "";
}

const KubeConfig& ClusterState::config() const { return impl_->client.config(); }

ClusterState::Counts ClusterState::counts() const {
  Counts counts;
  counts.namespaces = impl_->namespaces.index.size();
  if (impl_->discovered.load(std::memory_order_acquire) && impl_->claims) {
    counts.claims = impl_->claims->index.size();
    counts.templates = impl_->templates->index.size();
  }
  if (impl_->groups_discovered.load(std::memory_order_acquire) && impl_->groups)
    counts.pod_groups = impl_->groups->index.size();
  return counts;
}

void ClusterState::publish_now() { impl_->publish_all(); }

}  // namespace gpu_admission::webhook::cluster
