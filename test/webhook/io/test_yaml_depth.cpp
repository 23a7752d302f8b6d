// Objects read as deep as the API server stores them (kMaxObjectDepth, 10,000 levels): JSON, YAML
// flow and block style, read without recursion (yaml-cpp stops at 500 levels; such a stream is
// read again by libyaml), with the same trees, marks and checks; one level more is an error at its
// line. Policies keep the small default depth.
#include <catch2/catch.hpp>

#include <string>

#include "webhook/io/yaml_json.h"

using namespace gpu_admission;
using webhook::kMaxObjectDepth;
using webhook::parse_yaml_or_json;
using webhook::YamlLimits;

namespace {

YamlLimits object_limits() {
  YamlLimits limits;
  limits.max_depth = kMaxObjectDepth;
  return limits;
}

// Levels of nesting of `value` (a scalar is 0), walked without recursion; `leaf` gets the
// innermost value.
int depth_of(const Json& value, Json* leaf = nullptr) {
  int depth = 0;
  const Json* at = &value;
  while ((at->is_array() || at->is_object()) && !at->empty()) {
    ++depth;
    at = at->is_array() ? &at->front() : &at->begin().value();
  }
  if (at->is_array() || at->is_object()) ++depth;  // an empty container is a level too
  if (leaf) *leaf = *at;
  return depth;
}

// `levels` nested block sequences in compact form ("- - - x"), under `indent` spaces.
std::string compact_lists(int levels, const std::string& leaf, size_t indent) {
  std::string out(indent, ' ');
  for (int i = 0; i < levels; ++i) out += "- ";
  return out + leaf + "\n";
}

}  // namespace

TEST_CASE("depth: a JSON list 10,000 levels deep is read, one more is an error at its place", "[yaml][depth]") {
  const int n = kMaxObjectDepth;
  auto ok = parse_yaml_or_json(std::string(n, '[') + "7" + std::string(n, ']'), object_limits());
  REQUIRE_FALSE(ok.error);
  REQUIRE(ok.documents.size() == 1);
  Json leaf;
  CHECK(depth_of(ok.documents[0].value, &leaf) == n);
  CHECK(leaf == 7);

  // Objects and arrays in turn, on several lines: the error names the line and column of the
  // bracket one level too deep.
  std::string text = "{\"a\":\n";
  for (int i = 1; i < n; ++i) text += i % 2 ? "[" : "{\"b\":";
  text += "\n  [1]";
  for (int i = n - 1; i >= 1; --i) text += i % 2 ? "]" : "}";
  text += "}\n";
  auto deep = parse_yaml_or_json(text, object_limits());
  REQUIRE(deep.error);
  CHECK(deep.error->message == "nesting deeper than 10000 levels");
  CHECK(deep.error->mark.line == 3);
  CHECK(deep.error->mark.column == 3);
  // With the deepest level removed, it is read.
  text.replace(text.find("\n  [1]"), 6, "\n  1");
  auto read = parse_yaml_or_json(text, object_limits());
  REQUIRE_FALSE(read.error);
  CHECK(depth_of(read.documents[0].value) == n);
}

TEST_CASE("depth: YAML flow and block documents 10,000 levels deep are read", "[yaml][depth]") {
  const int n = kMaxObjectDepth;
  SECTION("flow style under a key") {
    const std::string text = "a: " + std::string(n - 1, '[') + "x" + std::string(n - 1, ']') + "\n";
    auto ok = parse_yaml_or_json(text, object_limits());
    REQUIRE_FALSE(ok.error);
    Json leaf;
    CHECK(depth_of(ok.documents[0].value, &leaf) == n);
    CHECK(leaf == "x");
    auto deep = parse_yaml_or_json("a: " + std::string(n, '[') + "x" + std::string(n, ']') + "\n", object_limits());
    REQUIRE(deep.error);
    CHECK(deep.error->message == "invalid YAML: nesting deeper than 10000 levels");
    CHECK(deep.error->mark.line == 1);
  }
  SECTION("block mappings, then block sequences") {
    std::string text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\nspec:\n";
    for (int i = 0; i < 100; ++i) text += std::string(static_cast<size_t>(i + 1) * 2, ' ') + "k" + std::to_string(i) + ":\n";
    text += compact_lists(n - 101, "true", 202);
    text += "status: {phase: Pending}\n";
    auto ok = parse_yaml_or_json(text, object_limits());
    REQUIRE_FALSE(ok.error);
    const Json& pod = ok.documents[0].value;
    CHECK(pod["metadata"]["name"] == "deep");
    CHECK(pod["status"]["phase"] == "Pending");
    Json leaf;
    CHECK(depth_of(pod["spec"], &leaf) == n - 1);
    CHECK(leaf == true);
    // Marks above the deep part are kept.
    CHECK(ok.documents[0].marks.find("metadata.name").line == 4);
    CHECK(ok.documents[0].marks.find("status.phase").line == 107);

    text.replace(text.find("- true"), 6, "- - true");
    auto deep = parse_yaml_or_json(text, object_limits());
    REQUIRE(deep.error);
    CHECK(deep.error->message == "invalid YAML: nesting deeper than 10000 levels");
    CHECK(deep.error->mark.line == 106);
  }
}

