// What README.md and examples/README.md quote is what the product prints: README's train.yaml
// through `check` (its text output, with the `...` it shortens) and through /mutate then /validate
// (the denial kubectl shows); every `gpu-admission test ... # N passed, M failed` line of the
// README files and docs is run; the summary examples/README.md quotes for the examples' `check`.
// docs/deployment.md's rollout walk is run through `serve` by test_serve_rollout_walk.cpp.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "webhook/admission/admission.h"
#include "webhook/cli/cli_test_support.h"
#include "webhook/doc_blocks.h"
#include "webhook/io/default_policy.h"
#include "webhook/io/policy_file.h"
#include "webhook/io/yaml_json.h"
#include "webhook/ops/base64.h"

namespace {

using cli_test::run_cli;
using cli_test::TempDir;
using gpu_admission::Json;
namespace webhook = gpu_admission::webhook;

const std::string kSource = test_paths::source_dir();

// An AdmissionReview of `pod` (a CREATE by alice).
Json review_of(const Json& pod) {
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
          {"request", {{"uid", "readme"}, {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                       {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                       {"name", pod["metadata"]["name"]}, {"namespace", pod["metadata"]["namespace"]},
                       {"operation", "CREATE"}, {"userInfo", {{"username", "alice"}}}, {"object", pod}}}};
}

// The API server's chain under the built-in policy: /mutate, its patch applied, then /validate.
Json validate_after_mutate(const Json& pod) {
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, &metrics, &logger};
  auto load = webhook::load_policy_text(webhook::default_policy_yaml(), "default");
  REQUIRE(load.ok());
  holder.set(load.policy);
  const Json mutated_reply = Json::parse(service.handle(webhook::Endpoint::Mutate, review_of(pod).dump()).body);
  Json object = pod;
  if (mutated_reply["response"].contains("patch")) {
    const auto patch = webhook::base64_decode(mutated_reply["response"]["patch"].get<std::string>());
    REQUIRE(patch);
    object = object.patch(Json::parse(*patch));
  }
  return Json::parse(service.handle(webhook::Endpoint::Validate, review_of(object).dump()).body)["response"];
}

Json yaml_object(const std::string& text) {
  const auto parsed = webhook::parse_yaml_or_json(text);
  REQUIRE_FALSE(parsed.error);
  REQUIRE(parsed.documents.size() == 1);
  return parsed.documents[0].value;
}

}  // namespace

TEST_CASE("docs: a quoted output matches line for line, `...` standing for any lines", "[cli][docs]") {
  using doc_test::matches_quote;
  const std::vector<std::string> quoted = {"a", "  ...", "z"};
  CHECK(matches_quote(quoted, {"a", "z"}));
  CHECK(matches_quote(quoted, {"a", "b", "c", "z"}));
  CHECK_FALSE(matches_quote(quoted, {"a", "b"}));
  CHECK_FALSE(matches_quote(quoted, {"a", "z", "extra"}));
  CHECK_FALSE(matches_quote({"a", "b"}, {"a", "c"}));
  CHECK(matches_quote({"a", "..."}, {"a", "b", "c"}));
}

TEST_CASE("README: train.yaml through check prints what the README quotes", "[cli][docs]") {
  const std::string readme = doc_test::read_doc("README.md");
  TempDir dir;
  dir.file("train.yaml", doc_test::marked_block(readme, "readme-train"));
  const auto quoted = doc_test::lines_of(doc_test::marked_block(readme, "readme-check"));
  REQUIRE(quoted.size() > 2);
  REQUIRE(quoted[0] == "$ build/gpu-admission check train.yaml");
  const auto r = run_cli({"check", "train.yaml"}, dir.path.string());
  INFO(cli_test::describe(r));
  CHECK(r.code == 1);  // denied
  CHECK(doc_test::matches_quote({quoted.begin() + 1, quoted.end()}, doc_test::lines_of(r.out)));
}

TEST_CASE("README: the denial kubectl shows for train.yaml is /validate's after /mutate", "[cli][docs]") {
  const std::string readme = doc_test::read_doc("README.md");
  const Json pod = yaml_object(doc_test::marked_block(readme, "readme-train"));
  const auto quoted = doc_test::lines_of(doc_test::marked_block(readme, "readme-denial"));
  REQUIRE(quoted.size() == 2);
  CHECK(quoted[0] == "$ kubectl apply -f train.yaml");
  // kubectl's words around the webhook's message (what the API server and kubectl add).
  const std::string prefix = "Error from server (Forbidden): error when creating \"train.yaml\": admission webhook "
                             "\"validate.gpu-admission.io\" denied the request: ";
  REQUIRE(quoted[1].rfind(prefix, 0) == 0);
  const Json response = validate_after_mutate(pod);
  INFO(response.dump());
  CHECK(response["allowed"] == false);
  CHECK(response["status"]["message"] == quoted[1].substr(prefix.size()));
}

TEST_CASE("docs: every `gpu-admission test ...  # N passed` line gives that count", "[cli][docs]") {
  const std::regex line(R"(^gpu-admission (test [^#]*?)\s+# (\d+ passed, \d+ failed)\s*$)");
  int found = 0;
  for (const char* doc : {"README.md", "examples/README.md", "docs/ci.md", "docs/deployment.md", "docs/audit.md"}) {
    for (const std::string& text : doc_test::lines_of(doc_test::read_doc(doc))) {
      std::smatch m;
      if (!std::regex_match(text, m, line)) continue;
      ++found;
      std::vector<std::string> args;
      std::istringstream words(m[1].str());
      for (std::string w; words >> w;) args.push_back(w);
      INFO(doc << ": " << text);
      const auto r = run_cli(args, kSource);
      INFO(cli_test::describe(r));
      CHECK(r.out.find("\n" + m[2].str() + "\n") != std::string::npos);
    }
  }
  CHECK(found >= 2);  // examples/README.md: the suite and the rollout suites
}

TEST_CASE("examples/README.md: the check of the examples ends with the quoted summary", "[cli][docs]") {
  const std::string text = doc_test::read_doc("examples/README.md");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(R"(is the summary: `([^`]+)`)")));
  const auto r = run_cli({"check", "--policy", "examples/policy.yaml", "examples/manifests/"}, kSource);
  INFO(cli_test::describe(r));
  const auto lines = doc_test::lines_of(r.out);
  REQUIRE(lines.size() > 2);
  CHECK(lines.back() == m[1].str());
  CHECK(lines[lines.size() - 2] == "policy: examples/policy.yaml");
}
