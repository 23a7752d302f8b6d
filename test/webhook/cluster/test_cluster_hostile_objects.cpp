// Cluster state against objects a tenant can make hostile (none may stop a watch): claims
// nested as deep as the API server stores (10,000 levels) in another driver's opaque parameters
// and in gpu.nvidia.com's, objects of about 1.4 MiB, and objects cluster state cannot decode
// (wrong types, an item that is not an object, no metadata.name), each alone and among 3,000
// good claims over many list pages, in the initial list and in watch events. Whatever happens,
// the state becomes ready, good claims are found, an undecodable one answers "not found", it is
// counted and logged, and the watch goes on (no relist for "invalid").
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_test_support.h"
#include "policy/dra/claim_decoder.h"
#include "webhook/cluster/cluster_objects.h"
#include "webhook/cluster/watch_decoder.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

using namespace cluster_test;
using gpu_admission::policy::ClaimKind;
using gpu_admission::webhook::Logger;
using gpu_admission::webhook::LogLevel;
using gpu_admission::webhook::Metrics;

namespace {

constexpr int kManyClaims = 3'000;

// JSON nested `levels` deep (objects and arrays in turn), ending in a number.
std::string deep_json(size_t levels) {
  std::string text;
  text.reserve(levels * 6 + 2);
  for (size_t i = 0; i < levels; ++i) text += i % 2 == 0 ? R"({"x":)" : "[";
  text += "1";
  for (size_t i = levels; i-- > 0;) text += i % 2 == 0 ? "}" : "]";
  return text;
}

// A claim (as a list item: no apiVersion, no kind) asking for `count` full GPUs, with one
// driver config of `driver` whose parameters are `parameters` (JSON text).
std::string claim_text(const std::string& ns, const std::string& name, int count, const std::string& driver,
                       const std::string& parameters) {
  return R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":)" +
         std::to_string(count) + R"(}}],"config":[{"opaque":{"driver":")" + driver + R"(","parameters":)" + parameters +
         "}}]}}}";
}

// The levels of a claim_text object above its parameters (object, spec, devices, config list,
// config entry, opaque): parameters `p` levels deep make an object of kAboveParameters + p.
constexpr size_t kAboveParameters = 6;

// NVIDIA's parameters asking for MPS, with `extra` (JSON text) beside the sharing settings.
std::string nvidia_mps_parameters(const std::string& extra) {
  return R"({"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":)" +
         extra + "}}";
}

double metric(const Metrics& metrics, const std::string& series) {
  const std::string text = "\n" + metrics.serialize();
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

double decode_errors(const Metrics& metrics, const std::string& resource) {
  return metric(metrics, "gpu_admission_cluster_decode_errors_total{resource=\"" + resource + "\"}");
}

double invalid_restarts(const Metrics& metrics, const std::string& resource) {
  return metric(metrics,
                "gpu_admission_cluster_watch_restarts_total{reason=\"invalid\",resource=\"" + resource + "\"}");
}

// A fake API server with `good` claims over ten namespaces ("team-0/good-0" asks for 1 GPU,
// then 2, 3, 4, 1, ...), a ClusterState on it, metrics, and a log in a file.
struct Cluster {
  explicit Cluster(int good, cl::ClusterOptions cluster_options = fast_options()) : options(cluster_options) {
    for (int i = 0; i < good; ++i) server.put("resourceclaims", claim_object(false, ns(i), name(i), count(i)));
    server.put("namespaces", namespace_object("team-a", {{"tenant", "a"}}));
    log_fd = ::open(dir.file("log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    logger = std::make_unique<Logger>(LogLevel::Warn, log_fd);
  }
  ~Cluster() {
    state.reset();  // first: its kept connections would hold the server's stop for their keep-alive
    server.stop();
    if (log_fd >= 0) ::close(log_fd);
  }
  static std::string ns(int i) { return "team-" + std::to_string(i % 10); }
  static std::string name(int i) { return "good-" + std::to_string(i); }
  static int count(int i) { return 1 + i % 4; }

  bool start_and_sync() {
    if (!server.start()) return false;
    state = std::make_unique<cl::ClusterState>(config_for(server), options, &metrics, logger.get());
    std::string error;
    if (!state->start(error)) return false;
    const bool ready = eventually([&] { return state->not_ready_reason().empty(); }, 30s);
    state->publish_now();
    return ready;
  }
  // Every good claim is found, from the cache (no GET).
  bool all_good_found(int good) {
    const int gets = server.counters.gets;
    for (int i = 0; i < good; ++i)
      if (first_count(state->find(ClaimKind::Claim, ns(i), name(i))) != count(i)) return false;
    return server.counters.gets == gets;
  }
  std::string log() const {
    std::ifstream in(dir.file("log"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The watch is running: a claim deleted and created again with other content is seen with
  // it, through watch events (the cache's count follows both), not a GET.
  bool watch_follows() {
    const std::string ns = "team-z", name = "recreated";
    const int gets = server.counters.gets;
    const size_t before = state->counts().claims;
    server.put("resourceclaims", claim_object(false, ns, name, 2));
    if (!eventually([&] { return state->counts().claims == before + 1; })) return false;
    server.remove("resourceclaims", ns, name);
    if (!eventually([&] { return state->counts().claims == before; })) return false;
    server.put("resourceclaims", claim_object(false, ns, name, 7));
    if (!eventually([&] { return state->counts().claims == before + 1; })) return false;
    state->publish_now();
    return first_count(state->find(ClaimKind::Claim, ns, name)) == 7 && server.counters.gets == gets;
  }

  cl::ClusterOptions options;
  FakeApiServer server;
  Metrics metrics;
  TempDir dir;
  int log_fd = -1;
  std::unique_ptr<Logger> logger;
  std::unique_ptr<cl::ClusterState> state;
};

// One hostile object: where it goes, its text, and what a lookup of it answers.
struct Hostile {
  std::string label;
  std::string resource = "resourceclaims";
  std::string ns = "team-5";  // in the middle of the good claims' pages
  std::string name = "hostile";
  std::string text;
  long long expected_count = -1;  // -1: not found (it cannot be decoded)
  bool indexed = true;            // it has a name: cluster state keeps an entry for it
};

// The checks every hostile object gets, in the initial list (`in_list`) or in a watch event,
// alone (with a few good claims) or among kManyClaims.
void check_hostile(const Hostile& hostile, bool in_list, int good) {
  INFO(hostile.label << (in_list ? ", in the initial list" : ", in a watch event") << ", among " << good
                     << " good claims");
  const bool decodable = hostile.expected_count >= 0;
  const bool is_claim = hostile.resource == "resourceclaims";
  const ClaimKind kind = is_claim ? ClaimKind::Claim : ClaimKind::Template;
  cl::ClusterOptions options = fast_options();
  options.informer.page_size = 500;  // the default: kManyClaims make six pages
  Cluster cluster(good, options);
  if (in_list) cluster.server.put_raw(hostile.resource, hostile.ns, hostile.name, hostile.text);
  REQUIRE(cluster.start_and_sync());
  CHECK(cluster.state->not_ready_reason().empty());
  const int lists = cluster.server.counters.lists;

  if (!in_list) {
    const size_t before = is_claim ? cluster.state->counts().claims : cluster.state->counts().templates;
    cluster.server.put_raw(hostile.resource, hostile.ns, hostile.name, hostile.text);
    if (hostile.indexed) {
      CHECK(eventually([&] {
        const auto counts = cluster.state->counts();
        return (is_claim ? counts.claims : counts.templates) == before + 1;
      }));
    } else {
      CHECK(eventually([&] { return decode_errors(cluster.metrics, hostile.resource) >= 1; }));
    }
    cluster.state->publish_now();
  }

  CHECK(cluster.all_good_found(good));
  if (hostile.indexed) {
    // Answered from the cache, without a GET: found, or (undecodable) not found.
    const int gets = cluster.server.counters.gets;
    const auto* found = cluster.state->find(kind, hostile.ns, hostile.name);
    if (decodable) CHECK(first_count(found) == hostile.expected_count);
    else CHECK(found == nullptr);
    CHECK(cluster.server.counters.gets == gets);
  }
  CHECK(decode_errors(cluster.metrics, hostile.resource) == (decodable ? 0 : 1));
  CHECK(cluster.watch_follows());
  CHECK(invalid_restarts(cluster.metrics, "resourceclaims") == 0);
  CHECK(invalid_restarts(cluster.metrics, hostile.resource) == 0);
  CHECK(cluster.server.counters.lists == lists);
  CHECK(cluster.state->not_ready_reason().empty());
}

void check_everywhere(const Hostile& hostile) {
  for (const bool in_list : {true, false})
    for (const int good : {2, kManyClaims}) check_hostile(hostile, in_list, good);
}

}  // namespace

TEST_CASE("cluster hostile: list items without apiVersion decode as the listed version", "[cluster]") {
  simdjson::dom::parser parser;
  const std::string item =
      R"({"metadata":{"name":"c","namespace":"n"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}}})";
  gpu_admission::policy::ClaimView view;
  simdjson::dom::element element = parser.parse(item).value();
  REQUIRE_FALSE(gpu_admission::policy::decode_claim_as(element, ClaimKind::Claim, view, true, "resource.k8s.io/v1"));
  CHECK(view.api_version == "resource.k8s.io/v1");
  CHECK(view.name == "c");
  CHECK(view.requests.at(0).alternatives.at(0).count == 2);
  // Without an assumed version, an object without apiVersion is refused, as before.
  const auto missing = gpu_admission::policy::decode_claim_as(element, ClaimKind::Claim, view);
  REQUIRE(missing);
  CHECK(missing->field == "apiVersion");
  // The object's own apiVersion wins (v1beta1: the flat shape).
  const std::string flat =
      R"({"apiVersion":"resource.k8s.io/v1beta1","metadata":{"name":"f"},"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"gpu.nvidia.com","count":3}]}}})";
  element = parser.parse(flat).value();
  REQUIRE_FALSE(gpu_admission::policy::decode_claim_as(element, ClaimKind::Claim, view, false, "resource.k8s.io/v1"));
  CHECK(view.api_version == "resource.k8s.io/v1beta1");
  CHECK(view.requests.at(0).alternatives.at(0).count == 3);
  // An apiVersion that is there but null or not a string is an error, assumed version or not.
  for (const std::string bad : {R"({"apiVersion":null,"metadata":{"name":"x"}})", R"({"apiVersion":1,"metadata":{"name":"x"}})"}) {
    element = parser.parse(bad).value();
    const auto error = gpu_admission::policy::decode_claim_as(element, ClaimKind::Claim, view, false, "resource.k8s.io/v1");
    REQUIRE(error);
    CHECK(error->field == "apiVersion");
  }
  // Through the cache entry, and with a template's shape.
  const std::string templ =
      R"({"metadata":{"name":"t","namespace":"n"},"spec":{"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu.nvidia.com","count":4}}]}}}})";
  const auto entry = cl::make_claim_entry(parser.parse(templ).value(), ClaimKind::Template, "resource.k8s.io/v1beta2");
  REQUIRE(entry->ok());
  CHECK(entry->view.api_version == "resource.k8s.io/v1beta2");
  CHECK(first_count(&entry->view) == 4);
}

