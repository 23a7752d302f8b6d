// ClusterState against the fake API server: paged initial lists, watches (relabelled
// namespaces, created and deleted claims), the GET fallback for a template created just before
// its pod, 410 Gone and relists, cut watches, slow responses, token rotation, and the API server
// going away (serving continues on the last known state) and coming back.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "cluster_test_support.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

using namespace cluster_test;
using gpu_admission::policy::ClaimKind;
using gpu_admission::webhook::Logger;
using gpu_admission::webhook::LogLevel;
using gpu_admission::webhook::Metrics;

namespace {

bool has_metric(const Metrics& metrics, const std::string& line) {
  return metrics.serialize().find(line) != std::string::npos;
}

}  // namespace

TEST_CASE("cluster state: paged initial list, watch updates, GET fallback, deletion", "[cluster]") {
  FakeApiServer server;
  for (int i = 0; i < 250; ++i) server.put("namespaces", namespace_object("ns-" + std::to_string(i), {{"n", std::to_string(i)}}));
  server.put("namespaces", namespace_object("team-a", {{"tenant", "a"}}));
  server.put("resourceclaimtemplates", claim_object(true, "team-a", "two-gpus", 2));
  server.put("resourceclaims", claim_object(false, "team-a", "shared", 3));
  REQUIRE(server.start());

  Metrics metrics;
  Logger logger(LogLevel::Error);
  cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
  REQUIRE(started_and_synced(state));
  state.publish_now();
  CHECK(state.claims_version() == "v1");  // the newest of v1beta1, v1, v1beta2
  CHECK(server.counters.list_pages >= 3 + 2);  // 251 namespaces in pages of 100
  CHECK(state.counts().namespaces == 251);
  CHECK(label_value(state.labels_of("team-a"), "tenant") == "a");
  CHECK(label_value(state.labels_of("ns-249"), "n") == "249");
  CHECK(first_count(state.find(ClaimKind::Template, "team-a", "two-gpus")) == 2);
  CHECK(first_count(state.find(ClaimKind::Claim, "team-a", "shared")) == 3);
  CHECK(state.find(ClaimKind::Template, "team-a", "two-gpus")->api_version == "resource.k8s.io/v1");
  CHECK(server.counters.gets == 0);
  // A namespace missing from the cache is asked for once (it may have been created a moment
  // ago); absent, it is remembered as such for a while.
  CHECK(state.labels_of("nowhere") == nullptr);
  CHECK(state.labels_of("nowhere") == nullptr);
  CHECK(server.counters.gets == 1);
  server.put("namespaces", namespace_object("just-made", {{"tenant", "c"}}), false);
  CHECK(label_value(state.labels_of("just-made"), "tenant") == "c");
  CHECK(label_value(state.labels_of("just-made"), "tenant") == "c");
  CHECK(server.counters.gets == 2);

  // A namespace relabelled, a claim created: the watch delivers both.
  server.put("namespaces", namespace_object("team-a", {{"tenant", "b"}}));
  server.put("resourceclaims", claim_object(false, "team-a", "new", 1));
  CHECK(eventually([&] { return label_value(state.labels_of("team-a"), "tenant") == "b"; }));
  CHECK(eventually([&] { return first_count(state.find(ClaimKind::Claim, "team-a", "new")) == 1; }));

  // A template the watch has not delivered yet: one GET, cached; then hits. (The lookups above
  // may have fetched "new" before its watch event came, so GETs are counted from here.)
  const auto gets_before = server.counters.gets.load();
  server.put("resourceclaimtemplates", claim_object(true, "team-a", "just-made", 4), false);
  CHECK(first_count(state.find(ClaimKind::Template, "team-a", "just-made")) == 4);
  CHECK(server.counters.gets == gets_before + 1);
  CHECK(first_count(state.find(ClaimKind::Template, "team-a", "just-made")) == 4);
  CHECK(server.counters.gets == gets_before + 1);
  // Absent after the GET: not found.
  CHECK(state.find(ClaimKind::Template, "team-a", "never") == nullptr);
  CHECK(server.counters.gets == gets_before + 2);

  server.remove("resourceclaims", "team-a", "shared");
  CHECK(eventually([&] {
    state.publish_now();
    return server.counters.gets > gets_before + 2 || state.counts().claims == 1;
  }));
  CHECK(eventually([&] { return state.find(ClaimKind::Claim, "team-a", "shared") == nullptr; }));

  state.publish_now();
  CHECK(has_metric(metrics, "gpu_admission_cluster_objects{resource=\"namespaces\"} 252"));  // and just-made
  CHECK(has_metric(metrics, "gpu_admission_cluster_synced{resource=\"resourceclaimtemplates\"} 1"));
  CHECK(has_metric(metrics, "gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"fetched\"} 1"));
  CHECK(has_metric(metrics, "gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"absent\"} 1"));
  CHECK(has_metric(metrics, "gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"hit\"}"));
  state.stop();
}

