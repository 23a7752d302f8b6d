// CPU budget of the process (see cpu_budget.h).
#include "webhook/server/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>
#include <thread>

namespace gpu_admission::webhook {

namespace {

std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<size_t> cpus_from_quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<size_t>(std::max<long long>(1, (quota + period - 1) / period));
}

std::string read_small_file(const char* path) {
  std::ifstream file(path);
  std::string text;
  if (file) std::getline(file, text);
  return text;
}

}  // namespace

std::optional<size_t> cpus_from_cgroup_cpu_max(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view quota = text.substr(0, space);
  if (quota == "max") return std::nullopt;
  const auto quota_value = parse_integer(quota);
  const auto period_value = parse_integer(text.substr(space + 1));
  if (!quota_value || !period_value) return std::nullopt;
  return cpus_from_quota(*quota_value, *period_value);
}

size_t usable_cpus() {
  size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) cpus = std::max(1, CPU_COUNT(&mask));
  // cgroup v2, then v1.
  if (auto limit = cpus_from_cgroup_cpu_max(read_small_file("/sys/fs/cgroup/cpu.max"))) {
    cpus = std::min(cpus, *limit);
  } else {
    const auto quota = parse_integer(read_small_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"));
    const auto period = parse_integer(read_small_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
    if (quota && period)
      if (auto limit = cpus_from_quota(*quota, *period)) cpus = std::min(cpus, *limit);
  }
  return std::max<size_t>(1, cpus);
}

}  // namespace gpu_admission::webhook
