// Decoding ResourceClaims and ResourceClaimTemplates (policy/dra/claim_decoder.h) in every
// served shape (v1 and v1beta2 `exactly` / `firstAvailable`, v1beta1 flat and `firstAvailable`),
// claim vs template, defaults, driver configs, every decoding error with the exact field path
// from the object root; and the real manifests of NVIDIA's DRA driver demos
// (../shared/corpora/dra-specs), which must all decode (skipped visibly when absent).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <simdjson.h>

#include "policy/dra/claim_decoder.h"
#include "policy/dra/claim_gpus.h"
#include "webhook/io/yaml_json.h"
#include "test_paths.h"

using namespace gpu_admission;
using policy::AllocationMode;
using policy::ClaimKind;
namespace fs = std::filesystem;

namespace {

struct Decoded {
  std::string json;
  simdjson::dom::parser parser;
  policy::ClaimView claim;
  std::optional<policy::DecodeError> error;
};

// Decodes JSON text as is (duplicate keys reach the decoder).
std::unique_ptr<Decoded> decode_json(std::string json) {
  auto d = std::make_unique<Decoded>();
  d->json = std::move(json);
  simdjson::dom::element element;
  REQUIRE(d->parser.parse(d->json).get(element) == simdjson::SUCCESS);
  d->error = policy::decode_claim(element, d->claim);
  return d;
}

std::unique_ptr<Decoded> decode_yaml(std::string_view yaml) {
  auto parsed = webhook::parse_yaml_or_json(yaml);
  INFO(yaml);
  REQUIRE_FALSE(parsed.error.has_value());
  REQUIRE(parsed.documents.size() == 1);
  return decode_json(parsed.documents[0].value.dump());
}

// A v1-shaped ResourceClaim (or template) around `requests` (flow-style YAML).
std::string claim_yaml(std::string_view version, std::string_view devices, bool templ = false) {
  std::string out = "{apiVersion: resource.k8s.io/" + std::string(version) + ", kind: ResourceClaim";
  if (templ) return out + "Template, metadata: {name: t, namespace: ns}, spec: {spec: {devices: " + std::string(devices) + "}}}";
  return out + ", metadata: {name: c, namespace: ns}, spec: {devices: " + std::string(devices) + "}}";
}

}  // namespace

TEST_CASE("claim kinds and API versions", "[claim]") {
  ClaimKind kind = ClaimKind::Claim;
  CHECK(policy::is_claim_kind("ResourceClaimTemplate", &kind));
  CHECK(kind == ClaimKind::Template);
  CHECK(policy::is_claim_kind("ResourceClaim", &kind));
  CHECK(kind == ClaimKind::Claim);
  CHECK(policy::is_claim_kind("ResourceClaim", nullptr));
  CHECK_FALSE(policy::is_claim_kind("resourceclaim", &kind));
  CHECK_FALSE(policy::is_claim_kind("DeviceClass", &kind));
  CHECK(policy::claim_kind_name(ClaimKind::Template) == "ResourceClaimTemplate");
  CHECK(policy::claim_kind_name(ClaimKind::Claim) == "ResourceClaim");
  CHECK(policy::claim_api_version_supported("resource.k8s.io/v1"));
  CHECK(policy::claim_api_version_supported("resource.k8s.io/v1beta2"));
  CHECK(policy::claim_api_version_supported("resource.k8s.io/v1beta1"));
  CHECK_FALSE(policy::claim_api_version_supported("resource.k8s.io/v1alpha2"));
  CHECK_FALSE(policy::claim_api_version_supported("resource.k8s.io/v1alpha3"));
  CHECK_FALSE(policy::claim_api_version_supported("resource.k8s.io/v2"));
  CHECK_FALSE(policy::claim_api_version_supported("v1"));
  CHECK_FALSE(policy::claim_api_version_supported(""));
}

