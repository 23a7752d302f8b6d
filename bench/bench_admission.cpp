// Time and heap allocations per AdmissionReview: decode + mutate + validate + encode, through
// AdmissionService::handle exactly as the HTTPS server calls it (no network).
// Run: build/bench/gpu-admission-bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <execinfo.h>
#include <fcntl.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "bench/bench_reviews.h"
#include "test/webhook/cluster/cluster_test_support.h"
#include "webhook/admission/admission.h"
#include "webhook/cli/input_claims.h"
#include "webhook/io/default_policy.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/base64.h"

// GCC pairs the replaced operator new's malloc with the std::free below and warns wherever both
// inline into one caller; they do match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// A counting allocator: every operator new in the process bumps the counter. With
// GPU_ADMISSION_BENCH_ALLOC_TRACE=1 in the environment, the allocations of one steady-state review
// of each benchmark print their size and call stack to stderr (symbolize with addr2line, or read
// the function names backtrace_symbols_fd gives for exported symbols).
static std::atomic<uint64_t> g_allocations{0};
static thread_local bool t_tracing = false;
static void trace_allocation(size_t n) {
  t_tracing = false;  // backtrace may allocate on its first call
  void* frames[24];
  const int depth = backtrace(frames, 24);
  std::fprintf(stderr, "-- allocation of %zu bytes\n", n);
  backtrace_symbols_fd(frames, depth, 2);
  t_tracing = true;
}
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (t_tracing) trace_allocation(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace {

using namespace gpu_admission;

enum class PolicyKind { Default, Large };
enum class Review { TrainingPod, LargePod, Deployment };

webhook::PolicyHolder& holder(PolicyKind kind) {
  static webhook::PolicyHolder default_holder(webhook::load_policy_file("").policy);
  static webhook::PolicyHolder large_holder(webhook::load_policy_text(bench::large_policy_yaml(), "large").policy);
  return kind == PolicyKind::Default ? default_holder : large_holder;
}

const std::string& body(Review r) {
  static const std::string pod = bench::training_pod_review();
  static const std::string large = bench::large_pod_review();
  static const std::string deploy = bench::deployment_review();
  return r == Review::TrainingPod ? pod : r == Review::LargePod ? large : deploy;
}

// What /validate receives: the API server runs /mutate first, so a Pod arrives mutated (as the
// default policy mutates it, its claims resolved by `claims`). Workload templates are not
// mutated by /mutate.
std::string after_mutate(const std::string& review_text, const policy::ClaimResolver* claims = nullptr) {
  webhook::AdmissionService service(holder(PolicyKind::Default), nullptr, nullptr);
  service.set_claim_resolver(claims);
  Json review = Json::parse(review_text);
  Json response = Json::parse(service.handle(webhook::Endpoint::Mutate, review_text).body)["response"];
  if (!response.contains("patch")) return review_text;
  auto patch = webhook::base64_decode(response["patch"].get<std::string>());
  review["request"]["object"] = review["request"]["object"].patch(Json::parse(*patch));
  return review.dump();
}

const std::string& validate_body(Review r) {
  static const std::string pod = after_mutate(body(Review::TrainingPod));
  static const std::string large = after_mutate(body(Review::LargePod));
  return r == Review::TrainingPod ? pod : r == Review::LargePod ? large : body(r);
}

// Times `input` through `service` as the server's direct path calls it (the body padded where it
// lies, the previous reply's body handed back for its capacity), after a warm-up of the
// per-thread scratch (so steady-state allocations are counted), with the allocations per review
// and its size as counters.
void measure(benchmark::State& state, const webhook::AdmissionService& service, webhook::Endpoint endpoint,
             const std::string& input) {
  std::string padded = input;
  padded.reserve(input.size() + webhook::AdmissionService::kBodyPadding);
  const std::string_view body = padded;
  std::string spare;
  auto once = [&] {
    webhook::HttpReply reply = service.handle(endpoint, body, true, std::move(spare));
    benchmark::DoNotOptimize(reply.body.data());
    spare = std::move(reply.body);
  };
  for (int i = 0; i < 3; ++i) once();
  if (std::getenv("GPU_ADMISSION_BENCH_ALLOC_TRACE")) {
    std::fprintf(stderr, "== allocations of one review (%zu bytes)\n", input.size());
    t_tracing = true;
    once();
    t_tracing = false;
  }
  const uint64_t before = g_allocations.load();
  for (auto _ : state) once();
  state.counters["allocs_per_review"] =
      benchmark::Counter(static_cast<double>(g_allocations.load() - before) / state.iterations());
  state.counters["review_bytes"] = static_cast<double>(input.size());
}

void run(benchmark::State& state, webhook::Endpoint endpoint, Review review, PolicyKind policy) {
  webhook::AdmissionService service(holder(policy), nullptr, nullptr);
  const std::string& input = endpoint == webhook::Endpoint::Validate ? validate_body(review) : body(review);
  if (!holder(policy).get()) {
    state.SkipWithError("policy failed to load");
    return;
  }
  measure(state, service, endpoint, input);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
}

// The same with serve's metrics (told of the policy, as serve does) and logs at info, so that what
// recording a request costs (its series by tenant and dry_run, the latency tally) is timed and
// its allocations counted.
void BM_Validate_TrainingPod_MetricsAndLogs(benchmark::State& state) {
  static webhook::Metrics metrics;
  static webhook::Logger logger(webhook::LogLevel::Info, ::open("/dev/null", O_WRONLY | O_CLOEXEC));
  metrics.set_policy(*holder(PolicyKind::Default).get());
  webhook::AdmissionService service(holder(PolicyKind::Default), &metrics, &logger);
  measure(state, service, webhook::Endpoint::Validate, validate_body(Review::TrainingPod));
}

// DRA: the training pod (as /mutate left it) with two claim templates of one MIG slice each,
// resolved from memory as serve resolves them from its cluster state.
struct TwoClaims {
  webhook::InputClaims claims;
  std::string review;
  TwoClaims() {
    for (const char* name : {"slice-a", "slice-b"}) {
      claims.add(Json::parse(std::string(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate",
        "metadata":{"name":")") + name + R"(","namespace":"research"},"spec":{"spec":{"devices":{"requests":[
        {"name":"mig","exactly":{"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{"expression":
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}]}}}})"), "research");
    }
    Json r = Json::parse(validate_body(Review::TrainingPod));
    Json& spec = r["request"]["object"]["spec"];
    spec["resourceClaims"] = Json::parse(R"([{"name":"a","resourceClaimTemplateName":"slice-a"},
                                             {"name":"b","resourceClaimTemplateName":"slice-b"}])");
    spec["containers"][0]["resources"]["claims"] = Json::parse(R"([{"name":"a"},{"name":"b"}])");
    review = r.dump();
  }
};

void BM_Validate_TrainingPod_TwoClaims(benchmark::State& state) {
  static TwoClaims input;
  webhook::AdmissionService service(holder(PolicyKind::Default), nullptr, nullptr);
  service.set_claim_resolver(&input.claims);
  measure(state, service, webhook::Endpoint::Validate, input.review);
}

// Cluster state (what `bench/load.sh` sends with CLUSTER=1): (f) a GPU pod of tenant
// platform whose GPUs come from two ResourceClaims named by resourceClaimName, as /mutate left
// it, its claims resolved from memory (serve resolves them from its cluster state: a hit costs
// a lookup, see bench_cluster.cpp); (g) /mutate of a pod of five containers without GPUs in the
// same namespace, where hide-gpus writes an env entry into every container.
struct DraPod {
  webhook::InputClaims claims;
  std::string review;          // as /mutate receives it
  std::string mutated_review;  // as /validate receives it
  DraPod() {
    for (const Json& claim : bench::dra_pod_claims()) claims.add(claim, bench::kDraNamespace);
    review = bench::dra_pod_review();
    mutated_review = after_mutate(review, &claims);
  }
};

DraPod& dra_pod() {
  static DraPod instance;
  return instance;
}

const std::string& cpu_pod() {
  static const std::string review = bench::cpu_pod_review();
  return review;
}

void run_with(benchmark::State& state, webhook::Endpoint endpoint, const std::string& input,
              const policy::ClaimResolver* claims) {
  webhook::AdmissionService service(holder(PolicyKind::Default), nullptr, nullptr);
  service.set_claim_resolver(claims);
  // The answer these reviews are made for: (f) allowed, (g) a patch (load.sh checks its entries).
  const std::string first = service.handle(endpoint, input).body;
  const char* expected = endpoint == webhook::Endpoint::Validate ? "\"allowed\":true" : "\"patch\":";
  if (first.find(expected) == std::string::npos) {
    state.SkipWithError(("unexpected answer: " + first.substr(0, 300)).c_str());
    return;
  }
  measure(state, service, endpoint, input);
}

void BM_Validate_DraPod_TwoClusterClaims(benchmark::State& s) {
  run_with(s, webhook::Endpoint::Validate, dra_pod().mutated_review, &dra_pod().claims);
}

// (f) through serve's own resolver: a ClusterState synced from the tests' fake API server (the
// pod's namespace among 1,000, its two claims among 10,000), so that what a cache hit costs in
// serve (the lookup key, the sharded index, the lookup counter, the namespace's labels) is timed
// and its allocations counted.
struct SyncedClusterState {
  cluster_test::FakeApiServer server;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error};
  std::unique_ptr<webhook::cluster::ClusterState> state;
  std::string error;  // why it is not usable
  SyncedClusterState() {
    constexpr int kNamespaces = 1'000, kClaims = 10'000;
    for (int i = 0; i < kNamespaces; ++i) server.put("namespaces", bench::cluster_namespace(i, kNamespaces), false);
    for (const Json& claim : bench::dra_pod_claims()) server.put("resourceclaims", claim, false);
    for (int i = 0; i < kClaims; ++i) server.put("resourceclaims", bench::cluster_claim(i, kNamespaces), false);
    if (!server.start()) {
      error = "the fake API server did not start";
      return;
    }
    state = std::make_unique<webhook::cluster::ClusterState>(cluster_test::config_for(server),
                                                              webhook::cluster::ClusterOptions{}, &metrics, &logger);
    if (!state->start(error)) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(error = state->not_ready_reason()).empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    state->publish_now();
  }
};

void BM_Validate_DraPod_ClusterState(benchmark::State& s) {
  static SyncedClusterState cluster;
  if (!cluster.error.empty()) {
    s.SkipWithError(("cluster state: " + cluster.error).c_str());
    return;
  }
  webhook::AdmissionService service(holder(PolicyKind::Default), nullptr, nullptr);
  service.set_facts_provider(cluster.state.get());  // as serve sets it up
  measure(s, service, webhook::Endpoint::Validate, dra_pod().mutated_review);
}
void BM_Mutate_CpuPod_HideGpusEveryContainer(benchmark::State& s) {
  run_with(s, webhook::Endpoint::Mutate, cpu_pod(), nullptr);
}

void BM_Validate_TrainingPod_DefaultPolicy(benchmark::State& s) { run(s, webhook::Endpoint::Validate, Review::TrainingPod, PolicyKind::Default); }
void BM_Mutate_TrainingPod_DefaultPolicy(benchmark::State& s) { run(s, webhook::Endpoint::Mutate, Review::TrainingPod, PolicyKind::Default); }
void BM_Validate_LargePod_DefaultPolicy(benchmark::State& s) { run(s, webhook::Endpoint::Validate, Review::LargePod, PolicyKind::Default); }
void BM_Validate_Deployment_DefaultPolicy(benchmark::State& s) { run(s, webhook::Endpoint::Validate, Review::Deployment, PolicyKind::Default); }
void BM_Validate_TrainingPod_LargePolicy(benchmark::State& s) { run(s, webhook::Endpoint::Validate, Review::TrainingPod, PolicyKind::Large); }
void BM_Mutate_TrainingPod_LargePolicy(benchmark::State& s) { run(s, webhook::Endpoint::Mutate, Review::TrainingPod, PolicyKind::Large); }
void BM_Validate_LargePod_LargePolicy(benchmark::State& s) { run(s, webhook::Endpoint::Validate, Review::LargePod, PolicyKind::Large); }

}  // namespace

