// The cache's compact copy of a claim keeps the tolerations of its requests in its own arena (the
// decoded document they were read from is gone once the copy is made).
#include <catch2/catch.hpp>

#include <string>

#include "webhook/cluster/cluster_objects.h"

namespace cl = gpu_admission::webhook::cluster;

TEST_CASE("cluster objects: a claim's device tolerations are copied into its entry", "[cluster][device-tolerations]") {
  simdjson::dom::parser parser;
  std::string text = R"({"metadata":{"name":"c","namespace":"n"},"spec":{"devices":{"requests":[
    {"name":"r","exactly":{"deviceClassName":"gpu.nvidia.com",
     "tolerations":[{"key":"example.com/unhealthy","operator":"Exists","effect":"NoExecute"},
                    {"key":"example.com/reserved","operator":"Equal","value":"team-a"}]}},
    {"name":"s","firstAvailable":[{"name":"a","deviceClassName":"mig.nvidia.com","tolerations":[{"operator":"Exists"}]}]}]}}})";
  auto entry = cl::make_claim_entry(parser.parse(text).value(), gpu_admission::policy::ClaimKind::Claim,
                                    "resource.k8s.io/v1");
  REQUIRE(entry->ok());
  text.assign(text.size(), '#');  // the entry does not point into the input
  parser.parse(std::string(R"({"x":")" + std::string(600, 'y') + R"("})")).value();
  const auto& first = entry->view.requests.at(0).alternatives.at(0).tolerations;
  REQUIRE(first.size() == 2);
  CHECK(first[0].key == "example.com/unhealthy");
  CHECK(first[0].op == "Exists");
  CHECK(first[0].effect == "NoExecute");
  CHECK(first[1].key == "example.com/reserved");
  CHECK(first[1].value == "team-a");
  const auto& second = entry->view.requests.at(1).alternatives.at(0).tolerations;
  REQUIRE(second.size() == 1);
  CHECK(second[0].op == "Exists");
  CHECK(second[0].key.empty());
  for (const auto& t : first) {
    CHECK(t.key.data() >= entry->arena.data());
    CHECK(t.key.data() + t.key.size() <= entry->arena.data() + entry->arena.size());
  }
  CHECK(cl::entry_bytes(*entry) > entry->arena.size() + 2 * sizeof(gpu_admission::policy::Toleration));
}
