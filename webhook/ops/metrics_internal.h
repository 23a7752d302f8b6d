// Inside Metrics (metrics.h), shared by its source files: the fixed label vocabularies, the
// lock-free tables of lazily registered series, the latency tally, the series labelled by tenant
// and by exception, and Metrics::Impl with every family. Not for use outside webhook/ops/metrics*.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/ops/metrics.h"

namespace gpu_admission::webhook::metrics_detail {

inline constexpr std::array<std::string_view, 2> kEndpoints = {"validate", "mutate"};
inline constexpr std::array<std::string_view, 6> kOperations = {"CREATE", "UPDATE", "DELETE", "CONNECT", "unknown",
                                                                "other"};
inline constexpr std::array<std::string_view, 12> kKinds = {
    "Pod",     "Deployment", "StatefulSet",         "DaemonSet", "ReplicaSet", "ReplicationController",
    "Job",     "CronJob",    "EphemeralContainers", "ConfigMap", "unknown",    "other"};
inline constexpr std::array<std::string_view, 8> kDecisions = {"allowed", "denied", "warned", "audited", "patched",
                                                               "exempt",  "error",  "other"};
inline constexpr std::array<std::string_view, 2> kDryRun = {"false", "true"};
inline constexpr std::array<std::string_view, 3> kExemptionKinds = {"namespace", "username", "other"};
// The first kCachedResources are cached (listed and watched); pods are only got by name.
inline constexpr std::array<std::string_view, 6> kClusterResources = {
    "namespaces", "resourceclaims", "resourceclaimtemplates", "podgroups", "pods", "other"};
inline constexpr size_t kCachedResources = 4;
inline constexpr std::array<std::string_view, 6> kRestartReasons = {"closed", "expired", "disconnected",
                                                                    "error",  "invalid", "other"};
inline constexpr std::array<std::string_view, 5> kLookupResults = {"hit", "fetched", "absent", "error", "other"};
inline constexpr size_t kMaxHttpErrorCodes = 64;  // distinct codes kept; more share code="other"
inline constexpr std::string_view kNoTenant = "none";
// Self-managed certificates (webhook/cluster/cert_keeper.h): Secret writes by renewal kind, and
// caBundle writes; every pair is there at 0 from the start.
inline constexpr std::array<std::string_view, 7> kCertificateOperations = {
    "create", "replace", "rotate-ca", "renew", "prune", "ca-bundle", "other"};
inline constexpr std::array<std::string_view, 4> kCertificateResults = {"success", "conflict", "error", "other"};

// Index of `value` in `vocabulary`: "" maps to "unknown" when present, anything else unknown to
// the last entry ("other").
template <size_t N>
size_t vocabulary_index(const std::array<std::string_view, N>& vocabulary, std::string_view value) {
  if (value.empty()) value = "unknown";
  for (size_t i = 0; i < N; ++i)
    if (vocabulary[i] == value) return i;
  return N - 1;
}

// Buckets for sub-millisecond admission latencies up to the API server's timeouts (at most 30 s,
// 5 s in the chart): the slow-response alert compares a quantile with half the timeout, which
// histogram_quantile can only report when a bucket bound lies above it.
inline constexpr std::array<double, 17> kLatencyBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                           0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                           0.5,     1.0,    2.5,     5.0,    10.0};

// Request latencies as they are observed: one relaxed atomic add per bucket and to the sum, no
// lock (prometheus-cpp's Histogram::Observe takes a mutex, which every event loop would contend
// for). Scrapes move what accumulated into the registry's histogram (ObserveMultiple).
class LatencyTally {
 public:
  void observe(double seconds);
  void move_into(prometheus::Histogram& histogram);

 private:
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> counts_{};  // the last: +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

// A fixed table of lazily registered series of one family: the first use of an index takes the
// registration mutex and adds the series, later uses are one atomic load.
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

inline constexpr size_t kRequestSeries =
    kEndpoints.size() * kOperations.size() * kKinds.size() * kDecisions.size() * kDryRun.size();
inline constexpr size_t kRuleSeries =
    policy::kRuleCount * policy::kActionNames.size() * policy::kEnforcementNames.size();

// The series labelled by tenant (requests_total, rule_results_total, mutations_withheld_total):
// one block per tenant name,
// made on first use and kept for the life of the process (a counter never goes away under a
// reader), so the label's values are the tenants of the policies loaded plus "none". A table per
// policy maps its tenant indexes to blocks: the request path finds its block with one atomic
// load, an index and a comparison of the name (a request judged by the previous policy while a
// reload swaps tables still lands on its own tenant's block, by name, under the mutex).
class TenantSeries {
 public:
  struct Block {
    Block(std::string name_in, prometheus::Family<prometheus::Counter>& requests,
          prometheus::Family<prometheus::Counter>& rules, prometheus::Family<prometheus::Counter>& withheld)
        : name(std::move(name_in)), request_series(requests), rule_series(rules), withheld_series(withheld) {}
    const std::string name;
    LazySeries<prometheus::Counter, kRequestSeries> request_series;
    LazySeries<prometheus::Counter, kRuleSeries> rule_series;
    LazySeries<prometheus::Counter, policy::kMutationCount> withheld_series;
  };

