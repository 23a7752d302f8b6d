// Prometheus metrics of the webhook (see metrics.h) on prometheus-cpp's core registry.
//
// Hot-path series are addressed by small integer indexes into fixed tables of atomic pointers:
// the first use of a label set takes a mutex and registers the series (prometheus-cpp's
// Family::Add), later uses are one atomic load and a lock-free increment. Label values that
// come from requests (operation, kind) are mapped onto fixed vocabularies, so a hostile client
// cannot blow up the number of series.
#include "webhook/ops/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace gpu_admission::webhook {

namespace {

constexpr std::array<std::string_view, 2> kEndpoints = {"validate", "mutate"};
constexpr std::array<std::string_view, 6> kOperations = {"CREATE", "UPDATE", "DELETE", "CONNECT", "unknown",
                                                         "other"};
constexpr std::array<std::string_view, 11> kKinds = {
    "Pod",     "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController",
    "Job",     "CronJob",    "EphemeralContainers", "unknown", "other"};
constexpr std::array<std::string_view, 7> kDecisions = {"allowed", "denied", "warned", "patched",
                                                        "exempt",  "error",  "other"};
constexpr std::array<std::string_view, 3> kExemptionKinds = {"namespace", "username", "other"};
// The first kCachedResources are cached (listed and watched); pods are only got by name.
constexpr std::array<std::string_view, 5> kClusterResources = {"namespaces", "resourceclaims",
                                                               "resourceclaimtemplates", "pods", "other"};
constexpr size_t kCachedResources = 3;
constexpr std::array<std::string_view, 6> kRestartReasons = {"closed", "expired", "disconnected",
                                                             "error",  "invalid", "other"};
constexpr std::array<std::string_view, 5> kLookupResults = {"hit", "fetched", "absent", "error", "other"};
constexpr size_t kMaxHttpErrorCodes = 64;  // distinct codes kept; more share code="other"

// Index of `value` in `vocabulary`: "" maps to "unknown" when present, anything else unknown to
// the last entry ("other").
template <size_t N>
size_t vocabulary_index(const std::array<std::string_view, N>& vocabulary, std::string_view value) {
  if (value.empty()) value = "unknown";
  for (size_t i = 0; i < N; ++i)
    if (vocabulary[i] == value) return i;
  return N - 1;
}

// Buckets for sub-millisecond admission latencies up to the API server's timeouts.
constexpr std::array<double, 14> kLatencyBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                    0.01,    0.025,  0.05,    0.1,    0.25,   0.5,   1.0};
prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {kLatencyBuckets.begin(), kLatencyBuckets.end()};
}

// Request latencies as they are observed: one relaxed atomic add per bucket and to the sum, no
// lock (prometheus-cpp's Histogram::Observe takes a mutex, which every event loop would contend
// for). Scrapes move what accumulated into the registry's histogram (ObserveMultiple).
class LatencyTally {
 public:
  void observe(double seconds) {
    const auto bucket = static_cast<size_t>(
        std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds) - kLatencyBuckets.begin());
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    const double ns = seconds > 0 ? seconds * 1e9 : 0;
    sum_ns_.fetch_add(ns < 1.8e19 ? static_cast<uint64_t>(ns) : uint64_t{1} << 63, std::memory_order_relaxed);
  }
  void move_into(prometheus::Histogram& histogram) {
    std::vector<double> increments(counts_.size());
    bool any = false;
    for (size_t i = 0; i < counts_.size(); ++i) {
      increments[i] = static_cast<double>(counts_[i].exchange(0, std::memory_order_relaxed));
      any = any || increments[i] > 0;
    }
    const double sum = static_cast<double>(sum_ns_.exchange(0, std::memory_order_relaxed)) / 1e9;
    if (any || sum > 0) histogram.ObserveMultiple(increments, sum);
  }

 private:
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> counts_{};  // the last: +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

// A fixed table of lazily registered series of one family.
template <typename Metric, size_t Size>
class LazySeries {
 public:
  explicit LazySeries(prometheus::Family<Metric>& family) : family_(family) {
    for (auto& slot : slots_) slot.store(nullptr, std::memory_order_relaxed);
  }

  template <typename MakeLabels>
  Metric& get(size_t index, std::mutex& registration, MakeLabels&& make_labels) {
    Metric* metric = slots_[index].load(std::memory_order_acquire);
    if (metric != nullptr) return *metric;
    std::lock_guard lock(registration);
    metric = slots_[index].load(std::memory_order_relaxed);
    if (metric == nullptr) {
      metric = &family_.Add(make_labels());
      slots_[index].store(metric, std::memory_order_release);
    }
    return *metric;
  }

 private:
  prometheus::Family<Metric>& family_;
  std::array<std::atomic<Metric*>, Size> slots_;
};