BENCHMARK(BM_Validate_TrainingPod_DefaultPolicy);
BENCHMARK(BM_Validate_TrainingPod_MetricsAndLogs);
BENCHMARK(BM_Validate_TrainingPod_TwoClaims);
BENCHMARK(BM_Mutate_TrainingPod_DefaultPolicy);
BENCHMARK(BM_Validate_LargePod_DefaultPolicy);
BENCHMARK(BM_Validate_Deployment_DefaultPolicy);
BENCHMARK(BM_Validate_TrainingPod_LargePolicy);
BENCHMARK(BM_Mutate_TrainingPod_LargePolicy);
BENCHMARK(BM_Validate_LargePod_LargePolicy);
BENCHMARK(BM_Validate_DraPod_TwoClusterClaims);
BENCHMARK(BM_Validate_DraPod_ClusterState);
BENCHMARK(BM_Mutate_CpuPod_HideGpusEveryContainer);

// `--write-reviews DIR` writes the review bodies (for bench/load.sh) instead of benchmarking.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-reviews") {
    // The DRA pod's claims as a List, for `gpu-admission check dra-claims.json dra-pod-mutated.json`.
    const std::string dra_claims = Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", bench::dra_pod_claims()}}.dump(2);
    const std::pair<const char*, const std::string*> files[] = {
        {"training-pod.json", &body(Review::TrainingPod)},
        {"training-pod-mutated.json", &validate_body(Review::TrainingPod)},
        {"large-pod.json", &body(Review::LargePod)},
        {"deployment.json", &body(Review::Deployment)},
        {"dra-pod.json", &dra_pod().review},
        {"dra-pod-mutated.json", &dra_pod().mutated_review},
        {"dra-claims.json", &dra_claims},
        {"cpu-pod.json", &cpu_pod()}};
    for (const auto& [name, text] : files) {
      std::string path = std::string(argv[2]) + "/" + name;
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f || std::fwrite(text->data(), 1, text->size(), f) != text->size()) {
        std::perror(path.c_str());
        return 1;
      }
      std::fclose(f);
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
