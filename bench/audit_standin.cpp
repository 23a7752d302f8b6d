// A stand-in Kubernetes API server for bench/audit.sh: generates from a seed a GPU cluster of
// --pods pods with their owners (audit_cluster.h: training and inference workloads of 20 tenants,
// a tenth of the pods violating one rule of bench/audit-policy.yaml), holds every list item as
// the JSON text the API server sends, and serves discovery and paged lists over HTTPS with a
// bearer token (audit_apiserver.h). Before it says "ready" on stdout it writes a kubeconfig for
// itself, the independent count of what it injected (--expected-out: per tenant and rule the
// violating top-level objects and pods, per namespace the violating objects, the objects judged
// per kind, each violating object), and optionally a sample of its objects for `gpu-admission
// check` (--samples-out DIR: one `kind: List` file per shape and violation, with the expected
// rule in expected-rules.json). Serves until SIGTERM or SIGINT, then prints its counters.
//
//   gpu-admission-audit-standin --kubeconfig-out FILE [--pods 150000] [--seed 1] [--port 0]
//                               [--expected-out FILE] [--samples-out DIR]
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/audit_apiserver.h"
#include "bench/audit_cluster.h"

namespace {

namespace audit = gpu_admission::bench::audit;
using gpu_admission::Json;

constexpr const char* kUsage =
    "usage: gpu-admission-audit-standin --kubeconfig-out FILE [--pods 150000] [--seed 1] [--port 0]\n"
    "                                   [--expected-out FILE] [--samples-out DIR]\n";

int usage(const std::string& message) {
  std::fprintf(stderr, "audit-standin: %s\n%s", message.c_str(), kUsage);
  return 2;
}

bool parse_number(const char* text, long long min, long long max, long long& out) {
  char* end = nullptr;
  out = std::strtoll(text, &end, 10);
  return end != text && *end == '\0' && out >= min && out <= max;
}

struct Flags {
  long long pods = 150'000, seed = 1, port = 0;
  std::string kubeconfig, expected, samples;
};

std::string read_flags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return "missing value for " + flag;
    const char* value = argv[++i];
    if (flag == "--pods") {
      if (!parse_number(value, 1, 10'000'000, f.pods)) return "--pods must be a number from 1 to 10,000,000";
    } else if (flag == "--seed") {
      if (!parse_number(value, 0, (1LL << 62), f.seed)) return "--seed must be a non-negative number";
    } else if (flag == "--port") {
      if (!parse_number(value, 0, 65535, f.port)) return "--port must be 0 to 65535";
    } else if (flag == "--kubeconfig-out") {
      f.kubeconfig = value;
    } else if (flag == "--expected-out") {
      f.expected = value;
    } else if (flag == "--samples-out") {
      f.samples = value;
    } else {
      return "unknown flag " + flag;
    }
  }
  return f.kubeconfig.empty() ? "--kubeconfig-out is required" : "";
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

// One `kind: List` file per sample, and expected-rules.json: file -> the rule it must violate ("" none).
bool write_samples(const Json& samples, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  Json rules = Json::object();
  for (const Json& s : samples) {
    const std::string file = s["name"].get<std::string>() + ".json";
    if (!write_file(dir + "/" + file, Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", s["objects"]}}.dump(2)))
      return false;
    rules[file] = s["expect"];
  }
  return write_file(dir + "/expected-rules.json", rules.dump(2) + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") return std::fputs(kUsage, stdout), 0;
  Flags flags;
  if (const std::string error = read_flags(argc, argv, flags); !error.empty()) return usage(error);

  // Only the main thread takes these (sigwait below); the server's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const auto started = std::chrono::steady_clock::now();
  const audit::GeneratedCluster cluster = audit::generate_cluster(static_cast<long>(flags.pods), static_cast<uint64_t>(flags.seed));
  const double generated = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  Json expected = cluster.expected;
  expected["seed"] = flags.seed;
  Json sizes = Json::object();
  size_t total_bytes = 0;
  for (const audit::Resource& r : cluster.resources) {
    if (r.items.empty()) continue;
    sizes[r.plural] = {{"objects", r.items.size()}, {"bytes", r.bytes}};
    total_bytes += r.bytes;
  }
  expected["stored"] = sizes;
  if (!flags.expected.empty() && !write_file(flags.expected, expected.dump(2) + "\n"))
    return usage("cannot write " + flags.expected);
  if (!flags.samples.empty() && !write_samples(cluster.samples, flags.samples))
    return usage("cannot write the samples into " + flags.samples);

  audit::AuditApiServer server(cluster, "audit-standin-token");
  std::string error;
  if (!server.start(static_cast<int>(flags.port), error) || !server.write_kubeconfig(flags.kubeconfig, error)) {
    std::fprintf(stderr, "audit-standin: %s\n", error.c_str());
    return 1;
  }
  const auto& pods = sizes.value("pods", Json::object());
  std::fprintf(stderr,
               "audit-standin: %s serving %lld pods (%zu bytes, %.0f bytes per pod) and their owners, %.1f MB in all, "
               "%ld violating pods in %zu violating objects; generated in %.1f s; kubeconfig %s\n",
               server.url().c_str(), pods.value("objects", 0LL), pods.value("bytes", size_t{0}),
               pods.value("objects", 0LL) > 0 ? static_cast<double>(pods.value("bytes", size_t{0})) / pods.value("objects", 1LL) : 0.0,
               static_cast<double>(total_bytes) / 1e6, expected["violatingPods"].get<long>(),
               expected["objects"].size(), generated, flags.kubeconfig.c_str());
  std::printf("ready\n");
  std::fflush(stdout);

  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "audit-standin: %s: %s\n", received == SIGTERM ? "SIGTERM" : "SIGINT", server.counters_json().c_str());
  server.stop();
  return 0;
}