TEST_CASE("cluster hostile: list pages and watch events as deep as the API server stores", "[cluster]") {
  const std::string claim =
      claim_text("n", "deep", 2, "other.example.com", deep_json(cl::kMaxStoredObjectDepth - kAboveParameters));
  const std::string page = R"({"metadata":{"resourceVersion":"5"},"items":[)" + claim + "]}";
  const std::string event = R"({"type":"ADDED","object":)" + claim + "}";
  simdjson::dom::parser fresh_list, fresh_watch;  // simdjson's default depth is 1,024

  // With that default, a claim that a parser reads on its own cannot be read in a list page or
  // a watch event, which wrap it in two levels and one.
  const std::string admissible = claim_text("n", "c", 1, "other.example.com", deep_json(1'023 - kAboveParameters));
  simdjson::dom::parser plain;
  CHECK(plain.parse(admissible).error() == simdjson::SUCCESS);
  CHECK(plain.parse(R"({"type":"ADDED","object":)" + admissible + "}").error() == simdjson::DEPTH_ERROR);
  CHECK(plain.parse(R"({"metadata":{"resourceVersion":"5"},"items":[)" + admissible + "]}").error() ==
        simdjson::DEPTH_ERROR);
  cl::ListPage admissible_page;
  REQUIRE_FALSE(cl::decode_list_page(fresh_list, R"({"metadata":{"resourceVersion":"5"},"items":[)" + admissible + "]}",
                                     admissible_page));
  CHECK(admissible_page.items.size() == 1);
  cl::ListPage list;
  REQUIRE_FALSE(cl::decode_list_page(fresh_list, page, list));
  REQUIRE(list.items.size() == 1);
  CHECK(fresh_list.max_depth() >= cl::kMaxDocumentDepth);
  const auto entry = cl::make_claim_entry(list.items.at(0).value(), ClaimKind::Claim, "resource.k8s.io/v1");
  REQUIRE(entry->ok());
  CHECK(first_count(&entry->view) == 2);
  cl::WatchEvent watched;
  REQUIRE_FALSE(cl::decode_watch_event(fresh_watch, event, watched));
  CHECK(watched.problem.empty());
  CHECK(watched.meta.name == "deep");
  // A parser keeps its depth when it grows for a larger document.
  const std::string larger = R"({"metadata":{"resourceVersion":"6"},"items":[)" + claim + "," + claim + "," + claim + "]}";
  REQUIRE_FALSE(cl::decode_list_page(fresh_list, larger, list));
  CHECK(list.items.size() == 3);
  // Deeper than anything stored: an error, not a crash.
  CHECK(cl::decode_watch_event(fresh_watch, R"({"type":"ADDED","object":)" + deep_json(3 * cl::kMaxDocumentDepth) + "}",
                               watched));
}

TEST_CASE("cluster hostile: deep opaque parameters of another driver", "[cluster]") {
  // 1,017: a claim 1,023 levels deep, the deepest a parser of simdjson's default depth reads on
  // its own (as admission reads it), and too deep for one in a list page or a watch event.
  for (const size_t levels : {size_t{1'000}, size_t{1'017}, size_t{5'000}, size_t{10'000},
                              cl::kMaxStoredObjectDepth - kAboveParameters}) {
    Hostile hostile;
    hostile.label = "another driver's parameters " + std::to_string(levels) + " levels deep";
    hostile.text = claim_text(hostile.ns, hostile.name, 3, "other.example.com", deep_json(levels));
    hostile.expected_count = 3;
    check_everywhere(hostile);
  }
}

TEST_CASE("cluster hostile: deep parameters of the NVIDIA driver, a deep template", "[cluster]") {
  Hostile nvidia;
  nvidia.label = "gpu.nvidia.com parameters with a 9,990-level mpsConfig";
  nvidia.text = claim_text(nvidia.ns, nvidia.name, 2, "gpu.nvidia.com", nvidia_mps_parameters(deep_json(9'990)));
  nvidia.expected_count = 2;
  check_everywhere(nvidia);

  // Its MPS setting is read (the depth is beside it).
  Cluster cluster(0);
  cluster.server.put_raw("resourceclaims", "team-a", "mps", nvidia.text);
  REQUIRE(cluster.start_and_sync());
  const auto* view = cluster.state->find(ClaimKind::Claim, "team-a", "mps");
  REQUIRE(view != nullptr);
  REQUIRE(view->configs.size() == 1);
  CHECK(view->configs[0].driver == "gpu.nvidia.com");
  CHECK(view->configs[0].sharing_strategy == "MPS");

  Hostile templ;
  templ.label = "a template with 9,990-level parameters";
  templ.resource = "resourceclaimtemplates";
  templ.text = R"({"metadata":{"name":"hostile","namespace":"team-5"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":5}}],"config":[{"opaque":{"driver":"other.example.com","parameters":)" +
               deep_json(9'990) + "}}]}}}}";
  templ.expected_count = 5;
  check_everywhere(templ);
}

TEST_CASE("cluster hostile: objects of about 1.4 MiB", "[cluster]") {
  const std::string blob(1'400'000, 'a');
  Hostile other;
  other.label = "a 1.4 MiB string in another driver's parameters";
  other.text = claim_text(other.ns, other.name, 1, "other.example.com", R"({"blob":")" + blob + R"("})");
  other.expected_count = 1;
  check_everywhere(other);

  Hostile nvidia;
  nvidia.label = "a 1.4 MiB string in gpu.nvidia.com parameters";
  nvidia.text = claim_text(nvidia.ns, nvidia.name, 4, "gpu.nvidia.com", nvidia_mps_parameters(R"({"blob":")" + blob + R"("})"));
  nvidia.expected_count = 4;
  check_everywhere(nvidia);
}

TEST_CASE("cluster hostile: a list page larger than the bound is asked for again, smaller", "[cluster]") {
  cl::ClusterOptions options = fast_options();
  options.informer.max_page_bytes = 3u << 20;  // one huge object fits, three do not
  Cluster cluster(300, options);
  const std::string blob(1'400'000, 'b');
  for (int i = 0; i < 6; ++i)
    cluster.server.put_raw("resourceclaims", "team-" + std::to_string(i), "huge",
                           claim_text("team-" + std::to_string(i), "huge", 2, "other.example.com",
                                      R"({"blob":")" + blob + R"("})"));
  REQUIRE(cluster.start_and_sync());
  CHECK(cluster.all_good_found(300));
  const int gets = cluster.server.counters.gets;
  for (int i = 0; i < 6; ++i) CHECK(first_count(cluster.state->find(ClaimKind::Claim, "team-" + std::to_string(i), "huge")) == 2);
  CHECK(cluster.server.counters.gets == gets);
  CHECK(cluster.log().find("cluster list page too large") != std::string::npos);
  CHECK(cluster.watch_follows());
}

TEST_CASE("cluster hostile: claims cluster state cannot decode", "[cluster]") {
  const std::string requests = R"("requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":1}}])";
  std::vector<Hostile> all;
  auto add = [&](std::string label, std::string text, bool indexed = true) {
    Hostile hostile;
    hostile.label = std::move(label);
    hostile.text = std::move(text);
    hostile.indexed = indexed;
    all.push_back(std::move(hostile));
  };
  add("a count that is a string",
      R"({"metadata":{"name":"hostile","namespace":"team-5"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":"two"}}]}}})");
  add("requests that are not a list",
      R"({"metadata":{"name":"hostile","namespace":"team-5"},"spec":{"devices":{"requests":{"gpu":1}}}})");
  add("an NVIDIA sharing strategy that is an object",
      R"({"metadata":{"name":"hostile","namespace":"team-5"},"spec":{"devices":{)" + requests +
          R"(,"config":[{"opaque":{"driver":"gpu.nvidia.com","parameters":{"kind":"GpuConfig","sharing":{"strategy":{"a":1}}}}}]}}})");
  add("a count 9,990 levels deep",
      R"({"metadata":{"name":"hostile","namespace":"team-5"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":)" +
          deep_json(9'990) + "}}]}}}");
  add("an apiVersion that is a number", R"({"apiVersion":1,"metadata":{"name":"hostile","namespace":"team-5"}})");
  add("an item that is a number", "42", false);
  add("an item that is a list", "[1,2]", false);
  add("an item that is null", "null", false);
  add("an item without metadata.name", R"({"metadata":{"namespace":"team-5"},"spec":{"devices":{)" + requests + "}}}",
      false);
  add("an item whose name is a number", R"({"metadata":{"name":5,"namespace":"team-5"}})", false);
  add("an item whose metadata is a string", R"({"metadata":"team-5/hostile"})", false);
  for (const Hostile& hostile : all) check_everywhere(hostile);
}