TEST_CASE("v1 exactly: every field, and the defaults", "[claim]") {
  auto d = decode_yaml(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpus, namespace: team-a}
spec:
  devices:
    requests:
    - name: big
      exactly:
        deviceClassName: mig.nvidia.com
        allocationMode: ExactCount
        count: 3
        adminAccess: true
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
        - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
        tolerations: [{key: x, operator: Exists}]
    - name: plain
      exactly: {deviceClassName: gpu.nvidia.com}
    - name: every
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, count: null}
    constraints: [{requests: [big], matchAttribute: gpu.nvidia.com/parentUUID}]
)");
  REQUIRE_FALSE(d->error.has_value());
  const auto& c = d->claim;
  CHECK(c.kind == ClaimKind::Claim);
  CHECK(c.api_version == "resource.k8s.io/v1");
  CHECK(c.name == "gpus");
  CHECK(c.namespace_name == "team-a");
  CHECK(c.devices_field() == "spec.devices");
  REQUIRE(c.requests.size() == 3);
  const auto& big = c.requests[0];
  CHECK(big.index == 0);
  CHECK(big.name == "big");
  CHECK_FALSE(big.first_available);
  REQUIRE(big.alternatives.size() == 1);
  CHECK(big.alternatives[0].name.empty());
  CHECK(big.alternatives[0].device_class == "mig.nvidia.com");
  CHECK(big.alternatives[0].mode == AllocationMode::ExactCount);
  CHECK(big.alternatives[0].count == 3);
  CHECK(big.alternatives[0].admin_access);
  REQUIRE(big.alternatives[0].selectors.size() == 2);
  CHECK(big.alternatives[0].selectors[0] == "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'");
  // The pins are found once, at decoding, as views into the selector.
  CHECK(big.alternatives[0].pins_found);
  CHECK(big.alternatives[0].pinned_profiles == std::vector<std::string_view>{"1g.10gb"});
  CHECK(big.alternatives[0].pinned_profiles[0].data() == big.alternatives[0].selectors[0].data() + big.alternatives[0].selectors[0].find("1g.10gb"));
  const auto& plain = c.requests[1].alternatives.at(0);
  CHECK(c.requests[1].index == 1);
  CHECK(plain.mode == AllocationMode::ExactCount);
  CHECK(plain.count == 1);
  CHECK_FALSE(plain.admin_access);
  CHECK(plain.selectors.empty());
  CHECK(plain.pins_found);
  CHECK(plain.pinned_profiles.empty());
  CHECK(c.requests[2].alternatives.at(0).mode == AllocationMode::All);
  CHECK(c.configs.empty());
}

TEST_CASE("v1 and v1beta2 firstAvailable, templates", "[claim]") {
  for (const char* version : {"v1", "v1beta2"}) {
    for (bool templ : {false, true}) {
      INFO(version << (templ ? " template" : " claim"));
      auto d = decode_yaml(claim_yaml(version,
                                      "{requests: [{name: r, firstAvailable: ["
                                      "{name: big, deviceClassName: gpu.nvidia.com, count: 2},"
                                      "{name: small, deviceClassName: mig.nvidia.com, allocationMode: All,"
                                      " selectors: [{cel: {expression: x}}]}]},"
                                      "{name: e, exactly: {deviceClassName: gpu.nvidia.com}}]}",
                                      templ));
      REQUIRE_FALSE(d->error.has_value());
      const auto& c = d->claim;
      CHECK(c.kind == (templ ? ClaimKind::Template : ClaimKind::Claim));
      CHECK(c.devices_field() == (templ ? "spec.spec.devices" : "spec.devices"));
      CHECK(c.name == (templ ? "t" : "c"));
      REQUIRE(c.requests.size() == 2);
      const auto& r = c.requests[0];
      CHECK(r.first_available);
      REQUIRE(r.alternatives.size() == 2);
      CHECK(r.alternatives[0].name == "big");
      CHECK(r.alternatives[0].count == 2);
      CHECK(r.alternatives[1].name == "small");
      CHECK(r.alternatives[1].device_class == "mig.nvidia.com");
      CHECK(r.alternatives[1].mode == AllocationMode::All);
      CHECK(r.alternatives[1].selectors == std::vector<std::string_view>{"x"});
      CHECK_FALSE(c.requests[1].first_available);
      CHECK(c.requests[1].index == 1);
    }
  }
}

