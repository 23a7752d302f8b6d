// The wire formats: watch event lines, list pages, bounded line splitting, discovery, and the
// compact claim copies the cache keeps.
#include <catch2/catch.hpp>

#include <vector>

#include "webhook/cluster/cluster_objects.h"
#include "webhook/cluster/cluster_state.h"
#include "webhook/cluster/watch_decoder.h"

namespace cl = gpu_admission::webhook::cluster;

TEST_CASE("cluster watch: lines split across chunks, CRLF, over-long lines", "[cluster]") {
  cl::LineSplitter splitter(16);
  std::vector<std::string> lines;
  auto collect = [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  CHECK(splitter.feed("ab", 2, collect));
  CHECK(splitter.feed("c\r\n\nde", 6, collect));
  CHECK(splitter.feed("f\n", 2, collect));
  CHECK(lines == std::vector<std::string>{"abc", "def"});
  CHECK(splitter.pending() == 0);
  const std::string long_line(17, 'x');
  CHECK_FALSE(splitter.feed(long_line.data(), long_line.size(), collect));
}

TEST_CASE("cluster watch: events and their errors", "[cluster]") {
  simdjson::dom::parser parser;
  cl::WatchEvent event;
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"7"}}})", event));
  CHECK(event.type == cl::EventType::Added);
  CHECK(event.meta.name == "a");
  CHECK(event.meta.namespace_name == "n");
  CHECK(event.meta.resource_version == "7");
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})", event));
  CHECK(event.meta.resource_version == "9");
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})", event));
  CHECK(event.error_code == 410);
  CHECK(event.error_message == "too old");
  CHECK(event.problem.empty());
  // Not a watch event: an error (the watch ends and the resource is listed again).
  CHECK(cl::decode_watch_event(parser, "{", event));
  CHECK(cl::decode_watch_event(parser, R"({"type":"SOMETHING","object":{}})", event));
  CHECK(cl::decode_watch_event(parser, R"({"type":"BOOKMARK","object":{"metadata":{}}})", event));
  CHECK(cl::decode_watch_event(parser, R"({"type":"ERROR"})", event));
  // An event whose object alone is unusable decodes, saying what is wrong (it is skipped).
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"8"}}})", event));
  CHECK(event.problem == "no metadata.name");
  CHECK(event.meta.resource_version == "8");
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"MODIFIED","object":{"spec":{}}})", event));
  CHECK(event.problem == "no metadata");
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"ADDED"})", event));
  CHECK(event.problem == "the event's object is not a JSON object");
  REQUIRE_FALSE(cl::decode_watch_event(parser, R"({"type":"DELETED","object":[1]})", event));
  CHECK(event.problem == "the event's object is not a JSON object");
  CHECK(cl::object_meta_problem(parser.parse(std::string("[]")).value()) == "not a JSON object");
}

TEST_CASE("cluster watch: list pages and discovery", "[cluster]") {
  simdjson::dom::parser parser;
  cl::ListPage page;
  REQUIRE_FALSE(cl::decode_list_page(parser, R"({"metadata":{"resourceVersion":"5","continue":"c"},"items":[{"metadata":{"name":"x"}}]})", page));
  CHECK(page.resource_version == "5");
  CHECK(page.continue_token == "c");
  CHECK(page.items.size() == 1);
  REQUIRE_FALSE(cl::decode_list_page(parser, R"({"metadata":{"resourceVersion":"5"},"items":null})", page));
  CHECK(page.items.size() == 0);
  CHECK(cl::decode_list_page(parser, R"({"items":[]})", page));
  CHECK(cl::pick_claims_version(R"({"versions":[{"version":"v1beta1"},{"version":"v1beta2"}]})") == "v1beta2");
  CHECK(cl::pick_claims_version(R"({"versions":[{"version":"v1alpha3"}]})").empty());
  CHECK(cl::url_encode("a+b/=") == "a%2Bb%2F%3D");
}

TEST_CASE("cluster objects: a list item without apiVersion decodes, and its copy owns its strings", "[cluster]") {
  simdjson::dom::parser parser;
  std::string text = R"({"metadata":{"name":"t","namespace":"n"},"spec":{"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"gpu.nvidia.com","count":3,"selectors":[{"cel":{"expression":"x"}}]}]}}}})";
  auto entry = cl::make_claim_entry(parser.parse(text).value(), gpu_admission::policy::ClaimKind::Template,
                                    "resource.k8s.io/v1beta1");
  REQUIRE(entry->ok());
  text.assign(text.size(), '#');  // the entry does not point into the input
  parser.parse(std::string(R"({"x":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"})")).value();
  CHECK(entry->view.name == "t");
  CHECK(entry->view.api_version == "resource.k8s.io/v1beta1");
  REQUIRE(entry->view.requests.size() == 1);
  CHECK(entry->view.requests[0].alternatives[0].count == 3);
  CHECK(entry->view.requests[0].alternatives[0].selectors[0] == "x");
  CHECK(cl::entry_bytes(*entry) < 1024);

  // The MIG profiles its selectors pin are found once and, like every string, kept in the entry.
  std::string mig = R"({"metadata":{"name":"m","namespace":"n"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"}}]}}]}}})";
  auto pinned = cl::make_claim_entry(parser.parse(mig).value(), gpu_admission::policy::ClaimKind::Claim,
                                     "resource.k8s.io/v1");
  REQUIRE(pinned->ok());
  mig.assign(mig.size(), '#');
  parser.parse(std::string(R"({"x":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"})")).value();
  const auto& alternative = pinned->view.requests.at(0).alternatives.at(0);
  CHECK(alternative.pins_found);
  REQUIRE(alternative.pinned_profiles.size() == 1);
  CHECK(alternative.pinned_profiles[0] == "2g.20gb");

  auto bad = cl::make_claim_entry(parser.parse(std::string(R"({"metadata":{"name":"b"},"spec":{"spec":{"devices":{"requests":[{"name":"r"}]}}}})")).value(),
                                  gpu_admission::policy::ClaimKind::Template, "resource.k8s.io/v1");
  CHECK_FALSE(bad->ok());
}