TEST_CASE("cluster hostile: an undecodable object is logged, and a GET of it is counted too", "[cluster]") {
  Cluster cluster(10);
  cluster.server.put_raw("resourceclaims", "team-5", "bad-count",
                         R"({"metadata":{"name":"bad-count","namespace":"team-5"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":0}}]}}})");
  cluster.server.put_raw("resourceclaims", "team-5", "nameless", R"({"metadata":{"namespace":"team-5"}})");
  REQUIRE(cluster.start_and_sync());
  CHECK(decode_errors(cluster.metrics, "resourceclaims") == 2);
  const std::string log = cluster.log();
  CHECK(log.find(R"("resource":"resourceclaims")") != std::string::npos);
  CHECK(log.find(R"("endpoint":"https://127.0.0.1:)" + std::to_string(cluster.server.port()) +
                 R"(/apis/resource.k8s.io/v1/resourceclaims")") != std::string::npos);
  CHECK(log.find(R"("namespace":"team-5","name":"bad-count")") != std::string::npos);
  CHECK(log.find("spec.devices.requests[0].exactly.count: must be an integer of at least 1") != std::string::npos);
  CHECK(log.find("no metadata.name") != std::string::npos);

  // A template the watch has not announced, fetched by a lookup: not found, cached as such,
  // counted.
  cluster.server.put_raw("resourceclaimtemplates", "team-5", "late",
                         R"({"metadata":{"name":"late","namespace":"team-5"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu"}]}}}})",
                         false);
  const int gets = cluster.server.counters.gets;
  CHECK(cluster.state->find(ClaimKind::Template, "team-5", "late") == nullptr);
  CHECK(cluster.state->find(ClaimKind::Template, "team-5", "late") == nullptr);
  CHECK(cluster.server.counters.gets == gets + 1);
  CHECK(decode_errors(cluster.metrics, "resourceclaimtemplates") == 1);
  CHECK(cluster.log().find(R"("name":"late")") != std::string::npos);
}

