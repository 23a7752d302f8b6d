// Prometheus metrics of the webhook (see metrics.h) on prometheus-cpp's core registry: the
// request, rule, mutation, policy and certificate series. The cluster-state series are in
// metrics_cluster.cpp, the series labelled by tenant and by exception in metrics_labels.cpp, the
// families and tables they share in metrics_internal.h.
//
// Hot-path series are addressed by small integer indexes into fixed tables of atomic pointers:
// the first use of a label set takes a mutex and registers the series (prometheus-cpp's
// Family::Add), later uses are one atomic load and a lock-free increment. Label values that
// come from requests (operation, kind) are mapped onto fixed vocabularies, so a hostile client
// cannot blow up the number of series.
#include "webhook/ops/metrics.h"

#include <prometheus/text_serializer.h>

#include <chrono>
#include <sstream>

#include "policy/config/compiled_policy.h"
#include "webhook/ops/build_info.h"
#include "webhook/ops/metrics_internal.h"

namespace gpu_admission::webhook {

using namespace metrics_detail;

Metrics::Impl::Impl() {
  for (size_t i = 0; i < kEndpoints.size(); ++i)
    duration_series[i] = &durations.Add({{"endpoint", std::string(kEndpoints[i])}},
                                        prometheus::Histogram::BucketBoundaries(kLatencyBuckets.begin(),
                                                                                kLatencyBuckets.end()));
  for (size_t e = 0; e < kRequestErrorCount; ++e)
    request_error_series[e] = &request_errors.Add(
        {{"class", std::string(kRequestErrors[e].error_class)}, {"reason", std::string(kRequestErrors[e].reason)}});
  constexpr size_t kResults = kCertificateResults.size() - 1;  // "other" is never counted
  for (size_t o = 0; o + 1 < kCertificateOperations.size(); ++o)
    for (size_t r = 0; r < kResults; ++r)
      certificate_operation_series[o * kResults + r] = &certificate_operations.Add(
          {{"operation", std::string(kCertificateOperations[o])}, {"result", std::string(kCertificateResults[r])}});
  const BuildInfo& build = build_info();
  build_infos.Add({{"version", std::string(build.version)}, {"commit", std::string(build.commit)}}).Set(1);
}

Metrics::Metrics() : impl_(std::make_unique<Impl>()) { impl_->precreate(); }

namespace {

// The slot of rule_results_total{rule,action,mode} in a tenant's block.
size_t rule_series_index(size_t rule, size_t action, size_t mode) {
  return (rule * policy::kActionNames.size() + action) * policy::kEnforcementNames.size() + mode;
}

prometheus::Labels rule_series_labels(size_t rule, size_t action, size_t mode, const std::string& tenant) {
  return {{"rule", std::string(policy::kRuleNames[rule])},
          {"action", std::string(policy::kActionNames[action])},
          {"tenant", tenant},
          {"mode", std::string(policy::kEnforcementNames[mode])}};
}

}  // namespace

void Metrics::Impl::precreate() {
  TenantSeries::Block& none = tenant_series.none();
  for (size_t r = 0; r < policy::kRuleCount; ++r)
    for (policy::Action action : {policy::Action::Deny, policy::Action::Warn, policy::Action::Audit})
      for (size_t m = 0; m < policy::kEnforcementNames.size(); ++m) {
        const auto a = static_cast<size_t>(action);
        none.rule_series.get(rule_series_index(r, a, m), registration,
                             [&] { return rule_series_labels(r, a, m, none.name); });
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
                              std::string_view decision, double seconds, TenantLabel tenant, bool dry_run) {
  try {
    const size_t e = endpoint == "mutate" ? 1 : 0;
    const size_t o = vocabulary_index(kOperations, operation);
    const size_t k = vocabulary_index(kKinds, kind);
    const size_t d = vocabulary_index(kDecisions, decision);
    const size_t dr = dry_run ? 1 : 0;
    const size_t index = (((e * kOperations.size() + o) * kKinds.size() + k) * kDecisions.size() + d) * 2 + dr;
    TenantSeries::Block& block = impl_->tenant_series.block(tenant);
    block.request_series
        .get(index, impl_->registration,
             [&] {
               return prometheus::Labels{{"endpoint", std::string(kEndpoints[e])},
                                         {"operation", std::string(kOperations[o])},
                                         {"kind", std::string(kKinds[k])},
                                         {"decision", std::string(kDecisions[d])},
                                         {"tenant", block.name},
                                         {"dry_run", std::string(kDryRun[dr])}};
             })
        .Increment();
    impl_->durations_observed[e].observe(seconds);
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_rule_result(policy::RuleId rule, policy::Action action, TenantLabel tenant,
                                policy::Enforcement mode) {
  try {
    const size_t r = static_cast<size_t>(rule);
    const size_t a = static_cast<size_t>(action);
    const size_t m = static_cast<size_t>(mode);
    if (r >= policy::kRuleCount || a >= policy::kActionNames.size() || m >= policy::kEnforcementNames.size()) return;
    TenantSeries::Block& block = impl_->tenant_series.block(tenant);
    block.rule_series
        .get(rule_series_index(r, a, m), impl_->registration, [&] { return rule_series_labels(r, a, m, block.name); })
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_mutation_withheld(policy::MutationId mutation, TenantLabel tenant) {
  try {
    const size_t m = static_cast<size_t>(mutation);
    if (m >= policy::kMutationCount) return;
    TenantSeries::Block& block = impl_->tenant_series.block(tenant);
    block.withheld_series
        .get(m, impl_->registration,
             [&] {
               return prometheus::Labels{{"tenant", block.name}, {"mutation", std::string(policy::name_of(mutation))}};
             })
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::exception_applied(std::string_view exception, std::string_view rule) {
  try {
    impl_->exception_series.get(exception, rule).Increment();
  } catch (...) {
    impl_->update_failed();
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
    impl_->update_failed();
  }
}

void Metrics::count_exemption(std::string_view by) {
  try {
    const size_t b = vocabulary_index(kExemptionKinds, by);
    impl_->exemption_series
        .get(b, impl_->registration, [&] { return prometheus::Labels{{"by", std::string(kExemptionKinds[b])}}; })
        .Increment();
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::set_policy(const policy::CompiledPolicy& policy) {
  try {
    std::vector<std::string_view> tenants;
    tenants.reserve(policy.tenants().size());
    for (const auto& tenant : policy.tenants()) tenants.push_back(tenant.name);
    impl_->tenant_series.set_tenants(tenants);
    set_policy_info(policy.name(), policy.hash());
    set_exception_expiries(policy);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    impl_->last_reload_timestamp->Set(std::chrono::duration<double>(now).count());
    impl_->last_reload_success->Set(1);
  } catch (...) {
    impl_->update_failed();
  }
}

void Metrics::count_policy_reload(bool success) {
  (success ? impl_->policy_reload_success : impl_->policy_reload_failure)->Increment();
  if (!success) impl_->last_reload_success->Set(0);
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
    impl_->update_failed();
  }
}

// One series per exception with `expires` of the policy in force; those of the previous policy go.
void Metrics::set_exception_expiries(const policy::CompiledPolicy& policy) {
  std::lock_guard lock(impl_->info_mutex);
  for (prometheus::Gauge* gauge : impl_->exception_expiries) impl_->exception_expiry.Remove(gauge);
  impl_->exception_expiries.clear();
  for (const auto& e : policy.exceptions()) {
    if (!e.expires) continue;
    prometheus::Gauge& gauge = impl_->exception_expiry.Add({{"exception", e.name}});
    gauge.Set(static_cast<double>(*e.expires));
    impl_->exception_expiries.push_back(&gauge);
  }
}

void Metrics::set_certificate_expiry(double unix_seconds) { impl_->expiry->Set(unix_seconds); }

void Metrics::count_certificate_operation(std::string_view operation, std::string_view result) {
  const size_t o = vocabulary_index(kCertificateOperations, operation);
  const size_t r = vocabulary_index(kCertificateResults, result);
  constexpr size_t kResults = kCertificateResults.size() - 1;
  if (o + 1 == kCertificateOperations.size() || r == kResults) return;  // not in the vocabulary
  impl_->certificate_operation_series[o * kResults + r]->Increment();
}

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
    impl_->update_failed();
  }
}

void Metrics::count_request_error(RequestErrorKind error) {
  const size_t e = static_cast<size_t>(error);
  if (e < kRequestErrorCount) impl_->request_error_series[e]->Increment();
}

std::string Metrics::serialize() const {
  try {
    for (size_t e = 0; e < kEndpoints.size(); ++e) impl_->durations_observed[e].move_into(*impl_->duration_series[e]);
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, impl_->registry->Collect());
    return out.str();
  } catch (...) {
    impl_->update_failed();
    return "";
  }
}

}  // namespace gpu_admission::webhook
