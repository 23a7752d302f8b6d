// How many CPUs this process may actually use: the CPUs of its affinity mask (taskset, a
// cpuset cgroup) and the CFS quota of its cgroup (a Kubernetes CPU limit), whichever is lower.
// The server runs one event loop per such CPU; more would only take turns on the same cores.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpu_admission::webhook {

// The number of CPUs a cgroup v2 "cpu.max" file allows ("200000 100000" -> 2, "150000 100000"
// -> 2, "max 100000" -> nullopt: no limit). nullopt for text it cannot read.
std::optional<size_t> cpus_from_cgroup_cpu_max(std::string_view text);

// At least 1.
size_t usable_cpus();

}  // namespace gpu_admission::webhook