TEST_CASE("cluster hostile: a claim modified into something undecodable is no longer used", "[cluster]") {
  Cluster cluster(10);
  cluster.server.put("resourceclaims", claim_object(false, "team-a", "victim", 2));
  REQUIRE(cluster.start_and_sync());
  REQUIRE(first_count(cluster.state->find(ClaimKind::Claim, "team-a", "victim")) == 2);
  const int gets = cluster.server.counters.gets;

  cluster.server.put_raw("resourceclaims", "team-a", "victim",
                         R"({"metadata":{"name":"victim","namespace":"team-a"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":-1}}]}}})");
  CHECK(eventually([&] { return cluster.state->find(ClaimKind::Claim, "team-a", "victim") == nullptr; }));
  CHECK(cluster.server.counters.gets == gets);  // the entry says "cannot be used": no GET
  CHECK(decode_errors(cluster.metrics, "resourceclaims") == 1);

  // Fixed again: the new content.
  cluster.server.put("resourceclaims", claim_object(false, "team-a", "victim", 6));
  CHECK(eventually([&] { return first_count(cluster.state->find(ClaimKind::Claim, "team-a", "victim")) == 6; }));
  CHECK(cluster.server.counters.gets == gets);
  CHECK(invalid_restarts(cluster.metrics, "resourceclaims") == 0);
  CHECK(cluster.watch_follows());
}

