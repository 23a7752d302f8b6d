// PodGroups in cluster state, against the fake API server: discovery picks the newest version
// of scheduling.k8s.io whose resource list serves podgroups (its v1 serves PriorityClasses
// only), lists and watches them, fetches one the watch has not delivered with one GET, keeps
// one it cannot decode as not found, reads one as deep as the API server stores, and reports
// none (without waiting for it) where no version serves them.
#include <catch2/catch.hpp>

#include <string>

#include "cluster_test_support.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

using namespace cluster_test;
using gpu_admission::webhook::Logger;
using gpu_admission::webhook::LogLevel;
using gpu_admission::webhook::Metrics;

namespace {

void serve_pod_groups(FakeApiServer& server, const char* version) {
  server.add_resource({"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false});
  server.add_resource({"scheduling.k8s.io", version, "podgroups", "PodGroup"});
}

// A PodGroup (as a list item: no apiVersion or kind) sharing the claim `claim`.
Json pod_group(const std::string& ns, const std::string& name, const std::string& claim) {
  return {{"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"schedulingPolicy", {{"basic", Json::object()}}},
                    {"resourceClaims", Json::array({{{"name", "gpus"}, {"resourceClaimName", claim}}})}}}};
}

std::string claim_of(const gpu_admission::policy::PodGroupView* group) {
  if (group == nullptr) return "<none>";
  return group->resource_claims.empty() ? "<empty>" : std::string(group->resource_claims[0].claim_name);
}

}  // namespace

TEST_CASE("cluster state: PodGroups listed, watched and fetched in every served version", "[cluster][podgroup]") {
  for (const char* version : {"v1alpha2", "v1alpha3", "v1beta1"}) {
    INFO(version);
    FakeApiServer server;
    serve_pod_groups(server, version);
    server.put("podgroups", pod_group("team-a", "trainers", "shared-gpus"));
    REQUIRE(server.start());

    Metrics metrics;
    Logger logger(LogLevel::Error);
    cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
    REQUIRE(started_and_synced(state));
    state.publish_now();
    CHECK(state.pod_groups_version() == version);
    CHECK(state.counts().pod_groups == 1);
    const auto* group = state.find_group("team-a", "trainers");
    CHECK(claim_of(group) == "shared-gpus");
    CHECK(group->api_version == std::string("scheduling.k8s.io/") + version);
    CHECK(server.counters.gets == 0);

    // Created, then changed: the watch delivers both.
    server.put("podgroups", pod_group("team-a", "evaluators", "one-gpu"));
    CHECK(eventually([&] { return claim_of(state.find_group("team-a", "evaluators")) == "one-gpu"; }));

    // A group the watch has not delivered yet (created a moment before its pod): one GET.
    const auto gets_before = server.counters.gets.load();
    server.put("podgroups", pod_group("team-a", "just-made", "two-gpus"), false);
    CHECK(claim_of(state.find_group("team-a", "just-made")) == "two-gpus");
    CHECK(claim_of(state.find_group("team-a", "just-made")) == "two-gpus");
    CHECK(server.counters.gets == gets_before + 1);
    CHECK(state.find_group("team-a", "never") == nullptr);
    CHECK(server.counters.gets == gets_before + 2);
    CHECK(metrics.serialize().find("resource=\"podgroups\"") != std::string::npos);

    // Deleted: gone.
    server.remove("podgroups", "team-a", "trainers");
    CHECK(eventually([&] { return state.find_group("team-a", "trainers") == nullptr; }));
    state.stop();
  }
}

TEST_CASE("cluster state: where no version serves podgroups, groups are unresolved and readiness does not wait",
          "[cluster][podgroup]") {
  SECTION("no scheduling.k8s.io at all") {}
  FakeApiServer server;
  SECTION("scheduling.k8s.io serves PriorityClasses only") {
    server.add_resource({"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false});
  }
  REQUIRE(server.start());
  Logger logger(LogLevel::Error);
  cl::ClusterState state(config_for(server), fast_options(), nullptr, &logger);
  REQUIRE(started_and_synced(state));
  CHECK(state.pod_groups_version().empty());
  CHECK(state.find_group("team-a", "trainers") == nullptr);
  CHECK(server.counters.gets == 0);
}

TEST_CASE("cluster state: a PodGroup that cannot be decoded is not found; a deep one is read", "[cluster][podgroup]") {
  FakeApiServer server;
  serve_pod_groups(server, "v1alpha2");
  server.put_raw("podgroups", "team-a", "bad",
                 R"({"metadata":{"name":"bad","namespace":"team-a"},"spec":{"resourceClaims":[{"name":"gpus","resourceClaimName":7}]}})");
  // Annotations nested as deep as the API server stores: the group's claims are still read.
  std::string deep;
  for (size_t i = 0; i + 8 < cl::kMaxStoredObjectDepth; ++i) deep += R"({"x":)";
  deep += "1";
  for (size_t i = 0; i + 8 < cl::kMaxStoredObjectDepth; ++i) deep += "}";
  server.put_raw("podgroups", "team-a", "deep",
                 R"({"metadata":{"name":"deep","namespace":"team-a"},"spec":{"resourceClaims":[{"name":"gpus","resourceClaimName":"c"}],"x":)" +
                     deep + "}}");
  REQUIRE(server.start());
  Metrics metrics;
  Logger logger(LogLevel::Error);
  cl::ClusterState state(config_for(server), fast_options(), &metrics, &logger);
  REQUIRE(started_and_synced(state));
  state.publish_now();
  CHECK(state.find_group("team-a", "bad") == nullptr);
  CHECK(claim_of(state.find_group("team-a", "deep")) == "c");
  CHECK(server.counters.gets == 0);  // the undecodable one is kept as such, not asked for again
  CHECK(metrics.serialize().find("gpu_admission_cluster_decode_errors_total{resource=\"podgroups\"} 1") !=
        std::string::npos);
}

TEST_CASE("discovery of PodGroups: candidates newest first, and whether a version serves them", "[cluster][podgroup]") {
  CHECK(cl::pod_group_version_candidates(
            R"({"versions":[{"version":"v1"},{"version":"v1alpha2"},{"version":"v1beta1"},{"version":"v1alpha3"}]})") ==
        std::vector<std::string>{"v1beta1", "v1alpha3", "v1alpha2"});
  CHECK(cl::pod_group_version_candidates(R"({"versions":[{"version":"v1"}]})").empty());
  CHECK(cl::pod_group_version_candidates("not json").empty());
  CHECK(cl::serves_resource(R"({"resources":[{"name":"workloads"},{"name":"podgroups"},{"name":"podgroups/status"}]})",
                            "podgroups"));
  CHECK_FALSE(cl::serves_resource(R"({"resources":[{"name":"priorityclasses"}]})", "podgroups"));
}