TEST_CASE("v1beta1: flat requests and firstAvailable", "[claim]") {
  auto d = decode_yaml(claim_yaml("v1beta1",
                                  "{requests: ["
                                  "{name: a, deviceClassName: gpu.nvidia.com, count: 4, adminAccess: true,"
                                  " selectors: [{cel: {expression: s}}]},"
                                  "{name: b, deviceClassName: mig.nvidia.com, allocationMode: All},"
                                  "{name: c, deviceClassName: '', firstAvailable: [{name: x, deviceClassName: gpu.nvidia.com}]},"
                                  "{name: d, firstAvailable: [{name: y, deviceClassName: mig.nvidia.com, count: 2,"
                                  " adminAccess: not-read}]}]}",
                                  true));
  REQUIRE_FALSE(d->error.has_value());
  const auto& c = d->claim;
  CHECK(c.api_version == "resource.k8s.io/v1beta1");
  REQUIRE(c.requests.size() == 4);
  const auto& a = c.requests[0].alternatives.at(0);
  CHECK_FALSE(c.requests[0].first_available);
  CHECK(a.device_class == "gpu.nvidia.com");
  CHECK(a.count == 4);
  CHECK(a.admin_access);
  CHECK(a.selectors == std::vector<std::string_view>{"s"});
  CHECK(c.requests[1].alternatives.at(0).mode == AllocationMode::All);
  CHECK(c.requests[2].first_available);
  CHECK(c.requests[2].alternatives.at(0).name == "x");
  CHECK(c.requests[3].first_available);
  CHECK(c.requests[3].alternatives.at(0).count == 2);
  CHECK_FALSE(c.requests[3].alternatives.at(0).admin_access);  // subrequests have no adminAccess
}

TEST_CASE("capacity (consumable capacity) in every shape marks the subrequest that sets it", "[claim]") {
  const std::string cap = "capacity: {requests: {memory: 10Gi}}";
  for (const char* version : {"v1", "v1beta2"}) {
    INFO(version);
    auto d = decode_yaml(claim_yaml(version, "{requests: [{name: a, exactly: {deviceClassName: gpu.nvidia.com, " + cap +
                                                 "}}, {name: b, exactly: {deviceClassName: gpu.nvidia.com}},"
                                                 " {name: c, firstAvailable: [{name: x, deviceClassName: gpu.nvidia.com},"
                                                 " {name: y, deviceClassName: gpu.nvidia.com, capacity: {}}]}]}"));
    REQUIRE_FALSE(d->error.has_value());
    const auto& r = d->claim.requests;
    CHECK(r.at(0).alternatives.at(0).capacity);
    CHECK_FALSE(r.at(1).alternatives.at(0).capacity);
    CHECK_FALSE(r.at(2).alternatives.at(0).capacity);
    CHECK(r.at(2).alternatives.at(1).capacity);  // present, even empty: the device's default share
  }
  auto flat = decode_yaml(claim_yaml("v1beta1", "{requests: [{name: a, deviceClassName: mig.nvidia.com, " + cap +
                                                    "}, {name: b, firstAvailable: [{name: x, deviceClassName: "
                                                    "gpu.nvidia.com, " + cap + "}]}, {name: c, deviceClassName: "
                                                    "gpu.nvidia.com, capacity: null}]}",
                                     true));
  REQUIRE_FALSE(flat->error.has_value());
  CHECK(flat->claim.requests.at(0).alternatives.at(0).capacity);
  CHECK(flat->claim.requests.at(1).alternatives.at(0).capacity);
  CHECK_FALSE(flat->claim.requests.at(2).alternatives.at(0).capacity);  // null is absent
}

