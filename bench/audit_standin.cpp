// A stand-in Kubernetes API server for bench/audit.sh: generates from a seed a GPU cluster of
// --pods pods with their owners (audit_cluster.h: training and inference workloads of 20 tenants,
// a tenth of the pods violating one rule of bench/audit-policy.yaml) and serves it with the
// tests' fake API server (test/fake_apiserver/fake_apiserver.h: HTTPS with a bearer token,
// discovery, paged lists in etcd's order, GET /fake/counters for what it served), every list
// item held as the JSON text the API server sends. Before it says "ready" on stdout it writes a
// kubeconfig for itself, the independent count of what it injected (--expected-out: per tenant and rule the
// violating top-level objects and pods, per namespace the violating objects, the objects judged
// per kind, each violating object), and optionally a sample of its objects for `gpu-admission
// check` (--samples-out DIR: one `kind: List` file per shape and violation, with the expected
// rule in expected-rules.json). Serves until SIGTERM or SIGINT, then prints its counters.
//
//   gpu-admission-audit-standin --kubeconfig-out FILE [--pods 150000] [--seed 1] [--port 0]
//                               [--expected-out FILE] [--samples-out DIR]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/audit_cluster.h"
#include "test/fake_apiserver/fake_apiserver.h"

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

// Hands the generated objects to `server` (their texts are moved, not copied: 1.4 GB at 150,000
// pods), adding the resources it does not serve yet (kubeflow.org's). Namespaces go in as trees,
// so that a GET of one (audit --namespace) answers it with apiVersion and kind; everything else
// as the text a list item is. False, with `error`, when an object cannot be stored as one.
bool serve_cluster(audit::GeneratedCluster& cluster, cluster_test::FakeApiServer& server, std::string& error) {
  const auto served = server.resources();
  for (audit::Resource& r : cluster.resources) {
    const cluster_test::ResourceType type = {r.group, r.version, r.plural, r.kind, r.namespaced};
    if (std::none_of(served.begin(), served.end(), [&](const cluster_test::ResourceType& s) {
          return s.group == type.group && s.version == type.version && s.resource == type.resource;
        }))
      server.add_resource(type);
    for (audit::StoredObject& o : r.items) {
      // The fake stamps a resourceVersion into a text only where the object starts with its metadata.
      if (o.text.rfind(R"({"metadata":{")", 0) != 0)
        return error = type.name() + " " + o.name + " does not start with its metadata", false;
      const bool stored = r.plural == "namespaces"
                              ? server.put(type.name(), Json::parse(o.text), false)
                              : server.put_raw(type.name(), o.namespace_name, o.name, std::move(o.text), false);
      if (!stored) return error = "cannot store " + type.name() + " " + o.name, false;
    }
    std::vector<audit::StoredObject>().swap(r.items);
  }
  return true;
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
  audit::GeneratedCluster cluster = audit::generate_cluster(static_cast<long>(flags.pods), static_cast<uint64_t>(flags.seed));
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

  cluster_test::FakeApiServer server;
  server.token = "audit-standin-token";
  server.no_delay = true;  // as its own server had it, and as the real one writes
  std::string error;
  if (!serve_cluster(cluster, server, error)) {
    std::fprintf(stderr, "audit-standin: %s\n", error.c_str());
    return 1;
  }
  const double stored = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() - generated;
  if (!server.start(static_cast<int>(flags.port))) {
    std::fprintf(stderr, "audit-standin: cannot listen on 127.0.0.1:%lld\n", flags.port);
    return 1;
  }
  server.write_kubeconfig(flags.kubeconfig);
  const auto& pods = sizes.value("pods", Json::object());
  std::fprintf(stderr,
               "audit-standin: %s serving %lld pods (%zu bytes, %.0f bytes per pod) and their owners, %.1f MB in all, "
               "%ld violating pods in %zu violating objects; generated in %.1f s, stored in %.1f s; kubeconfig %s\n",
               server.server_url().c_str(), pods.value("objects", 0LL), pods.value("bytes", size_t{0}),
               pods.value("objects", 0LL) > 0 ? static_cast<double>(pods.value("bytes", size_t{0})) / pods.value("objects", 1LL) : 0.0,
               static_cast<double>(total_bytes) / 1e6, expected["violatingPods"].get<long>(),
               expected["objects"].size(), generated, stored, flags.kubeconfig.c_str());
  std::printf("ready\n");
  std::fflush(stdout);

  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "audit-standin: %s: %s\n", received == SIGTERM ? "SIGTERM" : "SIGINT", server.counters_json().c_str());
  server.stop();
  return 0;
}
