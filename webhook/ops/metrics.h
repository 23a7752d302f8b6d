// webhook/ops/ -- operating the webhook, the gpu_webhook_ops library: metrics (this file, the
// folder's main header; metrics_internal.h inside it), JSON-lines logging (logger.h) with the
// kinds of request error (request_errors.h) reported to both (error_report.h), what the binary
// is (build_info.h), hot-reload triggers for files and signals (file_watcher.h) and the holder
// of the policy in force (policy_holder.h). Used by
// admission/, server/ and cli/; code here includes only policy/ (and the standard library,
// prometheus-cpp), never another webhook/ folder.
//
// Prometheus metrics of the webhook (names fixed by the product specification), on prometheus-cpp's
// registry. Label values are bounded: request fields map onto fixed vocabularies, tenants come
// from the policy, exceptions are capped. A label set used on the hot path is registered on its
// first use, after which recording is lock-free counter arithmetic; gpu_admission_build_info
// {version,commit} is set at construction. Text exposition is served on the metrics port.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "policy/base/ids.h"
#include "webhook/ops/request_errors.h"

namespace gpu_admission::policy {
class CompiledPolicy;
}

namespace gpu_admission::webhook {

// A request's tenant as a metric label: its index in the policy that judged it (Tenant::index)
// and its name. The default, index -1, is no tenant (a namespace of no tenant, or a request that
// was not evaluated): labelled "none".
struct TenantLabel {
  int index = -1;
  std::string_view name;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // gpu_admission_requests_total{endpoint,operation,kind,decision,tenant,dry_run} and
  // gpu_admission_request_duration_seconds{endpoint} (histogram).
  // endpoint: validate|mutate; decision: allowed|denied|warned|audited|patched|exempt|error;
  // dry_run: true|false. Lock-free once a label set has been seen.
  void observe_request(std::string_view endpoint, std::string_view operation, std::string_view kind,
                       std::string_view decision, double seconds, TenantLabel tenant = {}, bool dry_run = false);
  // gpu_admission_rule_results_total{rule,action,tenant,mode}: `action` is what enforcement takes
  // (Finding::enforced), so "what would be denied" is one query in every mode.
  void count_rule_result(policy::RuleId rule, policy::Action action, TenantLabel tenant = {},
                         policy::Enforcement mode = policy::Enforcement::Enforce);
  // gpu_admission_mutations_withheld_total{tenant,mutation}: found, not applied (warn, audit).
  void count_mutation_withheld(policy::MutationId mutation, TenantLabel tenant = {});
  // gpu_admission_exceptions_applied_total{exception,rule}: a finding a policy exception turned
  // off. Children are made on first use; past 1,000 distinct pairs, new ones are counted under
  // exception="other".
  void exception_applied(std::string_view exception, std::string_view rule);
  // gpu_admission_mutations_total{mutation}
  void count_mutation(policy::MutationId mutation);
  // gpu_admission_exemptions_total{by}  (by: namespace|username)
  void count_exemption(std::string_view by);
  // The policy now in force (at start-up and after each successful reload): policy_info{name,hash},
  // the tenant label table (its tenants' names by index), policy_last_reload_success 1 and
  // policy_last_reload_timestamp_seconds now.
  void set_policy(const policy::CompiledPolicy& policy);
  // gpu_admission_exception_expiry_timestamp_seconds{exception}, replaced whole (set_policy calls it).
  void set_exception_expiries(const policy::CompiledPolicy& policy);
  // gpu_admission_policy_reloads_total{result}  (result: success|failure); a failure also sets
  // gpu_admission_policy_last_reload_success to 0 (the previous policy stays in force).
  void count_policy_reload(bool success);
  // gpu_admission_certificate_reloads_total{result}
  void count_certificate_reload(bool success);
  // gpu_admission_policy_info{name,hash} = 1 (the previous series is removed)
  void set_policy_info(const std::string& name, const std::string& hash);
  // gpu_admission_tls_certificate_expiry_timestamp_seconds
  void set_certificate_expiry(double unix_seconds);
  // gpu_admission_certificate_operations_total{operation,result}: self-managed certificates.
  // operation: create|replace|rotate-ca|renew|prune|ca-bundle; result: success|conflict|error.
  void count_certificate_operation(std::string_view operation, std::string_view result);
  // gpu_admission_internal_errors_total
  void count_internal_error();
  // gpu_admission_http_errors_total{code}  (400, 413, 415, ...)
  void count_http_error(int code);
  // gpu_admission_request_errors_total{class,reason}: a request answered with an error
  // (request_errors.h); every class and reason is there at 0 from the start.
  void count_request_error(RequestErrorKind error);

  // Cluster state (--cluster). resource: namespaces|resourceclaims|resourceclaimtemplates|podgroups.
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