TEST_CASE("driver configs", "[claim]") {
  auto d = decode_yaml(claim_yaml("v1",
                                  "{requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com}}], config: ["
                                  "{requests: [g, g/sub], opaque: {driver: gpu.nvidia.com, parameters:"
                                  " {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: MPS,"
                                  " mpsConfig: {defaultActiveThreadPercentage: 50}}}}},"
                                  "{opaque: {driver: other.example.com, parameters: {kind: 5, sharing: exclusive}}},"
                                  "{requests: [], opaque: {driver: gpu.nvidia.com, parameters: {kind: MigDeviceConfig}}},"
                                  "{requests: [g]},"
                                  "{opaque: {driver: gpu.nvidia.com}}]}"));
  REQUIRE_FALSE(d->error.has_value());
  const auto& configs = d->claim.configs;
  REQUIRE(configs.size() == 4);  // the entry without `opaque` has no view
  CHECK(configs[0].index == 0);
  CHECK(configs[0].driver == "gpu.nvidia.com");
  CHECK(configs[0].parameters_kind == "GpuConfig");
  CHECK(configs[0].sharing_strategy == "MPS");
  CHECK(configs[0].requests == std::vector<std::string_view>{"g", "g/sub"});
  CHECK(configs[1].index == 1);
  CHECK(configs[1].driver == "other.example.com");
  CHECK(configs[1].parameters_kind.empty());  // other drivers' parameters are not read
  CHECK(configs[2].index == 2);
  CHECK(configs[2].parameters_kind == "MigDeviceConfig");
  CHECK(configs[2].sharing_strategy.empty());
  CHECK(configs[2].requests.empty());
  CHECK(configs[3].index == 4);
}

TEST_CASE("claims without devices, null fields and unknown fields", "[claim]") {
  auto empty = decode_yaml("{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: e}}");
  REQUIRE_FALSE(empty->error.has_value());
  CHECK(empty->claim.requests.empty());
  auto nulls = decode_yaml(claim_yaml("v1", "{requests: [{name: n, firstAvailable: null,"
                                            " exactly: {deviceClassName: gpu.nvidia.com, count: null, allocationMode: null,"
                                            " selectors: null, adminAccess: null}}], config: null}"));
  REQUIRE_FALSE(nulls->error.has_value());
  CHECK(nulls->claim.requests.at(0).alternatives.at(0).count == 1);
  auto unknown = decode_yaml(claim_yaml("v1", "{requests: [{name: u, extra: [1], exactly: {deviceClassName: gpu.nvidia.com,"
                                              " unknownField: 7, future: {a: b}}}], constraints: 3, more: x}"));
  REQUIRE_FALSE(unknown->error.has_value());
  auto status = decode_yaml("{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, spec: {devices: {}}, status: 5}");
  REQUIRE_FALSE(status->error.has_value());
  // A claim object that is reused is cleared first.
  simdjson::dom::element element;
  REQUIRE(status->parser.parse(nulls->json).get(element) == simdjson::SUCCESS);
  REQUIRE_FALSE(policy::decode_claim(element, unknown->claim).has_value());
  CHECK(unknown->claim.requests.at(0).name == "n");
}

