// webhook/ops/ -- operating the webhook, the gpu_webhook_ops library: metrics (this file, the
// folder's main header), JSON-lines logging (logger.h), hot-reload triggers for files and
// signals (file_watcher.h) and the holder of the policy in force (policy_holder.h). Used by
// admission/, server/ and cli/; code here includes only policy/ (and the standard library,
// prometheus-cpp), never another webhook/ folder.
//
// Prometheus metrics of the webhook (names fixed by the product specification), on prometheus-cpp's registry. Families and
// the label sets used on the hot path are created up front, so recording is lock-free counter
// arithmetic; text exposition is served on the metrics port.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "policy/base/ids.h"

namespace gpu_admission::webhook {

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // gpu_admission_requests_total{endpoint,operation,kind,decision} and
  // gpu_admission_request_duration_seconds{endpoint} (histogram).
  // endpoint: validate|mutate; decision: allowed|denied|warned|patched|exempt|error.
  void observe_request(std::string_view endpoint, std::string_view operation, std::string_view kind,
                       std::string_view decision, double seconds);
  // gpu_admission_rule_results_total{rule,action}
  void count_rule_result(policy::RuleId rule, policy::Action action);
  // gpu_admission_mutations_total{mutation}
  void count_mutation(policy::MutationId mutation);
  // gpu_admission_exemptions_total{by}  (by: namespace|username)
  void count_exemption(std::string_view by);
  // gpu_admission_policy_reloads_total{result}  (result: success|failure)
  void count_policy_reload(bool success);
  // gpu_admission_certificate_reloads_total{result}
  void count_certificate_reload(bool success);
  // gpu_admission_policy_info{name,hash} = 1 (the previous series is removed)
  void set_policy_info(const std::string& name, const std::string& hash);
  // gpu_admission_tls_certificate_expiry_timestamp_seconds
  void set_certificate_expiry(double unix_seconds);
  // gpu_admission_internal_errors_total
  void count_internal_error();
  // gpu_admission_http_errors_total{code}  (400, 413, 415, ...)
  void count_http_error(int code);

  // Cluster state (--cluster). resource: namespaces|resourceclaims|resourceclaimtemplates.
  // Creates every cluster series at 0 (called when cluster state is turned on).
  void precreate_cluster_series();
  // gpu_admission_cluster_objects{resource}: objects in the cache
  void set_cluster_objects(std::string_view resource, double count);
  // gpu_admission_cluster_synced{resource}: 1 while the cache is in step with the API server
  void set_cluster_synced(std::string_view resource, bool synced);
  // gpu_admission_cluster_watch_restarts_total{resource,reason}
  // reason: closed (the server ended the watch), expired (410 Gone: a fresh list), disconnected,
  // error, invalid (an undecodable or over-long event: a fresh list)
  void count_cluster_watch_restart(std::string_view resource, std::string_view reason);
  // gpu_admission_cluster_lookups_total{resource,result}  (result: hit|fetched|absent|error)
  void count_cluster_lookup(std::string_view resource, std::string_view result);
  // gpu_admission_cluster_decode_errors_total{resource}: objects listed, watched or fetched that
  // could not be decoded (left out of the cache as usable objects)
  void count_cluster_decode_error(std::string_view resource);

  // The Prometheus text exposition of every family.
  std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_admission::webhook
