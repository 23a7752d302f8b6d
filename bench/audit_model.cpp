// The tables of the audit benchmark's cluster (audit_model.h), as bench/audit-policy.yaml
// declares them, and the seeded helpers.
#include "bench/audit_model.h"

#include <ctime>

namespace gpu_admission::bench::audit {
namespace {

constexpr int kH100 = 0, kA100 = 1, kL40s = 2, kMig = 3;

std::vector<Tenant> build_tenants() {
  std::vector<Tenant> out;
  auto add = [&](const char* name, TenantKind kind, const char* cost_center, bool by_label) {
    Tenant t{name, kind, cost_center, by_label};
    switch (kind) {
      case TenantKind::Training:
        t.cap = 8, t.default_pool = kH100, t.foreign_pool = kL40s;
        break;
      case TenantKind::Inference:
        t.cap = 4, t.default_pool = kL40s, t.foreign_pool = kH100;
        break;
      case TenantKind::Research:
        t.cap = 1, t.default_pool = kMig, t.foreign_pool = kL40s;
        break;
    }
    out.push_back(std::move(t));
  };
  using K = TenantKind;
  add("nlp", K::Training, "cc-1001", false);
  add("vision", K::Training, "cc-1002", false);
  add("speech", K::Training, "cc-1003", false);
  add("robotics", K::Training, "cc-1004", false);
  add("genomics", K::Training, "cc-1005", true);
  add("climate", K::Training, "cc-1006", true);
  add("recsys", K::Training, "cc-1007", false);
  add("multimodal", K::Training, "cc-1008", false);
  add("search", K::Inference, "cc-2001", false);
  add("ads", K::Inference, "cc-2002", false);
  add("assist", K::Inference, "cc-2003", false);
  add("translate", K::Inference, "cc-2004", false);
  add("moderation", K::Inference, "cc-2005", false);
  add("voice", K::Inference, "cc-2006", false);
  add("maps", K::Inference, "cc-2007", true);
  add("photos", K::Inference, "cc-2008", true);
  add("students", K::Research, "cc-3001", false);
  add("fellows", K::Research, "cc-3002", false);
  add("interns", K::Research, "cc-3003", true);
  add("hackathon", K::Research, "cc-3004", false);
  return out;
}

std::vector<Namespace> build_namespaces() {
  std::vector<Namespace> out;
  const auto& all = tenants();
  for (size_t i = 0; i < all.size(); ++i) {
    const int tenant = static_cast<int>(i);
    out.push_back({all[i].name + "-train", tenant, NamespaceRole::Train});
    out.push_back({all[i].name + "-serve", tenant, NamespaceRole::Serve});
    out.push_back({all[i].name + "-dev", tenant, NamespaceRole::Dev});
  }
  for (const char* name : {"ingress-nginx", "argocd", "platform-tools"}) out.push_back({name, -1, NamespaceRole::Platform});
  for (const char* name : {"kube-system", "gpu-operator", "monitoring"}) out.push_back({name, -1, NamespaceRole::System});
  return out;
}

}  // namespace

std::string_view rule_of(Violation v) {
  switch (v) {
    case Violation::Privileged: return "privileged";
    case Violation::HostNetwork: return "host-namespaces";
    case Violation::DeviceEnv: return "gpu-device-access";
    case Violation::GpuCap: return "gpu-cap";
    case Violation::Tolerations: return "gpu-tolerations";
    case Violation::ForeignPool: return "tenant-pool";
    case Violation::None: break;
  }
  return "";
}

const std::vector<Pool>& pools() {
  static const std::vector<Pool> table = {
      {"h100-train", "NVIDIA-H100-80GB-HBM3", true, false, 0.40},
      {"a100-train", "NVIDIA-A100-SXM4-80GB", false, false, 0.20},
      {"l40s-infer", "NVIDIA-L40S", false, false, 0.30},
      {"a100-mig", "NVIDIA-A100-SXM4-80GB", true, true, 0.10},
  };
  return table;
}

const std::vector<Tenant>& tenants() {
  static const std::vector<Tenant> table = build_tenants();
  return table;
}

const std::vector<Namespace>& namespaces() {
  static const std::vector<Namespace> table = build_namespaces();
  return table;
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int Rng::between(int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1));
}

bool Rng::chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

std::string Rng::hex(size_t digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(digits);
  uint64_t bits = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (i % 16 == 0) bits = next();
    out += kDigits[bits & 15];
    bits >>= 4;
  }
  return out;
}

std::string Rng::uid() {
  std::string h = hex(32);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" + h.substr(17, 3) + "-" + h.substr(20, 12);
}

std::string Rng::suffix(size_t n) {
  // The alphabet of the API server's generateName (no vowels, no 0, 1, 3).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += kAlphabet[next() % (sizeof kAlphabet - 1)];
  return out;
}

std::string rfc3339(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace gpu_admission::bench::audit