namespace {

struct ErrorCase {
  std::string yaml, field, message;
};

const std::string g = "deviceClassName: gpu.nvidia.com";
std::string v1(const std::string& devices) { return claim_yaml("v1", devices); }
std::string tpl(const std::string& version, const std::string& devices) { return claim_yaml(version, devices, true); }

const std::vector<ErrorCase> kErrorCases = {
    {v1("{requests: [{name: a, exactly: {" + g + "}}, {name: b, exactly: {" + g + ", count: '2'}}]}"),
     "spec.devices.requests[1].exactly.count", "integer"},
    {v1("{requests: [{name: b, exactly: {" + g + ", count: 0}}]}"), "spec.devices.requests[0].exactly.count", "at least 1"},
    {v1("{requests: [{name: b, exactly: {" + g + ", count: -3}}]}"), "spec.devices.requests[0].exactly.count", "integer"},
    {v1("{requests: [{name: b, exactly: {" + g + ", count: 1.5}}]}"), "spec.devices.requests[0].exactly.count", "integer"},
    {v1("{requests: [{name: b, exactly: {" + g + ", count: 2.0}}]}"), "spec.devices.requests[0].exactly.count", "integer"},
    {v1("{requests: [{name: b, exactly: {" + g + ", count: 9223372036854775808}}]}"),
     "spec.devices.requests[0].exactly.count", "integer"},
    {v1("{requests: [{name: b, exactly: {" + g + ", allocationMode: Some}}]}"),
     "spec.devices.requests[0].exactly.allocationMode", "ExactCount or All"},
    {v1("{requests: [{name: b, exactly: {" + g + ", allocationMode: all}}]}"),
     "spec.devices.requests[0].exactly.allocationMode", "ExactCount or All"},
    {v1("{requests: [{name: b, exactly: {" + g + ", allocationMode: 1}}]}"),
     "spec.devices.requests[0].exactly.allocationMode", "string"},
    {v1("{requests: [{name: b, exactly: {" + g + ", adminAccess: 'yes'}}]}"),
     "spec.devices.requests[0].exactly.adminAccess", "true or false"},
    {v1("{requests: [{name: b, exactly: {" + g + ", capacity: 7}}]}"), "spec.devices.requests[0].exactly.capacity",
     "object"},
    {v1("{requests: [{name: b, exactly: {" + g + ", capacity: {requests: [memory]}}}]}"),
     "spec.devices.requests[0].exactly.capacity.requests", "object"},
    {tpl("v1beta1", "{requests: [{name: b, firstAvailable: [{name: x, " + g + ", capacity: x}]}]}"),
     "spec.spec.devices.requests[0].firstAvailable[0].capacity", "object"},
    {v1("{requests: [{name: b, exactly: {deviceClassName: 7}}]}"), "spec.devices.requests[0].exactly.deviceClassName",
     "string"},
    {v1("{requests: [{name: b, exactly: {count: 1}}]}"), "spec.devices.requests[0].exactly.deviceClassName", "required"},
    {v1("{requests: [{name: b, exactly: {deviceClassName: ''}}]}"), "spec.devices.requests[0].exactly.deviceClassName",
     "empty"},
    {v1("{requests: [{name: b}]}"), "spec.devices.requests[0]", "exactly one of exactly and firstAvailable"},
    {v1("{requests: [{name: b, exactly: {" + g + "}, firstAvailable: [{name: x, " + g + "}]}]}"),
     "spec.devices.requests[0]", "exactly one of exactly and firstAvailable"},
    {v1("{requests: [{name: b, exactly: [1]}]}"), "spec.devices.requests[0].exactly", "object"},
    {v1("{requests: [{name: 5, exactly: {" + g + "}}]}"), "spec.devices.requests[0].name", "string"},
    {v1("{requests: {name: b}}"), "spec.devices.requests", "list"},
    {v1("{requests: [7]}"), "spec.devices.requests[0]", "object"},
    {v1("{requests: [{name: b, firstAvailable: {name: x}}]}"), "spec.devices.requests[0].firstAvailable", "list"},
    {v1("{requests: [{name: b, firstAvailable: []}]}"), "spec.devices.requests[0].firstAvailable", "empty"},
    {v1("{requests: [{name: b, firstAvailable: [{name: x, " + g + "}, 3]}]}"),
     "spec.devices.requests[0].firstAvailable[1]", "object"},
    {tpl("v1", "{requests: [{name: b, firstAvailable: [{name: x, " + g + "}, {name: y, " + g +
                   "}, {name: z, deviceClassName: [gpu]}]}]}"),
     "spec.spec.devices.requests[0].firstAvailable[2].deviceClassName", "string"},
    {tpl("v1beta2", "{requests: [{name: b, firstAvailable: [{name: x, " + g + ", count: 0}]}]}"),
     "spec.spec.devices.requests[0].firstAvailable[0].count", "at least 1"},
    {v1("{requests: [{name: b, firstAvailable: [{name: 1, " + g + "}]}]}"),
     "spec.devices.requests[0].firstAvailable[0].name", "string"},
    {v1("{requests: [{name: b, exactly: {" + g + ", selectors: {cel: x}}}]}"),
     "spec.devices.requests[0].exactly.selectors", "list"},
    {v1("{requests: [{name: b, exactly: {" + g + ", selectors: [{cel: {expression: a}}, {cel: {expression: 5}}]}}]}"),
     "spec.devices.requests[0].exactly.selectors[1].cel.expression", "string"},
    {v1("{requests: [{name: b, exactly: {" + g + ", selectors: [{cel: x}]}}]}"),
     "spec.devices.requests[0].exactly.selectors[0].cel", "object"},
    {v1("{requests: [{name: b, exactly: {" + g + ", selectors: [x]}}]}"),
     "spec.devices.requests[0].exactly.selectors[0]", "object"},
    {v1("{config: {opaque: {}}}"), "spec.devices.config", "list"},
    {v1("{config: [{opaque: {driver: a}}, 5]}"), "spec.devices.config[1]", "object"},
    {v1("{config: [{requests: [a, 1], opaque: {driver: a}}]}"), "spec.devices.config[0].requests[1]", "string"},
    {v1("{config: [{requests: a}]}"), "spec.devices.config[0].requests", "list"},
    {v1("{config: [{opaque: 1}]}"), "spec.devices.config[0].opaque", "object"},
    {v1("{config: [{opaque: {driver: 1}}]}"), "spec.devices.config[0].opaque.driver", "string"},
    {v1("{config: [{opaque: {driver: gpu.nvidia.com, parameters: [1]}}]}"), "spec.devices.config[0].opaque.parameters",
     "object"},
    {v1("{config: [{opaque: {driver: gpu.nvidia.com, parameters: {kind: 1}}}]}"),
     "spec.devices.config[0].opaque.parameters.kind", "string"},
    {v1("{config: [{opaque: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig, sharing: MPS}}}]}"),
     "spec.devices.config[0].opaque.parameters.sharing", "object"},
    {tpl("v1", "{config: [{opaque: {driver: gpu.nvidia.com, parameters: {sharing: {strategy: [MPS]}}}}]}"),
     "spec.spec.devices.config[0].opaque.parameters.sharing.strategy", "string"},
    {v1("[]"), "spec.devices", "object"},
    {"{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, spec: 1}", "spec", "object"},
    {"{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, spec: {spec: 1}}", "spec.spec", "object"},
    {"{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: 1}", "metadata", "object"},
    {"{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: 1}}", "metadata.name", "string"},
    {"{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {namespace: [a]}}", "metadata.namespace", "string"},
    {tpl("v1beta1", "{requests: [{name: a, count: '1', " + g + "}]}"), "spec.spec.devices.requests[0].count", "integer"},
    {claim_yaml("v1beta1", "{requests: [{name: a}]}"), "spec.devices.requests[0].deviceClassName", "required"},
    {claim_yaml("v1beta1", "{requests: [{name: a, exactly: {" + g + "}}]}"), "spec.devices.requests[0].deviceClassName",
     "required"},
    {claim_yaml("v1beta1", "{requests: [{name: a, " + g + ", firstAvailable: [{name: x, " + g + "}]}]}"),
     "spec.devices.requests[0]", "exactly one of deviceClassName and firstAvailable"},
    {claim_yaml("v1beta1", "{requests: [{name: a, firstAvailable: [{name: x, count: 2}]}]}"),
     "spec.devices.requests[0].firstAvailable[0].deviceClassName", "required"},
    {claim_yaml("v1beta1", "{requests: [{name: a, " + g + ", allocationMode: Every}]}"),
     "spec.devices.requests[0].allocationMode", "ExactCount or All"},
    {claim_yaml("v1beta1", "{requests: [{name: a, " + g + ", adminAccess: 1}]}"), "spec.devices.requests[0].adminAccess",
     "true or false"},
    {"{apiVersion: resource.k8s.io/v1alpha3, kind: ResourceClaim}", "apiVersion", "not a served"},
    {"{apiVersion: resource.k8s.io/v1alpha2, kind: ResourceClaimTemplate}", "apiVersion", "not a served"},
    {"{kind: ResourceClaim}", "apiVersion", "missing"},
    {"{apiVersion: 1, kind: ResourceClaim}", "apiVersion", "missing or not a string"},
    {"{apiVersion: resource.k8s.io/v1, kind: Pod}", "kind", "not a ResourceClaim"},
    {"{apiVersion: resource.k8s.io/v1}", "kind", "missing"},
};

}  // namespace

