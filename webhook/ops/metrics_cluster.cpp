// The cluster-state series of Metrics (see metrics.h): objects cached, sync state, watch
// restarts, lookups and decode errors, per resource.
#include "webhook/ops/metrics.h"

#include "webhook/ops/metrics_internal.h"

namespace gpu_admission::webhook {

using namespace metrics_detail;

void Metrics::precreate_cluster_series() {
  // The synced gauge of a resource appears when its watch starts (Informer::start): a DRA
  // resource the API server does not serve has none, rather than a 0 an alert would read.
  set_cluster_synced(kClusterResources[0], false);
  for (size_t r = 0; r < kCachedResources; ++r) {
    set_cluster_objects(kClusterResources[r], 0);
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
    impl_->update_failed();
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
    impl_->update_failed();
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
    impl_->update_failed();
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
    impl_->update_failed();
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
    impl_->update_failed();
  }
}

}  // namespace gpu_admission::webhook