TEST_CASE("cluster hostile: namespaces with odd labels or no name", "[cluster]") {
  Cluster cluster(2);
  cluster.server.put_raw("namespaces", "", "odd-labels",
                         R"({"metadata":{"name":"odd-labels","labels":{"tenant":"a","weird":5,"nested":{"x":"y"},"team":"blue"}}})");
  cluster.server.put_raw("namespaces", "", "nameless", R"({"metadata":{"labels":{"tenant":"a"}}})");
  REQUIRE(cluster.start_and_sync());
  CHECK(label_value(cluster.state->labels_of("odd-labels"), "tenant") == "a");
  CHECK(label_value(cluster.state->labels_of("odd-labels"), "team") == "blue");
  CHECK(label_value(cluster.state->labels_of("odd-labels"), "weird") == "<unset>");
  CHECK(decode_errors(cluster.metrics, "namespaces") == 2);

  // In watch events: labels that are not an object, a namespace that is not an object.
  cluster.server.put_raw("namespaces", "", "no-labels", R"({"metadata":{"name":"no-labels","labels":"tenant=a"}})");
  cluster.server.put_raw("namespaces", "", "not-an-object", R"("namespace")");
  CHECK(eventually([&] { return cluster.state->labels_of("no-labels") != nullptr; }));
  CHECK(eventually([&] { return decode_errors(cluster.metrics, "namespaces") == 4; }));
  CHECK(label_value(cluster.state->labels_of("no-labels"), "tenant") == "<unset>");
  cluster.server.put("namespaces", namespace_object("later", {{"tenant", "b"}}));
  CHECK(eventually([&] { return label_value(cluster.state->labels_of("later"), "tenant") == "b"; }));
  CHECK(invalid_restarts(cluster.metrics, "namespaces") == 0);
  CHECK(cluster.log().find(R"(metadata.labels[\"weird\"] is not a string)") != std::string::npos);
}

TEST_CASE("cluster hostile: a watch line that is not JSON still ends the watch and relists", "[cluster]") {
  Cluster cluster(5);
  REQUIRE(cluster.start_and_sync());
  const int lists = cluster.server.counters.lists;
  cluster.server.put_raw("resourceclaims", "team-5", "broken", "{not json");
  CHECK(eventually([&] { return invalid_restarts(cluster.metrics, "resourceclaims") >= 1; }));
  CHECK(eventually([&] { return cluster.server.counters.lists > lists; }));
}
