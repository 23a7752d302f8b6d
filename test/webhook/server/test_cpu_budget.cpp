// The CPU budget that sizes the server's event loops (webhook/server/cpu_budget.h).
#include <catch2/catch.hpp>

#include <sched.h>

#include <thread>

#include "webhook/server/cpu_budget.h"

using gpu_admission::webhook::cpus_from_cgroup_cpu_max;
using gpu_admission::webhook::usable_cpus;

TEST_CASE("cpu budget: cgroup v2 cpu.max quotas round up to whole CPUs", "[server][cpu]") {
  CHECK(cpus_from_cgroup_cpu_max("200000 100000\n") == 2u);
  CHECK(cpus_from_cgroup_cpu_max("150000 100000") == 2u);
  CHECK(cpus_from_cgroup_cpu_max("50000 100000") == 1u);  // half a CPU still gets one loop
  CHECK(cpus_from_cgroup_cpu_max("max 100000\n") == std::nullopt);
  CHECK(cpus_from_cgroup_cpu_max("") == std::nullopt);
  CHECK(cpus_from_cgroup_cpu_max("-1 100000") == std::nullopt);
  CHECK(cpus_from_cgroup_cpu_max("100000 0") == std::nullopt);
  CHECK(cpus_from_cgroup_cpu_max("12x 100000") == std::nullopt);
}

TEST_CASE("cpu budget: follows the affinity mask", "[server][cpu]") {
  const size_t cpus = usable_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  CHECK(cpus <= static_cast<size_t>(CPU_COUNT(&mask)));
}