  TenantSeries(prometheus::Family<prometheus::Counter>& requests, prometheus::Family<prometheus::Counter>& rules,
               prometheus::Family<prometheus::Counter>& withheld);
  Block& block(TenantLabel tenant);
  Block& none() { return *none_; }
  // The tenants of a policy now in force, by index.
  void set_tenants(const std::vector<std::string_view>& names);

 private:
  struct Table {
    std::vector<Block*> blocks;
  };
  Block& block_by_name(std::string_view name);  // under mutex_

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& rules_;
  prometheus::Family<prometheus::Counter>& withheld_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Block>, std::less<>> by_name_;
  Block* none_ = nullptr;
  std::atomic<const Table*> table_{nullptr};
  // Every table made: a reader may still hold an older one. A policy with the same tenants as
  // the one before reuses its table, so only reloads that change the tenants add one.
  std::vector<std::unique_ptr<Table>> tables_;
};

// gpu_admission_exceptions_applied_total{exception,rule}: children made on first use under a
// mutex, at most kMaxExceptionSeries label pairs; pairs beyond that are counted under
// exception="other" (with the rule when it is a rule ID, else "other").
class ExceptionSeries {
 public:
  static constexpr size_t kMaxExceptionSeries = 1000;
  explicit ExceptionSeries(prometheus::Family<prometheus::Counter>& family) : family_(family) {}
  prometheus::Counter& get(std::string_view exception, std::string_view rule);

 private:
  struct Less {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const std::string_view a1 = a.first, a2 = a.second, b1 = b.first, b2 = b.second;
      return a1 != b1 ? a1 < b1 : a2 < b2;
    }
  };
  prometheus::Family<prometheus::Counter>& family_;
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*, Less> series_;
};

}  // namespace gpu_admission::webhook::metrics_detail

namespace gpu_admission::webhook {

struct Metrics::Impl {
  using Counters = prometheus::Family<prometheus::Counter>;
  using Gauges = prometheus::Family<prometheus::Gauge>;

  Impl();
  void precreate();  // series of small fixed families start at 0, visible (and rate() works) from the first scrape

  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::mutex registration;  // serializes first-time registration of series

  Counters& requests = counter("gpu_admission_requests_total",
                               "Admission requests answered, by endpoint, operation, kind, decision, tenant and dry_run.");
  prometheus::Family<prometheus::Histogram>& durations =
      prometheus::BuildHistogram()
          .Name("gpu_admission_request_duration_seconds")
          .Help("Time to answer an admission request, from the event-loop turn that took it up to the response.")
          .Register(*registry);
  Counters& rule_results = counter("gpu_admission_rule_results_total",
                                   "Rule violations found, by rule, the action enforcement takes (deny also while "
                                   "observing: what would be denied), tenant and the tenant's mode.");
  Counters& mutations = counter("gpu_admission_mutations_total", "Mutations that changed a pod, by mutation.");
  Counters& mutations_withheld =
      counter("gpu_admission_mutations_withheld_total",
              "Mutations found but not applied because the tenant observes (warn or audit), by tenant and mutation.");
  Counters& exemptions = counter("gpu_admission_exemptions_total",
                                 "Requests exempted from the policy, by what matched (namespace or username).");
  Counters& exceptions_applied = counter("gpu_admission_exceptions_applied_total",
                                         "Findings turned off by a policy exception, by exception and rule.");
  Gauges& exception_expiry = gauge("gpu_admission_exception_expiry_timestamp_seconds",
                                   "When each expiring exception of the policy in force stops applying, as a Unix "
                                   "timestamp (an exception without expires has no series).");
  Counters& policy_reloads = counter("gpu_admission_policy_reloads_total", "Policy reload attempts, by result.");
  Gauges& policy_info =
      gauge("gpu_admission_policy_info", "The policy in force: always 1, labelled with its name and content hash.");
  Gauges& policy_last_reload_success = gauge("gpu_admission_policy_last_reload_success",
                                             "1 when the last policy load (start-up or reload) succeeded, else 0.");
  Gauges& policy_last_reload_timestamp =
      gauge("gpu_admission_policy_last_reload_timestamp_seconds",
            "When the policy in force was loaded (start-up or the last successful reload), as a Unix timestamp.");
  Counters& certificate_reloads =
      counter("gpu_admission_certificate_reloads_total", "Serving certificate reload attempts, by result.");
  Gauges& certificate_expiry = gauge("gpu_admission_tls_certificate_expiry_timestamp_seconds",
                                     "notAfter of the serving certificate in use, as a Unix timestamp.");
  Counters& certificate_operations = counter(
      "gpu_admission_certificate_operations_total",
      "Self-managed certificate writes (serve --certs self-managed): Secret creations, renewals, CA rotations and "
      "caBundle writes, by operation and result (success, conflict: another replica wrote first, error).");
  Counters& internal_errors =
      counter("gpu_admission_internal_errors_total", "Unexpected internal errors (answered fail-closed).");
  Counters& http_errors =
      counter("gpu_admission_http_errors_total", "Requests rejected at the HTTP level, by status code.");
  Counters& request_errors = counter(
      "gpu_admission_request_errors_total",
      "Requests answered with an error, by class (client: 4xx and unreadable objects; server: 5xx and evaluation "
      "errors) and reason.");
  Gauges& build_infos = gauge("gpu_admission_build_info", "Always 1, labelled with the version and git commit.");

