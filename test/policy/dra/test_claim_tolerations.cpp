// The claim decoder reads the device tolerations of requests (Kubernetes 1.33+) in every shape:
// v1/v1beta2 `exactly`, each `firstAvailable` subrequest, flat v1beta1 requests; tolerations the
// decoder cannot read are errors naming their field (the API server refuses them too), never
// skipped: what is skipped is not judged.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <simdjson.h>

#include "policy/dra/claim_decoder.h"

using namespace gpu_admission;

namespace {

struct Decoded {
  std::string json;
  simdjson::dom::parser parser;
  policy::ClaimView claim;
  std::optional<policy::DecodeError> error;
};

std::unique_ptr<Decoded> decode(const std::string& version, const std::string& request) {
  auto d = std::make_unique<Decoded>();
  d->json = R"({"apiVersion":"resource.k8s.io/)" + version +
            R"(","kind":"ResourceClaim","metadata":{"name":"c"},"spec":{"devices":{"requests":[)" + request + "]}}}";
  simdjson::dom::element element;
  REQUIRE(d->parser.parse(d->json).get(element) == simdjson::SUCCESS);
  d->error = policy::decode_claim(element, d->claim);
  return d;
}

const std::string kTolerations =
    R"([{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":30},{"key":"r","value":"v"},{"operator":"Exists"}])";

void check_three(const policy::DeviceSubrequest& sub) {
  REQUIRE(sub.tolerations.size() == 3);
  CHECK(sub.tolerations[0].key == "k");
  CHECK(sub.tolerations[0].op == "Exists");
  CHECK(sub.tolerations[0].effect == "NoExecute");
  CHECK(sub.tolerations[1].key == "r");
  CHECK(sub.tolerations[1].op.empty());  // Equal by default
  CHECK(sub.tolerations[1].value == "v");
  CHECK(sub.tolerations[2].key.empty());
  CHECK(sub.tolerations[2].op == "Exists");
}

}  // namespace

TEST_CASE("claim tolerations: every shape", "[claim][device-tolerations]") {
  for (const char* version : {"v1", "v1beta2"}) {
    INFO(version);
    auto exactly = decode(version, R"({"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","tolerations":)" + kTolerations + "}}");
    REQUIRE_FALSE(exactly->error.has_value());
    check_three(exactly->claim.requests.at(0).alternatives.at(0));
    auto first = decode(version, R"({"name":"g","firstAvailable":[{"name":"a","deviceClassName":"x"},
        {"name":"b","deviceClassName":"mig.nvidia.com","tolerations":)" + kTolerations + "}]}");
    REQUIRE_FALSE(first->error.has_value());
    CHECK(first->claim.requests.at(0).alternatives.at(0).tolerations.empty());
    check_three(first->claim.requests.at(0).alternatives.at(1));
  }
  auto flat = decode("v1beta1", R"({"name":"g","deviceClassName":"gpu.nvidia.com","tolerations":)" + kTolerations + "}");
  REQUIRE_FALSE(flat->error.has_value());
  check_three(flat->claim.requests.at(0).alternatives.at(0));
  auto flat_first = decode("v1beta1", R"({"name":"g","firstAvailable":[{"name":"a","deviceClassName":"gpu.nvidia.com","tolerations":)" +
                                          kTolerations + "}]}");
  REQUIRE_FALSE(flat_first->error.has_value());
  check_three(flat_first->claim.requests.at(0).alternatives.at(0));
  auto none = decode("v1", R"({"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","tolerations":null}})");
  REQUIRE_FALSE(none->error.has_value());
  CHECK(none->claim.requests.at(0).alternatives.at(0).tolerations.empty());
}

TEST_CASE("claim tolerations: what cannot be read is an error at its field", "[claim][device-tolerations]") {
  struct Case {
    std::string version, request, field;
  };
  const Case cases[] = {
      {"v1", R"({"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","tolerations":1}})",
       "spec.devices.requests[0].exactly.tolerations"},
      {"v1", R"({"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com","tolerations":["k"]}})",
       "spec.devices.requests[0].exactly.tolerations[0]"},
      {"v1beta2", R"({"name":"g","firstAvailable":[{"name":"a","deviceClassName":"x","tolerations":[{"key":1}]}]})",
       "spec.devices.requests[0].firstAvailable[0].tolerations[0].key"},
      {"v1beta1", R"({"name":"g","deviceClassName":"gpu.nvidia.com","tolerations":[{"operator":true}]})",
       "spec.devices.requests[0].tolerations[0].operator"},
      {"v1beta1", R"({"name":"g","deviceClassName":"gpu.nvidia.com","tolerations":[{},{"effect":["NoSchedule"]}]})",
       "spec.devices.requests[0].tolerations[1].effect"},
  };
  for (const auto& c : cases) {
    auto d = decode(c.version, c.request);
    INFO(c.request);
    REQUIRE(d->error.has_value());
    CHECK(d->error->field == c.field);
  }
}
