// gpu_admission_request_duration_seconds: observed without a lock on the request path and moved
// into the exposition at each scrape; buckets, count and sum are Prometheus's (cumulative, le
// inclusive), nothing is lost between scrapes or when requests race a scrape.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "webhook/ops/metrics.h"

using gpu_admission::webhook::Metrics;

namespace {
// The value of one exposition line, e.g. series `..._bucket{endpoint="validate",le="0.001"}`.
double value_of(const std::string& text, const std::string& series) {
  const size_t at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 1));
}
std::string bucket(const char* endpoint, const char* le) {
  return std::string("gpu_admission_request_duration_seconds_bucket{endpoint=\"") + endpoint + "\",le=\"" + le + "\"}";
}
}  // namespace

TEST_CASE("metrics latency: buckets, count and sum follow the observations across scrapes", "[metrics]") {
  Metrics metrics;
  metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.00005);  // on a boundary: le is inclusive
  metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.0003);
  metrics.observe_request("validate", "CREATE", "Pod", "denied", 20.0);  // above the last bucket
  metrics.observe_request("mutate", "UPDATE", "Pod", "patched", 0.002);
  std::string text = metrics.serialize();
  CHECK(value_of(text, bucket("validate", "5e-05")) == 1);
  CHECK(value_of(text, bucket("validate", "0.0005")) == 2);
  CHECK(value_of(text, bucket("validate", "1")) == 2);
  CHECK(value_of(text, bucket("validate", "10")) == 2);
  CHECK(value_of(text, bucket("validate", "+Inf")) == 3);
  CHECK(value_of(text, "gpu_admission_request_duration_seconds_count{endpoint=\"validate\"}") == 3);
  CHECK(value_of(text, "gpu_admission_request_duration_seconds_sum{endpoint=\"validate\"}") ==
        Approx(20.00035).epsilon(1e-9));
  CHECK(value_of(text, bucket("mutate", "0.001")) == 0);
  CHECK(value_of(text, bucket("mutate", "0.0025")) == 1);

  // A second scrape adds what came since, on top of what the first one showed.
  metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.0001);
  text = metrics.serialize();
  CHECK(value_of(text, bucket("validate", "0.0001")) == 2);
  CHECK(value_of(text, "gpu_admission_request_duration_seconds_count{endpoint=\"validate\"}") == 4);
  CHECK(metrics.serialize() == text);  // nothing new: the same figures
}

TEST_CASE("metrics latency: observations racing scrapes are all counted", "[metrics]") {
  Metrics metrics;
  constexpr int kThreads = 4, kEach = 20000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) metrics.serialize();
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) metrics.observe_request("validate", "CREATE", "Pod", "allowed", 0.0002);
    });
  for (auto& w : workers) w.join();
  done = true;
  scraper.join();
  const std::string text = metrics.serialize();
  CHECK(value_of(text, bucket("validate", "0.00025")) == kThreads * kEach);
  CHECK(value_of(text, bucket("validate", "0.0001")) == 0);
  CHECK(value_of(text, "gpu_admission_request_duration_seconds_sum{endpoint=\"validate\"}") ==
        Approx(kThreads * kEach * 0.0002).epsilon(1e-6));
}
