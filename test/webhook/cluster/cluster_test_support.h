// Helpers for the cluster-state tests: objects in the shapes the API server sends, a
// ClusterState wired to a FakeApiServer with short timings, temporary directories and bounded
// waiting. Loopback only.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "test/fake_apiserver/fake_apiserver.h"
#include "webhook/cluster/cluster_state.h"

namespace cluster_test {

using namespace std::chrono_literals;
namespace cl = gpu_admission::webhook::cluster;

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/gpu-admission-cluster-XXXXXX";
    if (const char* made = ::mkdtemp(pattern)) path = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
};

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

inline Json namespace_object(const std::string& name, const Json& labels = Json::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

// A template (spec.spec.devices) or claim (spec.devices) asking for `count` full GPUs.
inline Json claim_object(bool is_template, const std::string& ns, const std::string& name, int count) {
  const Json devices = {{"requests", Json::array({{{"name", "gpu"},
                                                   {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", count}}}}})}};
  Json object = {{"metadata", {{"name", name}, {"namespace", ns}}}};
  if (is_template) object["spec"] = {{"spec", {{"devices", devices}}}};
  else object["spec"] = {{"devices", devices}};
  return object;
}

inline cl::KubeConfig config_for(const FakeApiServer& server) {
  cl::KubeConfig config;
  config.source = "fake API server";
  config.host = "127.0.0.1";
  config.port = server.port();
  config.ca_pem = server.ca_pem();
  config.token = server.token;
  return config;
}

// Starts `state` and waits until every resource is listed (false when either fails).
inline bool started_and_synced(cl::ClusterState& state) {
  std::string error;
  return state.start(error) && eventually([&] { return state.not_ready_reason().empty(); });
}

inline cl::ClusterOptions fast_options() {
  cl::ClusterOptions options;
  options.informer.initial_backoff = 50ms;
  options.informer.max_backoff = 400ms;
  options.informer.watch_timeout_seconds = 5;
  options.informer.page_size = 100;
  options.informer.request_timeout = 3s;
  options.informer.log_throttle = 0ms;
  options.publish_interval = 20ms;
  options.discovery_timeout = 3s;
  return options;
}

// The count of a request's first alternative, or -1 when the claim is not found.
inline long long first_count(const gpu_admission::policy::ClaimView* view) {
  if (view == nullptr || view->requests.empty() || view->requests[0].alternatives.empty()) return -1;
  return view->requests[0].alternatives[0].count;
}

inline std::string label_value(const gpu_admission::policy::LabelPairs* labels, const std::string& key) {
  if (labels == nullptr) return "<none>";
  for (const auto& [k, v] : *labels)
    if (k == key) return v;
  return "<unset>";
}

}  // namespace cluster_test