// A hit builds its "namespace/name" key in place up to the longest valid names (63 + 1 + 253
// characters) and on the heap beyond: both find exactly the object named, without a GET.
TEST_CASE("cluster state: cached claims are found whatever the length of their names", "[cluster]") {
  FakeApiServer server;
  const std::vector<std::pair<std::string, std::string>> names = {
      {"a", "b"},
      {"a", "bc"},
      {"ab", "c"},
      {std::string(63, 'n'), std::string(253, 'c')},
      {std::string(63, 'n'), std::string(252, 'c')},
      {std::string(62, 'n'), std::string(254, 'c')},
      {std::string(63, 'n'), std::string(254, 'c')},
      {std::string(100, 'n'), std::string(400, 'c')},
  };
  for (size_t i = 0; i < names.size(); ++i)
    server.put("resourceclaims", claim_object(false, names[i].first, names[i].second, static_cast<int>(i) + 1), false);
  REQUIRE(server.start());

  Logger logger(LogLevel::Error);
  cl::ClusterState state(config_for(server), fast_options(), nullptr, &logger);
  REQUIRE(started_and_synced(state));
  state.publish_now();
  for (size_t i = 0; i < names.size(); ++i) {
    INFO("namespace of " << names[i].first.size() << ", name of " << names[i].second.size() << " characters");
    CHECK(first_count(state.find(ClaimKind::Claim, names[i].first, names[i].second)) == static_cast<long long>(i) + 1);
  }
  CHECK(server.counters.gets == 0);
  state.stop();
}

TEST_CASE("cluster state: cut watches reconnect, 410 Gone relists, slow GETs are bounded", "[cluster]") {
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a", {{"tenant", "a"}}));
  REQUIRE(server.start());
  Metrics metrics;
  Logger logger(LogLevel::Error);
  cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
  REQUIRE(started_and_synced(state));

  // Cut: reconnect from the last resourceVersion, no relist.
  const int lists_before = server.counters.lists;
  server.cut_watches();
  server.put("namespaces", namespace_object("after-cut"));
  CHECK(eventually([&] { return state.labels_of("after-cut") != nullptr; }));
  CHECK(has_metric(metrics, "gpu_admission_cluster_watch_restarts_total{reason=\"disconnected\",resource=\"namespaces\"}"));

  // Expired: the history is compacted and watches cut; the reconnect gets 410 and relists.
  server.put("namespaces", namespace_object("team-a", {{"tenant", "z"}}), false);  // missed by the watch
  server.compact();
  server.cut_watches();
  CHECK(eventually([&] { return label_value(state.labels_of("team-a"), "tenant") == "z"; }));
  CHECK(server.counters.lists > lists_before);
  CHECK(eventually([&] {
    return has_metric(metrics, "gpu_admission_cluster_watch_restarts_total{reason=\"expired\",resource=\"namespaces\"} 1");
  }));

  // An ERROR event with code 410 in a running watch.
  server.expire_next_watch("namespaces");
  server.cut_watches();
  CHECK(eventually([&] {
    return has_metric(metrics, "gpu_admission_cluster_watch_restarts_total{reason=\"expired\",resource=\"namespaces\"} 2");
  }));

  // A GET slower than the lookup timeout: an error within about a second, not a hang.
  server.get_delay_ms = 3000;
  server.put("resourceclaimtemplates", claim_object(true, "team-a", "slow", 1), false);
  const auto started = std::chrono::steady_clock::now();
  CHECK(state.find(ClaimKind::Template, "team-a", "slow") == nullptr);
  CHECK(std::chrono::steady_clock::now() - started < 2500ms);
  CHECK(has_metric(metrics, "gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"error\"} 1"));
  server.get_delay_ms = 0;
  state.stop();
}

TEST_CASE("cluster state: the API server goes away, serving continues, and it comes back", "[cluster]") {
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a", {{"tenant", "a"}}));
  server.put("resourceclaimtemplates", claim_object(true, "team-a", "t", 2));
  REQUIRE(server.start());
  const int port = server.port();
  Logger logger(LogLevel::Error);
  Metrics metrics;
  cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
  REQUIRE(started_and_synced(state));

  server.stop();
  std::this_thread::sleep_for(300ms);
  CHECK(state.not_ready_reason().empty());  // readiness waits for the first list only
  CHECK(label_value(state.labels_of("team-a"), "tenant") == "a");
  CHECK(first_count(state.find(ClaimKind::Template, "team-a", "t")) == 2);
  CHECK(state.find(ClaimKind::Template, "team-a", "missing") == nullptr);  // the GET fails: error
  CHECK(has_metric(metrics, "gpu_admission_cluster_synced{resource=\"namespaces\"} 0"));

  const int lists_before = server.lists_of("namespaces");
  server.put("namespaces", namespace_object("team-b", {{"tenant", "b"}}));
  REQUIRE(server.start(port));
  CHECK(eventually([&] { return state.labels_of("team-b") != nullptr; }, 15s));
  // In step again as soon as the resumed watch opens, without waiting for a list.
  CHECK(eventually([&] { return has_metric(metrics, "gpu_admission_cluster_synced{resource=\"namespaces\"} 1"); }, 15s));
  CHECK(server.lists_of("namespaces") == lists_before);
  state.stop();
}

