// Cluster-state lookups on the request path: find() on a ShardedIndex holding 100,000 compact
// claims (what ClusterState::find does on a hit), namespace-label lookups on 100,000 namespaces,
// and the memory each cached claim costs (entry bytes plus its share of the published and
// writer-side maps, reported as counters).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "webhook/cluster/cluster_objects.h"
#include "webhook/cluster/object_index.h"

namespace cl = gpu_admission::webhook::cluster;

namespace {

constexpr int kObjects = 100'000;

std::string claim_json(int i) {
  return R"({"apiVersion":"resource.k8s.io/v1","metadata":{"name":"claim-)" + std::to_string(i) +
         R"(","namespace":"team-)" + std::to_string(i % 500) +
         R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2,)"
         R"("selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}]}}})";
}

std::string key(int i) { return "team-" + std::to_string(i % 500) + "/claim-" + std::to_string(i); }

struct ClaimCache {
  cl::ShardedIndex<cl::ClaimEntry> index;
  size_t entry_bytes = 0;
  ClaimCache() {
    simdjson::dom::parser parser;
    for (int i = 0; i < kObjects; ++i) {
      const std::string text = claim_json(i);
      auto entry = cl::make_claim_entry(parser.parse(text).value(), gpu_admission::policy::ClaimKind::Claim,
                                        "resource.k8s.io/v1");
      entry_bytes += cl::entry_bytes(*entry);
      index.upsert(key(i), std::move(entry));
    }
    index.publish();
  }
};

ClaimCache& cache() {
  static ClaimCache instance;
  return instance;
}

void BM_ClaimLookupHit(benchmark::State& state) {
  auto& c = cache();
  std::vector<std::string> keys;
  for (int i = 0; i < 1024; ++i) keys.push_back(key((i * 7919) % kObjects));
  size_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(c.index.find(keys[n++ & 1023]));
  // Per object: the compact entry, its shared_ptr control block, and two map nodes (writer copy
  // and published copy) with their keys (about 64 bytes each with libstdc++).
  const double per_object = static_cast<double>(c.entry_bytes) / kObjects + 16 + 2 * (64 + key(kObjects / 2).size());
  state.counters["bytes_per_claim"] = benchmark::Counter(per_object, benchmark::Counter::kAvgThreads);
  state.counters["objects"] = benchmark::Counter(kObjects, benchmark::Counter::kAvgThreads);
}
BENCHMARK(BM_ClaimLookupHit)->ThreadRange(1, 4);

void BM_ClaimLookupMiss(benchmark::State& state) {
  auto& c = cache();
  for (auto _ : state) benchmark::DoNotOptimize(c.index.find("team-1/not-there"));
}
BENCHMARK(BM_ClaimLookupMiss);

void BM_NamespaceLabels(benchmark::State& state) {
  static cl::ShardedIndex<cl::NamespaceEntry> index;
  static bool filled = [] {
    for (int i = 0; i < kObjects; ++i) {
      auto entry = std::make_shared<cl::NamespaceEntry>();
      entry->labels = {{"kubernetes.io/metadata.name", "ns-" + std::to_string(i)}, {"tenant", "t" + std::to_string(i % 50)}};
      index.upsert("ns-" + std::to_string(i), std::move(entry));
    }
    index.publish();
    return true;
  }();
  benchmark::DoNotOptimize(filled);
  size_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(index.find("ns-" + std::to_string(n++ % kObjects)));
}
BENCHMARK(BM_NamespaceLabels);

}  // namespace
