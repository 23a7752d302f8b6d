// The parts of Metrics with their own bookkeeping (see metrics_internal.h): request latencies
// tallied without a lock, series labelled by tenant (a table per policy over blocks kept by
// name) and series labelled by exception (made on first use, capped).
#include "webhook/ops/metrics_internal.h"

namespace gpu_admission::webhook::metrics_detail {

void LatencyTally::observe(double seconds) {
  const auto bucket = static_cast<size_t>(
      std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds) - kLatencyBuckets.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  const double ns = seconds > 0 ? seconds * 1e9 : 0;
  sum_ns_.fetch_add(ns < 1.8e19 ? static_cast<uint64_t>(ns) : uint64_t{1} << 63, std::memory_order_relaxed);
}

void LatencyTally::move_into(prometheus::Histogram& histogram) {
  std::vector<double> increments(counts_.size());
  bool any = false;
  for (size_t i = 0; i < counts_.size(); ++i) {
    increments[i] = static_cast<double>(counts_[i].exchange(0, std::memory_order_relaxed));
    any = any || increments[i] > 0;
  }
  const double sum = static_cast<double>(sum_ns_.exchange(0, std::memory_order_relaxed)) / 1e9;
  if (any || sum > 0) histogram.ObserveMultiple(increments, sum);
}

TenantSeries::TenantSeries(prometheus::Family<prometheus::Counter>& requests,
                           prometheus::Family<prometheus::Counter>& rules,
                           prometheus::Family<prometheus::Counter>& withheld)
    : requests_(requests), rules_(rules), withheld_(withheld) {
  std::lock_guard lock(mutex_);
  none_ = &block_by_name(kNoTenant);
}

TenantSeries::Block& TenantSeries::block(TenantLabel tenant) {
  if (tenant.index < 0) return *none_;
  if (const Table* table = table_.load(std::memory_order_acquire)) {
    const auto index = static_cast<size_t>(tenant.index);
    if (index < table->blocks.size() && table->blocks[index]->name == tenant.name) return *table->blocks[index];
  }
  std::lock_guard lock(mutex_);
  return block_by_name(tenant.name);
}

TenantSeries::Block& TenantSeries::block_by_name(std::string_view name) {
  auto found = by_name_.find(name);
  if (found == by_name_.end())
    found = by_name_.emplace(std::string(name), std::make_unique<Block>(std::string(name), requests_, rules_, withheld_)).first;
  return *found->second;
}

void TenantSeries::set_tenants(const std::vector<std::string_view>& names) {
  std::lock_guard lock(mutex_);
  const Table* current = table_.load(std::memory_order_relaxed);
  if (current != nullptr && current->blocks.size() == names.size()) {
    bool same = true;
    for (size_t i = 0; i < names.size() && same; ++i) same = current->blocks[i]->name == names[i];
    if (same) return;
  }
  auto table = std::make_unique<Table>();
  table->blocks.reserve(names.size());
  for (std::string_view name : names) table->blocks.push_back(&block_by_name(name));
  table_.store(table.get(), std::memory_order_release);
  tables_.push_back(std::move(table));
}

prometheus::Counter& ExceptionSeries::get(std::string_view exception, std::string_view rule) {
  std::lock_guard lock(mutex_);
  const std::pair<std::string_view, std::string_view> key{exception, rule};
  if (auto found = series_.find(key); found != series_.end()) return *found->second;
  std::pair<std::string, std::string> labels{std::string(exception), std::string(rule)};
  if (series_.size() >= kMaxExceptionSeries) {
    // Past the cap: one bucket per rule ID (a bounded set), one for anything else.
    const bool known_rule = policy::enum_from_name<policy::RuleId>(policy::kRuleNames, rule).has_value();
    labels = {"other", known_rule ? std::string(rule) : "other"};
    if (auto found = series_.find(labels); found != series_.end()) return *found->second;
  }
  prometheus::Counter* counter = &family_.Add({{"exception", labels.first}, {"rule", labels.second}});
  series_.emplace(std::move(labels), counter);
  return *counter;
}

}  // namespace gpu_admission::webhook::metrics_detail
