// Annotations as the pod decoder reads them: every key decoded, the values of the annotations
// gpu-admission reads (kReadAnnotations) decoded, the others kept as their JSON text (escapes
// as sent) but still required to be strings. Whatever spelling a tenant picks for a key or for
// the mig-profile value, the decision is the one for the decoded text.
#include <catch2/catch.hpp>

#include <string>

#include "policy/evaluation/evaluator.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/base/tenant_labels.h"
#include "test/policy/decoded_pod.h"
#include "webhook/io/policy_file.h"

namespace policy = gpu_admission::policy;

namespace {

// A pod whose metadata.annotations is `annotations` (JSON text, written as is).
std::string pod_with(const std::string& annotations) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"research","annotations":)" +
         annotations + R"(},"spec":{"containers":[{"name":"main","image":"cuda"}]}})";
}

struct Decoded : DecodedPod {
  using DecodedPod::DecodedPod;
  std::string_view value(std::string_view key) const {
    for (const auto& [k, v] : view.annotations)
      if (k == key) return v;
    FAIL("no annotation " << std::string(key));
    return {};
  }
};

}  // namespace

TEST_CASE("the mig-profile annotation's value is decoded whatever its spelling") {
  for (const std::string value : {R"("1g.10gb")", R"("1g.10\u0067b")", R"("\u0031g.10gb")", R"("1g\u002e10gb")"}) {
    for (const std::string key : {R"("gpu-admission.io/mig-profile")", R"("gpu-admission.io\/mig-profile")",
                                  R"("gpu-admission.io\u002fmig-profile")"}) {
      INFO(key << ": " << value);
      Decoded d(pod_with("{" + key + ":" + value + "}"));
      REQUIRE_FALSE(d.error);
      bool found = false;
      CHECK(d.view.annotation(policy::kMigProfileAnnotation, &found) == "1g.10gb");
      CHECK(found);
    }
  }
}

TEST_CASE("other annotations keep their value undecoded, whatever blanks follow it") {
  const std::string applied = R"({\"kind\":\"Pod\",\"note\":\"tab\there\"})";
  for (const std::string after : {"", " ", "\n\t  "}) {
    Decoded d(pod_with(R"({"kubectl.kubernetes.io/last-applied-configuration":")" + applied + "\"" + after +
                       R"(,"empty":"")" + after + R"(,"plain":"x y")" + after + "}"));
    REQUIRE_FALSE(d.error);
    CHECK(d.value("kubectl.kubernetes.io/last-applied-configuration") == applied);
    CHECK(d.value("empty").empty());
    CHECK(d.value("plain") == "x y");
  }
}

TEST_CASE("annotation keys are decoded, so an escaped device prefix is still seen") {
  Decoded d(pod_with(R"({"cdi.k8s.io\/gpu":"nvidia.com/gpu=all","x":"y"})"));
  REQUIRE_FALSE(d.error);
  CHECK(d.value("cdi.k8s.io/gpu") == "nvidia.com/gpu=all");  // undecoded, but has no escape

  const auto loaded = gpu_admission::webhook::load_policy_file("");
  REQUIRE(loaded.policy);
  policy::Decision decision;
  policy::evaluate(*loaded.policy, d.view, policy::EvalOptions{}, decision);
  bool flagged = false;
  for (const auto& f : decision.findings) flagged = flagged || f.field.find("cdi.k8s.io/gpu") != std::string::npos;
  CHECK(flagged);
}

TEST_CASE("an annotation value that is not a string is refused, read or not") {
  for (const std::string key : {"gpu-admission.io/mig-profile", "other"}) {
    for (const std::string value : {"1", "true", "{}", "[\"a\"]"}) {
      INFO(key << ": " << value);
      Decoded d(pod_with("{\"" + key + "\":" + value + "}"));
      REQUIRE(d.error);
      CHECK(d.error->message.find("must be a string") != std::string::npos);
    }
  }
}

TEST_CASE("a repeated annotation key is refused when its values are not decoded") {
  Decoded d(pod_with(R"({"a":"1","\u0061":"2"})"));
  REQUIRE(d.error);
}