constexpr size_t kRequestSeries = kEndpoints.size() * kOperations.size() * kKinds.size() * kDecisions.size();
constexpr size_t kRuleSeries = policy::kRuleCount * policy::kActionNames.size();

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::mutex registration;  // serializes first-time registration of series

  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("gpu_admission_requests_total")
          .Help("Admission requests answered, by endpoint, operation, kind and decision.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& durations =
      prometheus::BuildHistogram()
          .Name("gpu_admission_request_duration_seconds")
          .Help("Time to answer an admission request, from the event-loop turn that took it up to the response.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& rule_results =
      prometheus::BuildCounter()
          .Name("gpu_admission_rule_results_total")
          .Help("Rule violations found, by rule and the action taken.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& mutations =
      prometheus::BuildCounter()
          .Name("gpu_admission_mutations_total")
          .Help("Mutations that changed a pod, by mutation.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& exemptions =
      prometheus::BuildCounter()
          .Name("gpu_admission_exemptions_total")
          .Help("Requests exempted from the policy, by what matched (namespace or username).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& policy_reloads =
      prometheus::BuildCounter()
          .Name("gpu_admission_policy_reloads_total")
          .Help("Policy reload attempts, by result.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& certificate_reloads =
      prometheus::BuildCounter()
          .Name("gpu_admission_certificate_reloads_total")
          .Help("Serving certificate reload attempts, by result.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& policy_info =
      prometheus::BuildGauge()
          .Name("gpu_admission_policy_info")
          .Help("The policy in force: always 1, labelled with its name and content hash.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& certificate_expiry =
      prometheus::BuildGauge()
          .Name("gpu_admission_tls_certificate_expiry_timestamp_seconds")
          .Help("notAfter of the serving certificate in use, as a Unix timestamp.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& internal_errors =
      prometheus::BuildCounter()
          .Name("gpu_admission_internal_errors_total")
          .Help("Unexpected internal errors (answered fail-closed).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& http_errors =
      prometheus::BuildCounter()
          .Name("gpu_admission_http_errors_total")
          .Help("Requests rejected at the HTTP level, by status code.")
          .Register(*registry);

  LazySeries<prometheus::Counter, kRequestSeries> request_series{requests};
  LazySeries<prometheus::Counter, kRuleSeries> rule_series{rule_results};
  LazySeries<prometheus::Counter, policy::kMutationCount> mutation_series{mutations};
  LazySeries<prometheus::Counter, kExemptionKinds.size()> exemption_series{exemptions};

  prometheus::Family<prometheus::Gauge>& cluster_objects =
      prometheus::BuildGauge()
          .Name("gpu_admission_cluster_objects")
          .Help("Objects in the cluster state cache, by resource.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& cluster_synced =
      prometheus::BuildGauge()
          .Name("gpu_admission_cluster_synced")
          .Help("1 while the cache of a resource is in step with the API server (listed and watching), else 0.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cluster_restarts =
      prometheus::BuildCounter()
          .Name("gpu_admission_cluster_watch_restarts_total")
          .Help("Watches of the API server restarted, by resource and reason.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cluster_lookups =
      prometheus::BuildCounter()
          .Name("gpu_admission_cluster_lookups_total")
          .Help("Claim and template lookups by admission, by resource and result (hit, fetched, absent, error).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cluster_decode_errors =
      prometheus::BuildCounter()
          .Name("gpu_admission_cluster_decode_errors_total")
          .Help("Objects listed, watched or fetched that could not be decoded, by resource (pods that refer to "
                "such a claim are judged with it unresolved).")
          .Register(*registry);
  LazySeries<prometheus::Gauge, kClusterResources.size()> cluster_object_series{cluster_objects};
  LazySeries<prometheus::Gauge, kClusterResources.size()> cluster_synced_series{cluster_synced};
  LazySeries<prometheus::Counter, kClusterResources.size() * kRestartReasons.size()> cluster_restart_series{
      cluster_restarts};
  LazySeries<prometheus::Counter, kClusterResources.size() * kLookupResults.size()> cluster_lookup_series{
      cluster_lookups};
  LazySeries<prometheus::Counter, kClusterResources.size()> cluster_decode_error_series{cluster_decode_errors};

  std::array<prometheus::Histogram*, kEndpoints.size()> duration_series{};
  std::array<LatencyTally, kEndpoints.size()> durations_observed;
  prometheus::Counter* policy_reload_success = &policy_reloads.Add({{"result", "success"}});
  prometheus::Counter* policy_reload_failure = &policy_reloads.Add({{"result", "failure"}});
  prometheus::Counter* certificate_reload_success = &certificate_reloads.Add({{"result", "success"}});
  prometheus::Counter* certificate_reload_failure = &certificate_reloads.Add({{"result", "failure"}});
  prometheus::Gauge* expiry = &certificate_expiry.Add({});
  prometheus::Counter* internal_error_count = &internal_errors.Add({});

  std::mutex info_mutex;
  prometheus::Gauge* current_policy_info = nullptr;

  std::mutex http_error_mutex;
  std::map<int, prometheus::Counter*> http_error_series;

  Impl() {
    for (size_t i = 0; i < kEndpoints.size(); ++i)
      duration_series[i] = &durations.Add({{"endpoint", std::string(kEndpoints[i])}}, latency_buckets());
  }
  // Series of small fixed families start at 0, so they are visible (and rate() works) from the
  // first scrape.
  void precreate();
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) { impl_->precreate(); }

void Metrics::Impl::precreate() {
  for (size_t r = 0; r < policy::kRuleCount; ++r) {
    for (policy::Action action : {policy::Action::Deny, policy::Action::Warn, policy::Action::Audit}) {
      const auto rule = static_cast<policy::RuleId>(r);
      rule_series.get(r * policy::kActionNames.size() + static_cast<size_t>(action), registration, [&] {
        return prometheus::Labels{{"rule", std::string(policy::name_of(rule))},
                                  {"action", std::string(policy::name_of(action))}};
      });
    }
  }
  for (size_t m = 0; m < policy::kMutationCount; ++m) {
    const auto mutation = static_cast<policy::MutationId>(m);
    mutation_series.get(m, registration,
                        [&] { return prometheus::Labels{{"mutation", std::string(policy::name_of(mutation))}}; });
  }
  for (size_t b = 0; b + 1 < kExemptionKinds.size(); ++b)
    exemption_series.get(b, registration, [&] { return prometheus::Labels{{"by", std::string(kExemptionKinds[b])}}; });
}
Metrics::~Metrics() = default;

void Metrics::observe_request(std::string_view endpoint, std::string_view operation, std::string_view kind,
                              std::string_view decision, double seconds) {
  try {
    const size_t e = endpoint == "mutate" ? 1 : 0;
    const size_t o = vocabulary_index(kOperations, operation);
    const size_t k = vocabulary_index(kKinds, kind);
    const size_t d = vocabulary_index(kDecisions, decision);
    const size_t index = ((e * kOperations.size() + o) * kKinds.size() + k) * kDecisions.size() + d;
    impl_->request_series
        .get(index, impl_->registration,
             [&] {
               return prometheus::Labels{{"endpoint", std::string(kEndpoints[e])},
                                         {"operation", std::string(kOperations[o])},
                                         {"kind", std::string(kKinds[k])},
                                         {"decision", std::string(kDecisions[d])}};
             })
        .Increment();
    impl_->durations_observed[e].observe(seconds);
  } catch (...) {
  }
}

void Metrics::count_rule_result(policy::RuleId rule, policy::Action action) {
  try {
    const size_t r = static_cast<size_t>(rule);
    const size_t a = static_cast<size_t>(action);
    if (r >= policy::kRuleCount || a >= policy::kActionNames.size()) return;
    impl_->rule_series
        .get(r * policy::kActionNames.size() + a, impl_->registration,
             [&] {
               return prometheus::Labels{{"rule", std::string(policy::name_of(rule))},
                                         {"action", std::string(policy::name_of(action))}};
             })
        .Increment();
  } catch (...) {
  }
}

void Metrics::count_mutation(policy::MutationId mutation) {
  try {
    const size_t m = static_cast<size_t>(mutation);
    if (m >= policy::kMutationCount) return;
    impl_->mutation_series
        .get(m, impl_->registration,
             [&] { return prometheus::Labels{{"mutation", std::string(policy::name_of(mutation))}}; })
        .Increment();
  } catch (...) {
  }
}

void Metrics::count_exemption(std::string_view by) {
  try {
    const size_t b = vocabulary_index(kExemptionKinds, by);
    impl_->exemption_series
        .get(b, impl_->registration, [&] { return prometheus::Labels{{"by", std::string(kExemptionKinds[b])}}; })
        .Increment();
  } catch (...) {
  }
}

void Metrics::count_policy_reload(bool success) {
  (success ? impl_->policy_reload_success : impl_->policy_reload_failure)->Increment();
}

void Metrics::count_certificate_reload(bool success) {
  (success ? impl_->certificate_reload_success : impl_->certificate_reload_failure)->Increment();
}

void Metrics::set_policy_info(const std::string& name, const std::string& hash) {
  try {
    std::lock_guard lock(impl_->info_mutex);
    if (impl_->current_policy_info != nullptr) {
      impl_->policy_info.Remove(impl_->current_policy_info);
      impl_->current_policy_info = nullptr;
    }
    impl_->current_policy_info = &impl_->policy_info.Add({{"name", name}, {"hash", hash}});
    impl_->current_policy_info->Set(1);
  } catch (...) {
  }
}

void Metrics::set_certificate_expiry(double unix_seconds) { impl_->expiry->Set(unix_seconds); }

void Metrics::count_internal_error() { impl_->internal_error_count->Increment(); }

void Metrics::count_http_error(int code) {
  try {
    prometheus::Counter* counter = nullptr;
    {
      std::lock_guard lock(impl_->http_error_mutex);
      auto found = impl_->http_error_series.find(code);
      if (found != impl_->http_error_series.end()) {
        counter = found->second;
      } else {
        const bool keep_code = impl_->http_error_series.size() < kMaxHttpErrorCodes && code >= 100 && code <= 999;
        const int key = keep_code ? code : 0;
        auto& slot = impl_->http_error_series[key];
        if (slot == nullptr)
          slot = &impl_->http_errors.Add({{"code", keep_code ? std::to_string(code) : std::string("other")}});
        counter = slot;
      }
    }
    counter->Increment();
  } catch (...) {
  }
}

void Metrics::precreate_cluster_series() {
  for (size_t r = 0; r < kCachedResources; ++r) {
    set_cluster_objects(kClusterResources[r], 0);
    set_cluster_synced(kClusterResources[r], false);
    impl_->cluster_decode_error_series.get(r, impl_->registration, [&] {
      return prometheus::Labels{{"resource", std::string(kClusterResources[r])}};
    });
    for (size_t reason = 0; reason + 1 < kRestartReasons.size(); ++reason) {
      impl_->cluster_restart_series.get(r * kRestartReasons.size() + reason, impl_->registration, [&] {
        return prometheus::Labels{{"resource", std::string(kClusterResources[r])},
                                  {"reason", std::string(kRestartReasons[reason])}};
      });
    }
    if (r == 0) continue;  // namespaces are not looked up one by one
    for (size_t result = 0; result + 1 < kLookupResults.size(); ++result) {
      impl_->cluster_lookup_series.get(r * kLookupResults.size() + result, impl_->registration, [&] {
        return prometheus::Labels{{"resource", std::string(kClusterResources[r])},
                                  {"result", std::string(kLookupResults[result])}};
      });
    }
  }
}

void Metrics::set_cluster_objects(std::string_view resource, double count) {
  try {
    const size_t r = vocabulary_index(kClusterResources, resource);
    impl_->cluster_object_series
        .get(r, impl_->registration,
             [&] { return prometheus::Labels{{"resource", std::string(kClusterResources[r])}}; })
        .Set(count);
  } catch (...) {
  }
}

void Metrics::set_cluster_synced(std::string_view resource, bool synced) {
  try {
    const size_t r = vocabulary_index(kClusterResources, resource);
    impl_->cluster_synced_series
        .get(r, impl_->registration,
             [&] { return prometheus::Labels{{"resource", std::string(kClusterResources[r])}}; })
        .Set(synced ? 1 : 0);
  } catch (...) {
  }
}

void Metrics::count_cluster_watch_restart(std::string_view resource, std::string_view reason) {
  try {
    const size_t r = vocabulary_index(kClusterResources, resource);
    const size_t why = vocabulary_index(kRestartReasons, reason);
    impl_->cluster_restart_series
        .get(r * kRestartReasons.size() + why, impl_->registration,
             [&] {
               return prometheus::Labels{{"resource", std::string(kClusterResources[r])},
                                         {"reason", std::string(kRestartReasons[why])}};
             })
        .Increment();
  } catch (...) {
  }
}

void Metrics::count_cluster_lookup(std::string_view resource, std::string_view result) {
  try {
    const size_t r = vocabulary_index(kClusterResources, resource);
    const size_t what = vocabulary_index(kLookupResults, result);
    impl_->cluster_lookup_series
        .get(r * kLookupResults.size() + what, impl_->registration,
             [&] {
               return prometheus::Labels{{"resource", std::string(kClusterResources[r])},
                                         {"result", std::string(kLookupResults[what])}};
             })
        .Increment();
  } catch (...) {
  }
}

void Metrics::count_cluster_decode_error(std::string_view resource) {
  try {
    const size_t r = vocabulary_index(kClusterResources, resource);
    impl_->cluster_decode_error_series
        .get(r, impl_->registration,
             [&] { return prometheus::Labels{{"resource", std::string(kClusterResources[r])}}; })
        .Increment();
  } catch (...) {
  }
}

std::string Metrics::serialize() const {
  try {
    for (size_t e = 0; e < kEndpoints.size(); ++e) impl_->durations_observed[e].move_into(*impl_->duration_series[e]);
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, impl_->registry->Collect());
    return out.str();
  } catch (...) {
    return "";
  }
}

}  // namespace gpu_admission::webhook