TEST_CASE("depth: a deep stream reads like a shallow one (tags, anchors, merges, documents)", "[yaml][depth]") {
  // yaml-cpp reads `shallow`; with a deep key added, libyaml reads the whole stream: what both
  // read must be the same.
  const std::string shallow = R"(base: &base {cpu: "1", gpu: 2}
pod:
  <<: *base
  gpu: 4
  name: !!str 123
  empty:
  nulls: [~, null, ""]
  quoted: 'yes'
  block: |
    two
    lines
  bin: !!binary aGVsbG8=
  local: !thing text
  list: &l [a, b]
  again: *l
---
second: document
)";
  auto plain = parse_yaml_or_json(shallow, object_limits());
  REQUIRE_FALSE(plain.error);
  std::string deep_text = shallow;
  deep_text.insert(deep_text.find("---"), "deep: " + std::string(1'000, '[') + std::string(1'000, ']') + "\n");
  auto deep = parse_yaml_or_json(deep_text, object_limits());
  REQUIRE_FALSE(deep.error);
  REQUIRE(deep.documents.size() == 2);
  Json& first = deep.documents[0].value;
  CHECK(depth_of(first["deep"]) == 1'000);
  first.erase("deep");  // not copied: a copy of a deep tree recurses once per level
  CHECK(first == plain.documents[0].value);
  CHECK(deep.documents[1].value == plain.documents[1].value);
  CHECK(deep.documents[1].line == plain.documents[1].line + 1);
  CHECK(deep.documents[0].marks.find("pod.quoted").line == 8);
  CHECK(first["pod"]["gpu"] == 4);
  CHECK(first["pod"]["name"] == "123");
  CHECK(first["pod"]["empty"].is_null());
  CHECK(first["pod"]["bin"] == "hello");
}

TEST_CASE("depth: errors in a deep stream name their place and path", "[yaml][depth]") {
  const std::string deep = "deep: " + std::string(600, '[') + std::string(600, ']') + "\n";
  auto dup = parse_yaml_or_json(deep + "a:\n  b: 1\n  b: 2\n", object_limits());
  REQUIRE(dup.error);
  CHECK(dup.error->message == "invalid YAML: duplicate key \"b\" in a");
  CHECK(dup.error->mark.line == 4);
  // A duplicate below the depth where paths are kept: the path is built when the error names it.
  std::string nested = "top:\n" + compact_lists(300, "{k: 1, k: 2}", 2);
  auto deep_dup = parse_yaml_or_json(nested, object_limits());
  REQUIRE(deep_dup.error);
  std::string path = "top";
  for (int i = 0; i < 300; ++i) path += "[0]";
  CHECK(deep_dup.error->message == "invalid YAML: duplicate key \"k\" in " + path);
  CHECK(deep_dup.error->mark.line == 2);
  auto syntax = parse_yaml_or_json(deep + "a: [1\nb: 2\n", object_limits());
  REQUIRE(syntax.error);
  CHECK(syntax.error->message.starts_with("invalid YAML: "));
  CHECK(syntax.error->mark.line == 3);
  auto alias = parse_yaml_or_json(deep + "a: *nowhere\n", object_limits());
  REQUIRE(alias.error);
  CHECK(alias.error->message.find("anchor") != std::string::npos);
  CHECK(alias.error->mark.line == 2);
}

TEST_CASE("depth: policies and other files keep the default depth", "[yaml][depth]") {
  CHECK(YamlLimits{}.max_depth == 128);
  auto json = parse_yaml_or_json(std::string(129, '[') + std::string(129, ']'));
  REQUIRE(json.error);
  CHECK(json.error->message == "nesting deeper than 128 levels");
  CHECK(json.error->mark.column == 129);
  auto yaml = parse_yaml_or_json("a:\n" + compact_lists(128, "x", 2));
  REQUIRE(yaml.error);
  CHECK(yaml.error->message == "invalid YAML: nesting deeper than 128 levels");
  CHECK_FALSE(parse_yaml_or_json("a:\n" + compact_lists(127, "x", 2)).error);
}
