// The cluster the audit benchmark's stand-in API server (audit_standin.cpp) generates, as
// tables and small helpers: the GPU pools, the 20 tenants and their namespaces of
// bench/audit-policy.yaml (the two must say the same), the rules a generated object may be
// made to violate, a seeded random source, and the identifiers every stored object carries
// (uids, timestamps, IPs). Everything is deterministic from the seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::bench::audit {

// A GPU node pool of the policy: its node label value and what the nodes need tolerated.
struct Pool {
  std::string name;         // also the value of the node label kPoolLabel
  std::string gpu_product;  // the nodes' nvidia.com/gpu.product label
  bool tainted = false;     // nodes carry gpu.example.com/pool=<name>:NoSchedule
  bool mig = false;         // mixed MIG: pods ask for nvidia.com/mig-1g.10gb slices
  double node_share = 0;    // share of the cluster's GPU nodes
};

inline constexpr std::string_view kPoolLabel = "gpu.example.com/pool";
inline constexpr std::string_view kMigSlice = "nvidia.com/mig-1g.10gb";

enum class TenantKind { Training, Inference, Research };

struct Tenant {
  std::string name;
  TenantKind kind;
  std::string cost_center;
  bool by_label = false;  // chosen by the namespace label example.com/team, not by a name glob
  int cap = 8;            // maxGpusPerPod
  int default_pool = 0;   // index into pools()
  int foreign_pool = 0;   // a pool the tenant may not use, with no MIG (tenant-pool violations)
};

// What a namespace holds: a tenant's training, serving or development workloads, the
// platform's CPU services (no tenant), or the exempt system namespaces.
enum class NamespaceRole { Train, Serve, Dev, Platform, System };

struct Namespace {
  std::string name;
  int tenant = -1;  // index into tenants(), -1: none
  NamespaceRole role;
};

// The one rule a generated top-level object (and so each of its pods) is made to violate.
enum class Violation { None, Privileged, HostNetwork, DeviceEnv, GpuCap, Tolerations, ForeignPool };

// The policy's rule ID a violation is reported under ("privileged", "tenant-pool", ...).
std::string_view rule_of(Violation v);

const std::vector<Pool>& pools();
const std::vector<Tenant>& tenants();
// Every namespace in the order they are created: the tenants' (NAME-train, -serve, -dev), the
// platform's, then the system ones.
const std::vector<Namespace>& namespaces();

// A seeded source of the generator's choices (splitmix64): the same seed, the same cluster.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int between(int lo, int hi);  // lo..hi inclusive
  bool chance(double p);
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(between(0, static_cast<int>(items.size()) - 1))];
  }
  std::string hex(size_t digits);
  std::string uid();     // 8-4-4-4-12 hex, like a Kubernetes uid
  std::string suffix(size_t n);  // n characters of the alphabet generateName suffixes use

 private:
  uint64_t state_;
};

// RFC 3339 UTC time ("2026-11-20T08:14:03Z") of Unix seconds.
std::string rfc3339(int64_t unix_seconds);
// The benchmark's "now": objects are created before it.
inline constexpr int64_t kNow = 1795176000;  // 2026-11-20T12:00:00Z

}  // namespace gpu_admission::bench::audit
