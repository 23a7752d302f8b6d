#include "webhook/audit/audit_metrics.h"

#include <mutex>
#include <sstream>
#include <vector>

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "policy/base/ids.h"
#include "webhook/ops/build_info.h"

namespace gpu_admission::webhook::audit {

struct AuditMetrics::Impl {
  std::mutex mutex;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& violations =
      prometheus::BuildGauge()
          .Name("gpu_admission_audit_violations")
          .Help("Objects the last audit found with a finding, by tenant, rule and action")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& objects = prometheus::BuildGauge()
                                                       .Name("gpu_admission_audit_objects")
                                                       .Help("Objects the last audit judged, by kind")
                                                       .Register(*registry);
  prometheus::Gauge& last_run = prometheus::BuildGauge()
                                    .Name("gpu_admission_audit_last_run_timestamp_seconds")
                                    .Help("When the last audit run ended (Unix seconds)")
                                    .Register(*registry)
                                    .Add({});
  prometheus::Gauge& duration = prometheus::BuildGauge()
                                    .Name("gpu_admission_audit_duration_seconds")
                                    .Help("How long the last audit run took")
                                    .Register(*registry)
                                    .Add({});
  prometheus::Gauge& success = prometheus::BuildGauge()
                                   .Name("gpu_admission_audit_last_run_success")
                                   .Help("1 when the last audit run completed, 0 when it failed")
                                   .Register(*registry)
                                   .Add({});
  // The series of violations and objects, replaced by each run.
  std::vector<prometheus::Gauge*> violation_series, object_series;

  Impl() {
    const BuildInfo& build = build_info();
    prometheus::BuildGauge()
        .Name("gpu_admission_build_info")
        .Help("The version and commit of this binary")
        .Register(*registry)
        .Add({{"version", std::string(build.version)}, {"commit", std::string(build.commit)}})
        .Set(1);
  }
};

AuditMetrics::AuditMetrics() : impl_(std::make_unique<Impl>()) {}
AuditMetrics::~AuditMetrics() = default;

void AuditMetrics::succeeded(const AuditResult& result, int64_t finished_at) {
  std::lock_guard lock(impl_->mutex);
  for (prometheus::Gauge* g : impl_->violation_series) impl_->violations.Remove(g);
  for (prometheus::Gauge* g : impl_->object_series) impl_->objects.Remove(g);
  impl_->violation_series.clear();
  impl_->object_series.clear();
  for (const AuditTotal& t : result.totals) {
    auto& g = impl_->violations.Add({{"tenant", t.tenant},
                                     {"rule", std::string(policy::name_of(t.rule))},
                                     {"action", std::string(name_of(t.label))}});
    g.Set(static_cast<double>(t.objects));
    impl_->violation_series.push_back(&g);
  }
  for (const auto& [kind, count] : result.judged) {
    auto& g = impl_->objects.Add({{"kind", kind}});
    g.Set(static_cast<double>(count));
    impl_->object_series.push_back(&g);
  }
  impl_->last_run.Set(static_cast<double>(finished_at));
  impl_->duration.Set(result.duration_seconds);
  impl_->success.Set(1);
}

void AuditMetrics::failed(double duration_seconds, int64_t finished_at) {
  std::lock_guard lock(impl_->mutex);
  impl_->last_run.Set(static_cast<double>(finished_at));
  impl_->duration.Set(duration_seconds);
  impl_->success.Set(0);
}

std::string AuditMetrics::serialize() const {
  std::lock_guard lock(impl_->mutex);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, impl_->registry->Collect());
  return out.str();
}

}  // namespace gpu_admission::webhook::audit