TEST_CASE("decoding errors name the field from the object root", "[claim]") {
  for (const auto& c : kErrorCases) {
    INFO(c.yaml);
    auto d = decode_yaml(c.yaml);
    REQUIRE(d->error.has_value());
    CHECK(d->error->field == c.field);
    CHECK_THAT(d->error->message, Catch::Contains(c.message));
  }
}

TEST_CASE("claim JSON: duplicate keys, non-objects, a known kind", "[claim]") {
  auto dup = decode_json(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","spec":{"devices":{"requests":[
      {"name":"a","exactly":{"deviceClassName":"other","deviceClassName":"gpu.nvidia.com"}}]}}})");
  REQUIRE(dup->error.has_value());
  CHECK(dup->error->field == "spec.devices.requests[0].exactly");
  CHECK_THAT(dup->error->message, Catch::Contains("duplicate key"));
  auto arr = decode_json("[1]");
  REQUIRE(arr->error.has_value());
  CHECK(arr->error->field.empty());

  // decode_claim_as ignores the object's kind; check_duplicates false skips the scan.
  simdjson::dom::element element;
  REQUIRE(dup->parser.parse(dup->json).get(element) == simdjson::SUCCESS);
  policy::ClaimView view;
  REQUIRE_FALSE(policy::decode_claim_as(element, ClaimKind::Claim, view, false).has_value());
  CHECK(view.requests.at(0).alternatives.at(0).device_class == "other");  // simdjson finds the first
  auto templ = decode_json(R"({"apiVersion":"resource.k8s.io/v1","kind":"Pod","spec":{"spec":{"devices":{"requests":[
      {"name":"a","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}}})");
  REQUIRE(templ->parser.parse(templ->json).get(element) == simdjson::SUCCESS);
  REQUIRE_FALSE(policy::decode_claim_as(element, ClaimKind::Template, view).has_value());
  CHECK(view.kind == ClaimKind::Template);
  CHECK(view.requests.size() == 1);
}

