// Ambiguous and malformed JSON on the request path (docs/hardening.md, "Ambiguous JSON"): keys
// that are read twice, in the envelope (HTTP 400: not even the uid can be trusted) or in the
// object (a refusal in the AdmissionReview, whatever the failurePolicy), also when spelled with
// escapes; keys that are not read may repeat; content after the review; the two shapes of a
// pod's resourceClaims naming different claims.
#include <catch2/catch.hpp>

#include <string>

#include "webhook/admission/admission_test_support.h"

using namespace admission_test;

namespace {

// Inserts `text` right after the first `needle` of `body`.
std::string insert_after(std::string body, const std::string& needle, const std::string& text) {
  const auto pos = body.find(needle);
  REQUIRE(pos != std::string::npos);
  body.insert(pos + needle.size(), text);
  return body;
}

json refusal(Fixture& f, const std::string& body) {
  webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, body);
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  json resp = json::parse(reply.body)["response"];
  CHECK(resp["allowed"] == false);
  CHECK(resp["status"]["code"] == 400);
  return resp;
}

}  // namespace

TEST_CASE("a key read twice in the object is refused in the review, wherever it is", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  struct Case {
    const char* needle;  // inserted after this
    const char* text;
    const char* field;   // named in the message
  } cases[] = {
      {"\"name\":\"main\"", ",\"securityContext\":{},\"securityContext\":{\"privileged\":true}", "spec.containers[0]"},
      {"\"name\":\"main\"", ",\"securityContext\":{\"privileged\":false,\"privileged\":true}",
       "spec.containers[0].securityContext"},
      {"\"spec\":{", "\"hostPID\":false,\"hostPID\":true,", "spec"},
      {"\"spec\":{", "\"containers\":[],", "spec"},
      {"\"metadata\":{", "\"namespace\":\"kube-system\",", "metadata"},
      {"\"limits\":{", "\"nvidia.com/gpu\":0,", "spec.containers[0].resources.limits"},
      // "void" seen, "0" applied (Go keeps the last). An env list naming no variable a rule reads
      // is not read at all (test/policy/decoding/test_env_names.cpp).
      {"\"name\":\"main\"", ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"void\",\"value\":\"0\"}]",
       "spec.containers[0].env[0]"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    json resp = refusal(f, insert_after(body, c.needle, c.text));
    const std::string message = resp["status"]["message"];
    CHECK(message.find("duplicate key") != std::string::npos);
    CHECK(message.find(std::string("request.object field ") + c.field + ":") != std::string::npos);
  }
}

TEST_CASE("a repeated key is found in read maps of every size", "[admission][ambiguity]") {
  // Maps of up to 16 keys compare each pair, larger ones sort a copy: both sides of the line,
  // the repeat first, last and in between, in labels and in a container's limits.
  Fixture f;
  for (size_t size : {2, 15, 16, 17, 18, 40}) {
    for (size_t repeat_at : {size_t{0}, size / 2, size - 1}) {
      INFO("map of " << size << " keys repeating key " << repeat_at);
      json pod = gpu_pod();
      for (size_t i = 0; i < size; ++i) {
        pod["metadata"]["labels"]["label-" + std::to_string(i)] = "x";
        pod["spec"]["containers"][0]["resources"]["limits"]["example.com/r" + std::to_string(i)] = "1";
      }
      const std::string clean = review(pod).dump();
      json resp = call(f, webhook::Endpoint::Validate, review(pod))["response"];
      INFO(resp.dump());
      CHECK(resp.dump().find("duplicate key") == std::string::npos);  // judged (by tenant-pool), not refused
      CHECK(resp["status"]["code"] != 400);
      const std::pair<const char*, const char*> maps[] = {{"\"labels\":{", "label-"}, {"\"limits\":{", "example.com/r"}};
      for (const auto& [needle, prefix] : maps) {
        const std::string key = prefix + std::to_string(repeat_at);
        json refused = refusal(f, insert_after(clean, needle, "\"" + key + "\":\"1\","));
        const std::string message = refused["status"]["message"];
        CHECK(message.find("duplicate key \"" + key + "\"") != std::string::npos);
      }
    }
  }
}

TEST_CASE("keys are compared unescaped, as the API server's decoder reads them", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  // "\u0073ecurityContext" is "securityContext": a second, privileged one.
  const std::string twice = insert_after(
      body, "\"name\":\"main\"", R"(,"securityContext":{},"\u0073ecurityContext":{"privileged":true})");
  json resp = refusal(f, twice);
  CHECK(resp["status"]["message"].get<std::string>().find("duplicate key \"securityContext\"") != std::string::npos);
  // Spelled with an escape alone, it is read: a privileged container is denied.
  const std::string escaped = insert_after(body, "\"name\":\"main\"", R"(,"\u0073ecurityContext":{"privileged":true})");
  webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, escaped);
  json denied = json::parse(reply.body)["response"];
  CHECK(denied["allowed"] == false);
  CHECK(denied["status"]["message"].get<std::string>().find("[privileged]") != std::string::npos);
}