  Gauges& cluster_objects = gauge("gpu_admission_cluster_objects", "Objects in the cluster state cache, by resource.");
  Gauges& cluster_synced = gauge("gpu_admission_cluster_synced",
                                 "1 while the cache of a resource is in step with the API server (listed and "
                                 "watching), else 0.");
  Counters& cluster_restarts =
      counter("gpu_admission_cluster_watch_restarts_total", "Watches of the API server restarted, by resource and reason.");
  Counters& cluster_lookups = counter("gpu_admission_cluster_lookups_total",
                                      "Claim and template lookups by admission, by resource and result (hit, fetched, "
                                      "absent, error).");
  Counters& cluster_decode_errors =
      counter("gpu_admission_cluster_decode_errors_total",
              "Objects listed, watched or fetched that could not be decoded, by resource (pods that refer to such a "
              "claim are judged with it unresolved).");

  metrics_detail::TenantSeries tenant_series{requests, rule_results, mutations_withheld};
  metrics_detail::ExceptionSeries exception_series{exceptions_applied};
  metrics_detail::LazySeries<prometheus::Counter, policy::kMutationCount> mutation_series{mutations};
  metrics_detail::LazySeries<prometheus::Counter, metrics_detail::kExemptionKinds.size()> exemption_series{exemptions};
  std::array<prometheus::Counter*, kRequestErrorCount> request_error_series{};
  std::array<prometheus::Counter*, (metrics_detail::kCertificateOperations.size() - 1) *
                                       (metrics_detail::kCertificateResults.size() - 1)>
      certificate_operation_series{};

  static constexpr size_t kResources = metrics_detail::kClusterResources.size();
  metrics_detail::LazySeries<prometheus::Gauge, kResources> cluster_object_series{cluster_objects};
  metrics_detail::LazySeries<prometheus::Gauge, kResources> cluster_synced_series{cluster_synced};
  metrics_detail::LazySeries<prometheus::Counter, kResources * metrics_detail::kRestartReasons.size()>
      cluster_restart_series{cluster_restarts};
  metrics_detail::LazySeries<prometheus::Counter, kResources * metrics_detail::kLookupResults.size()>
      cluster_lookup_series{cluster_lookups};
  metrics_detail::LazySeries<prometheus::Counter, kResources> cluster_decode_error_series{cluster_decode_errors};

  std::array<prometheus::Histogram*, metrics_detail::kEndpoints.size()> duration_series{};
  std::array<metrics_detail::LatencyTally, metrics_detail::kEndpoints.size()> durations_observed;
  prometheus::Counter* policy_reload_success = &policy_reloads.Add({{"result", "success"}});
  prometheus::Counter* policy_reload_failure = &policy_reloads.Add({{"result", "failure"}});
  prometheus::Gauge* last_reload_success = &policy_last_reload_success.Add({});
  prometheus::Gauge* last_reload_timestamp = &policy_last_reload_timestamp.Add({});
  prometheus::Counter* certificate_reload_success = &certificate_reloads.Add({{"result", "success"}});
  prometheus::Counter* certificate_reload_failure = &certificate_reloads.Add({{"result", "failure"}});
  prometheus::Gauge* expiry = &certificate_expiry.Add({});
  prometheus::Counter* internal_error_count = &internal_errors.Add({});
  Counters& metric_errors = counter("gpu_admission_metric_update_errors_total",
                                    "Metric updates that failed (the request was answered; only its metrics are "
                                    "missing): non-zero means the figures undercount.");
  prometheus::Counter* metric_error_count = &metric_errors.Add({});
  // A metric update that threw (out of memory, a registry error): counted, never passed on.
  void update_failed() noexcept { metric_error_count->Increment(); }

  std::mutex info_mutex;
  prometheus::Gauge* current_policy_info = nullptr;
  std::vector<prometheus::Gauge*> exception_expiries;  // of the policy in force, under info_mutex

  std::mutex http_error_mutex;
  std::map<int, prometheus::Counter*> http_error_series;

 private:
  Counters& counter(const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(*registry);
  }
  Gauges& gauge(const char* name, const char* help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(*registry);
  }
};

}  // namespace gpu_admission::webhook