namespace {


// What the corpus checks read from one decoded claim (the views die with its parser).
struct Summary {
  ClaimKind kind = ClaimKind::Claim;
  std::vector<std::string> classes;  // first alternative's class, per request
  std::vector<bool> mps;             // per request
  std::vector<std::string> profiles; // per request, joined
  int64_t slices = 0;
};

Summary summarize(const policy::ClaimView& claim) {
  Summary s;
  s.kind = claim.kind;
  policy::ClaimGpus gpus = policy::count_claim_gpus(claim, policy::GpuCounting{});
  s.slices = gpus.slices;
  for (size_t i = 0; i < claim.requests.size(); ++i) {
    const auto& alts = claim.requests[i].alternatives;
    s.classes.emplace_back(alts.empty() ? "" : alts[0].device_class);
    s.mps.push_back(gpus.requests[i].mps);
    std::string joined;
    for (auto p : gpus.requests[i].profiles) joined += (joined.empty() ? "" : ",") + std::string(p);
    s.profiles.push_back(joined);
  }
  return s;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

TEST_CASE("DRA corpus: every served claim and template decodes", "[claim][corpus]") {
  const fs::path kDra = test_paths::corpus("dra-specs");
  if (kDra.empty()) {
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(kDra))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, Summary> seen;  // "quickstart/v1/gpu-test-mps.yaml#shared-gpu"
  size_t decoded = 0, old_versions = 0;
  for (const auto& file : files) {
    const std::string rel = fs::relative(file, kDra).generic_string();
    INFO(rel);
    auto parsed = webhook::parse_yaml_or_json(read_text(file));
    REQUIRE_FALSE(parsed.error.has_value());
    for (const auto& doc : parsed.documents) {
      if (!doc.value.is_object() || !doc.value.contains("kind") || !doc.value["kind"].is_string()) continue;
      if (!policy::is_claim_kind(doc.value["kind"].get<std::string>(), nullptr)) continue;
      auto d = decode_json(doc.value.dump());
      const std::string version = doc.value.value("apiVersion", "");
      INFO(version << " " << d->claim.name << " line " << doc.line);
      if (!policy::claim_api_version_supported(version)) {
        ++old_versions;
        REQUIRE(d->error.has_value());
        CHECK(d->error->field == "apiVersion");
        continue;
      }
      if (d->error) FAIL_CHECK(d->error->field << ": " << d->error->message);
      ++decoded;
      seen[rel + "#" + std::string(d->claim.name)] = summarize(d->claim);
    }
  }
  std::cout << "DRA corpus: " << decoded << " claims/templates decoded, " << old_versions
            << " of unserved versions skipped\n";
  CHECK(decoded >= 25);
  CHECK(old_versions >= 8);

  const Summary& mps = seen.at("quickstart/v1/gpu-test-mps.yaml#shared-gpu");
  CHECK(mps.kind == ClaimKind::Template);
  CHECK(mps.classes == std::vector<std::string>{"gpu.nvidia.com"});
  CHECK(mps.mps == std::vector<bool>{true});
  CHECK(mps.slices == 7);
  for (const char* v : {"v1", "v1beta1"}) {
    INFO(v);
    const std::string q = std::string("quickstart/") + v + "/";
    const Summary& mig = seen.at(q + "gpu-test4.yaml#mig-devices");
    CHECK(mig.classes == std::vector<std::string>(4, "mig.nvidia.com"));
    CHECK(mig.profiles == std::vector<std::string>{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"});
    CHECK(mig.slices == 7);  // 1 + 1 + 2 + 3 slices: exactly one GPU
    CHECK(seen.at(q + "gpu-test5.yaml#multiple-gpus").mps == std::vector<bool>{false, true});
    CHECK(seen.at(q + "gpu-test5.yaml#multiple-gpus").slices == 14);
    CHECK(seen.at(q + "gpu-test6.yaml#a100").mps == std::vector<bool>{false});  // TimeSlicing
    CHECK(seen.at(q + "gpu-test6.yaml#a100").slices == 7);
    CHECK(seen.at(q + "gpu-test-mps.yaml#shared-gpu").mps == std::vector<bool>{true});
    CHECK(seen.at(q + "gpu-test3.yaml#single-gpu").kind == ClaimKind::Claim);
    CHECK(seen.at(q + "imex-test1.yaml#deployment0-imex-channel").slices == 0);  // not a GPU class
  }
  CHECK(seen.at("quickstart/v1/gpu-test-vfiopci.yaml#single-gpu").slices == 7);  // v1beta1's copy is v1alpha3
  CHECK(seen.at("quickstart/gpu-test8.yaml#double-gpu").slices == 14);
  CHECK(seen.at("quickstart/v1/gpu-test-vfio-config.yaml#single-gpu-full-vfioconfig").mps == std::vector<bool>{false});
}