TEST_CASE("a key read twice in the envelope is a 400: the request cannot be trusted", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  for (const char* text : {R"("operation":"DELETE",)", R"("namespace":"kube-system",)", R"("object":{},)",
                                 R"("userInfo":{"username":"system:admin"},)"}) {
    INFO(text);
    webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, insert_after(body, "\"request\":{", text));
    CHECK(reply.status == 400);
    CHECK(reply.body.find("ambiguous JSON: request: duplicate key") != std::string::npos);
  }
  webhook::HttpReply reply = f.service.handle(
      webhook::Endpoint::Validate, insert_after(body, "\"userInfo\":{", R"("username":"system:admin",)"));
  CHECK(reply.status == 400);
  CHECK(reply.body.find("request.userInfo: duplicate key \"username\"") != std::string::npos);
}

TEST_CASE("keys that are not read may repeat", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  // image and terminationMessagePath are not read: whichever wins, the decision is the same.
  const std::string repeated =
      insert_after(body, "\"name\":\"main\"", R"(,"terminationMessagePath":"/a","terminationMessagePath":"/b")");
  webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, repeated);
  REQUIRE(reply.status == 200);
  webhook::HttpReply plain = f.service.handle(webhook::Endpoint::Validate, body);
  CHECK(json::parse(reply.body)["response"] == json::parse(plain.body)["response"]);
  // Nor is an env list that names no variable a rule reads, entries included.
  const std::string unread_env =
      insert_after(body, "\"name\":\"main\"", R"(,"env":[{"name":"A","value":"void","value":"0","name":"B"}])");
  reply = f.service.handle(webhook::Endpoint::Validate, unread_env);
  REQUIRE(reply.status == 200);
  CHECK(json::parse(reply.body)["response"] == json::parse(plain.body)["response"]);
}

TEST_CASE("content after the review, or a truncated one, is invalid JSON", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  for (const std::string& bad : {body + "{}", body + " x", body.substr(0, body.size() - 1),
                                body.substr(0, body.size() / 2)}) {
    webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, bad);
    INFO(bad.substr(bad.size() > 40 ? bad.size() - 40 : 0));
    CHECK(reply.status == 400);
    CHECK(reply.body.find("invalid JSON") != std::string::npos);
  }
}

TEST_CASE("malformed JSON inside the object is refused, never skipped", "[admission][ambiguity]") {
  Fixture f;
  const std::string body = review(gpu_pod()).dump();
  for (const char* text : {R"(,"securityContext":{"privileged":tru})", R"(,"securityContext":{"privileged":nul})",
                                 R"(,"resources":{"limits":{"nvidia.com/gpu":1e999999}})"}) {
    INFO(text);
    std::string bad = insert_after(body, "\"name\":\"main\"", text);
    webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, bad);
    INFO(reply.body);
    if (reply.status == 200) {
      json resp = json::parse(reply.body)["response"];
      CHECK(resp["allowed"] == false);
    } else {
      CHECK(reply.status == 400);
    }
  }
}

TEST_CASE("a pod claim named differently directly and under source is refused", "[admission][ambiguity]") {
  Fixture f;
  json pod = gpu_pod();
  pod["spec"]["resourceClaims"] = json::array(
      {{{"name", "gpu"}, {"resourceClaimName", "eight-gpus"}, {"source", {{"resourceClaimName", "one-gpu"}}}}});
  json resp = refusal(f, review(pod).dump());
  CHECK(resp["status"]["message"].get<std::string>().find("spec.resourceClaims[0]") != std::string::npos);
  // The same claim in both shapes is not ambiguous.
  pod["spec"]["resourceClaims"][0]["source"]["resourceClaimName"] = "eight-gpus";
  webhook::HttpReply reply = f.service.handle(webhook::Endpoint::Validate, review(pod).dump());
  CHECK(reply.body.find("ambiguous") == std::string::npos);
}
