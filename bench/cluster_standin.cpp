// A stand-in Kubernetes API server for bench/load.sh's cluster-state runs: the tests' FakeApiServer
// (test/fake_apiserver/fake_apiserver.h: HTTPS on 127.0.0.1, bearer token, discovery of
// resource.k8s.io/v1, paged lists with limit/continue, watches with bookmarks) holding
// --objects objects: --namespaces Namespaces (half ml-team-NNN of tenant platform, half
// research-team-NNN of tenant research, with tenant labels), the two ResourceClaims of the
// benchmark's DRA pod (bench_reviews.h), and ResourceClaims spread over the namespaces for the
// rest (whole GPUs of gpu.nvidia.com with counts 1 to 8 in ml-team namespaces, MIG slices in
// research-team ones). Writes a kubeconfig for it, prints "ready" on stdout once listening, and
// serves until SIGTERM or SIGINT.
//
//   gpu-admission-cluster-standin --kubeconfig-out FILE [--objects 100000] [--namespaces 1000] [--port 0]
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_reviews.h"
#include "test/fake_apiserver/fake_apiserver.h"

namespace {

using gpu_admission::Json;
namespace bench = gpu_admission::bench;

constexpr const char* kUsage =
    "usage: gpu-admission-cluster-standin --kubeconfig-out FILE [--objects 100000] [--namespaces 1000] [--port 0]\n";

int usage(const char* message) {
  std::fprintf(stderr, "cluster-standin: %s\n%s", message, kUsage);
  return 2;
}

bool parse_int(const char* text, long min, long max, long& out) {
  char* end = nullptr;
  out = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && out >= min && out <= max;
}

}  // namespace

int main(int argc, char** argv) {
  long objects = 100'000, namespaces = 1'000, port = 0;
  std::string kubeconfig;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") return std::fputs(kUsage, stdout), 0;
    if (i + 1 >= argc) return usage(("missing value for " + flag).c_str());
    const char* value = argv[++i];
    if (flag == "--objects") {
      if (!parse_int(value, 3, 10'000'000, objects)) return usage("--objects must be a number of at least 3");
    } else if (flag == "--namespaces") {
      if (!parse_int(value, 1, 1'000'000, namespaces)) return usage("--namespaces must be a positive number");
    } else if (flag == "--port") {
      if (!parse_int(value, 0, 65535, port)) return usage("--port must be 0 to 65535");
    } else if (flag == "--kubeconfig-out") {
      kubeconfig = value;
    } else {
      return usage(("unknown flag " + flag).c_str());
    }
  }
  if (kubeconfig.empty()) return usage("--kubeconfig-out is required");
  // The benchmark pod's namespace is one of them; the claims are what is left.
  namespaces = std::min(namespaces, objects - 2);
  const long claims = objects - namespaces - 2;

  // Only the main thread takes these (sigwait below); the server's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const auto started = std::chrono::steady_clock::now();
  cluster_test::FakeApiServer server;
  server.bookmark_ms = 30'000;  // the watches stay quiet once synced (the informers need no bookmarks here)
  // Objects go in unannounced: no watch event is kept for them (the informers list them), so the
  // watches have nothing to scan and the stand-in stays idle once they are synced.
  bool has_dra_namespace = false;
  for (long i = 0; i < namespaces; ++i) {
    Json ns = bench::cluster_namespace(static_cast<int>(i), static_cast<int>(namespaces));
    has_dra_namespace = has_dra_namespace || ns["metadata"]["name"] == bench::kDraNamespace;
    server.put("namespaces", std::move(ns), false);
  }
  long namespace_objects = namespaces;
  if (!has_dra_namespace) {  // fewer namespaces than ml-team-042 needs: add it (in place of a claim)
    server.put("namespaces", {{"metadata", {{"name", bench::kDraNamespace}, {"labels", {{"gpu-admission.io/tenant", "platform"}}}}}}, false);
    ++namespace_objects;
  }
  for (const Json& claim : bench::dra_pod_claims()) server.put("resourceclaims", claim, false);
  const long background = claims - (namespace_objects - namespaces);
  for (long i = 0; i < background; ++i)
    server.put("resourceclaims", bench::cluster_claim(static_cast<int>(i), static_cast<int>(namespaces)), false);
  if (!server.start(static_cast<int>(port))) {
    std::fprintf(stderr, "cluster-standin: cannot listen on 127.0.0.1:%ld\n", port);
    return 1;
  }
  server.write_kubeconfig(kubeconfig);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr,
               "cluster-standin: %s serving %ld objects (%ld namespaces, %ld resourceclaims of which 2 are the "
               "benchmark pod's %s/llm-finetune-gpus-{a,b}), built in %.1f s; kubeconfig %s\n",
               server.server_url().c_str(), namespace_objects + background + 2, namespace_objects, background + 2,
               bench::kDraNamespace, seconds, kubeconfig.c_str());
  std::printf("ready\n");
  std::fflush(stdout);

  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "cluster-standin: %s: served %d list pages (%d lists), %d watches, %d GETs, %d unauthorized\n",
               received == SIGTERM ? "SIGTERM" : "SIGINT", server.counters.list_pages.load(),
               server.counters.lists.load(), server.counters.watches.load(), server.counters.gets.load(),
               server.counters.unauthorized.load());
  server.stop();
  return 0;
}
