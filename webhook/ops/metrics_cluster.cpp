// The cluster-state series of Metrics (see metrics.h): objects cached, sync state, watch
// restarts, lookups and decode errors, per resource.
#include "webhook/ops/metrics.h"

#include "webhook/ops/metrics_internal.h"

namespace gpu_admission::webhook {

using namespace metrics_detail;

namespace {

// The series of resource `r` in a family labelled by resource alone.
template <typename Series>
auto& by_resource(Series& series, std::mutex& registration, size_t r) {
  return series.get(r, registration, [&] { return prometheus::Labels{{"resource", std::string(kClusterResources[r])}}; });
}

// The series of resource `r` and of the `w`th of `words`, the values of `label`.
template <typename Series, size_t N>
auto& by_resource_and(Series& series, std::mutex& registration, size_t r, std::string_view label,
                      const std::array<std::string_view, N>& words, size_t w) {
  return series.get(r * N + w, registration, [&] {
    return prometheus::Labels{{"resource", std::string(kClusterResources[r])}, {std::string(label), std::string(words[w])}};
  });
}

}  // namespace

void Metrics::precreate_cluster_series() {
  // The synced gauge of a resource appears when its watch starts (Informer::start): a DRA
  // resource the API server does not serve has none, rather than a 0 an alert would read.
  set_cluster_synced(kClusterResources[0], false);
  for (size_t r = 0; r < kCachedResources; ++r) {
    set_cluster_objects(kClusterResources[r], 0);
    by_resource(impl_->cluster_decode_error_series, impl_->registration, r);
    for (size_t reason = 0; reason + 1 < kRestartReasons.size(); ++reason)
      by_resource_and(impl_->cluster_restart_series, impl_->registration, r, "reason", kRestartReasons, reason);
    if (r == 0) continue;  // namespaces are not looked up one by one
    for (size_t result = 0; result + 1 < kLookupResults.size(); ++result)
      by_resource_and(impl_->cluster_lookup_series, impl_->registration, r, "result", kLookupResults, result);
  }
}

void Metrics::set_cluster_objects(std::string_view resource, double count) {
  try {
    by_resource(impl_->cluster_object_series, impl_->registration, vocabulary_index(kClusterResources, resource))
        .Set(count);
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::set_cluster_synced(std::string_view resource, bool synced) {
  try {
    by_resource(impl_->cluster_synced_series, impl_->registration, vocabulary_index(kClusterResources, resource))
        .Set(synced ? 1 : 0);
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_cluster_watch_restart(std::string_view resource, std::string_view reason) {
  try {
    by_resource_and(impl_->cluster_restart_series, impl_->registration, vocabulary_index(kClusterResources, resource),
                    "reason", kRestartReasons, vocabulary_index(kRestartReasons, reason))
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_cluster_lookup(std::string_view resource, std::string_view result) {
  try {
    by_resource_and(impl_->cluster_lookup_series, impl_->registration, vocabulary_index(kClusterResources, resource),
                    "result", kLookupResults, vocabulary_index(kLookupResults, result))
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_cluster_decode_error(std::string_view resource) {
  try {
    by_resource(impl_->cluster_decode_error_series, impl_->registration, vocabulary_index(kClusterResources, resource))
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

}  // namespace gpu_admission::webhook