TEST_CASE("cluster state: a rotated service-account token is re-read after a 401", "[cluster]") {
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a"));
  REQUIRE(server.start());
  TempDir dir;
  write_text(dir.file("token"), server.token + "\n");
  cl::KubeConfig config = config_for(server);
  config.token.clear();
  config.token_file = dir.file("token");
  Logger logger(LogLevel::Error);
  cl::ClusterState state(config, fast_options(), nullptr, &logger);
  REQUIRE(started_and_synced(state));

  server.set_token("rotated-token");  // the API server now wants the new token...
  write_text(dir.file("token"), "rotated-token\n");  // ...which the kubelet has written
  server.put("resourceclaimtemplates", claim_object(true, "team-a", "fresh", 1), false);
  CHECK(first_count(state.find(ClaimKind::Template, "team-a", "fresh")) == 1);
  CHECK(server.counters.unauthorized >= 1);
  state.stop();
}

TEST_CASE("cluster state: without resource.k8s.io, claims are absent and readiness needs namespaces only", "[cluster]") {
  FakeApiServer server;
  server.serve_dra = false;
  server.put("namespaces", namespace_object("team-a"));
  REQUIRE(server.start());
  Logger logger(LogLevel::Error);
  Metrics metrics;
  cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
  REQUIRE(started_and_synced(state));
  CHECK(state.claims_version().empty());
  CHECK(state.find(ClaimKind::Claim, "team-a", "x") == nullptr);
  CHECK(server.counters.gets == 0);
  // No synced gauge for what is not watched: an alert on `== 0` must not fire for it.
  const std::string scraped = metrics.serialize();
  CHECK(scraped.find("gpu_admission_cluster_synced{resource=\"namespaces\"} 1") != std::string::npos);
  CHECK(scraped.find("gpu_admission_cluster_synced{resource=\"resourceclaims\"") == std::string::npos);
  CHECK(scraped.find("gpu_admission_cluster_synced{resource=\"resourceclaimtemplates\"") == std::string::npos);
}

TEST_CASE("cluster state: a wrong CA or token never syncs, and says why", "[cluster]") {
  FakeApiServer server;
  REQUIRE(server.start());
  TempDir dir;
  FILE* log = std::fopen(dir.file("log").c_str(), "w+");
  REQUIRE(log != nullptr);
  Logger logger(LogLevel::Warn, fileno(log));
  cl::KubeConfig wrong_token = config_for(server);
  wrong_token.token = "nope";
  cl::ClusterState state(wrong_token, fast_options(), nullptr, &logger);
  std::string error;
  REQUIRE(state.start(error));
  const auto read_log = [&] {
    std::ifstream in(dir.file("log"));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // Both the list and the discovery have failed at least once (at once here; a loaded or
  // emulated machine takes longer over the TLS handshakes).
  CHECK(eventually([&] {
    const std::string text = read_log();
    return text.find("cluster watch failed") != std::string::npos &&
           text.find("cluster discovery failed") != std::string::npos;
  }));
  CHECK(state.not_ready_reason().find("namespaces not listed yet") != std::string::npos);
  state.stop();
  // The failures name the endpoint they came from: the API server's URL and the path.
  std::fflush(log);
  const std::string text = read_log();
  INFO(text);
  const std::string server_url = "https://127.0.0.1:" + std::to_string(server.port());
  CHECK(text.find(R"("msg":"cluster watch failed)") != std::string::npos);
  CHECK(text.find(R"("endpoint":")" + server_url + "/api/v1/namespaces?limit=") != std::string::npos);
  CHECK(text.find(R"("endpoint":")" + server_url + R"(/apis/resource.k8s.io")") != std::string::npos);
  CHECK(text.find("401") != std::string::npos);
  std::fclose(log);

  cl::KubeConfig bad_ca = config_for(server);
  bad_ca.ca_pem = "not a certificate";
  cl::ClusterState unusable(bad_ca, fast_options(), nullptr, &logger);
  CHECK_FALSE(unusable.start(error));
  CHECK(error.find("holds no PEM certificate") != std::string::npos);
}
