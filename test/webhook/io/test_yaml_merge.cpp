// YAML merge keys (`<<`) as kubectl reads them (sigs.k8s.io/yaml, go-yaml v2): aliases, lists
// and inline mappings are merged; keys written after `<<` win; a key written before `<<` that the
// merge would change is an error (go-yaml v2 and YAML 1.1 disagree there); bad values, duplicate
// keys, quoted '<<', nested merges, source marks and the alias-expansion bound.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "webhook/io/yaml_json.h"

using namespace gpu_admission;
using webhook::parse_yaml_or_json;

namespace {

// The first document, parsed without error, with its keys sorted (merged keys come in no
// particular order).
nlohmann::json parse_ok(const std::string& text) {
  auto parsed = parse_yaml_or_json(text);
  INFO(text);
  INFO((parsed.error ? parsed.error->message : std::string()));
  REQUIRE_FALSE(parsed.error);
  REQUIRE(parsed.documents.size() == 1);
  return nlohmann::json::parse(parsed.documents[0].value.dump());
}

webhook::YamlError parse_error(const std::string& text, const webhook::YamlLimits& limits = {}) {
  auto parsed = parse_yaml_or_json(text, limits);
  INFO(text);
  REQUIRE(parsed.error);
  CHECK(parsed.documents.empty());
  return *parsed.error;
}

const std::string kAnchors = "a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\n";

}  // namespace

TEST_CASE("merge key: an alias of a mapping is merged", "[yaml][merge]") {
  nlohmann::json v = parse_ok("base: &base {privileged: true, runAsUser: 0}\nsc:\n  <<: *base\n  name: x\n");
  CHECK(v["sc"] == nlohmann::json::parse(R"({"privileged": true, "runAsUser": 0, "name": "x"})"));
  CHECK_FALSE(v["sc"].contains("<<"));
  // Block style with the alias on the next line, and flow style.
  CHECK(parse_ok(kAnchors + "c:\n  <<:\n    *a\n")["c"] == nlohmann::json::parse(R"({"x": 1, "y": 1})"));
  CHECK(parse_ok(kAnchors + "c: {<<: *b}\n")["c"] == nlohmann::json::parse(R"({"x": 2, "z": 2})"));
  // At the root of a document, and in a mapping inside a sequence.
  CHECK(parse_ok("- &m {k: v}\n- {<<: *m, l: w}\n")[1] == nlohmann::json::parse(R"({"k": "v", "l": "w"})"));
}

TEST_CASE("merge key: a list of mappings is merged in order, earlier ones winning", "[yaml][merge]") {
  CHECK(parse_ok(kAnchors + "c:\n  <<: [*a, *b]\n")["c"] == nlohmann::json::parse(R"({"x": 1, "y": 1, "z": 2})"));
  CHECK(parse_ok(kAnchors + "c:\n  <<: [*b, *a]\n")["c"] == nlohmann::json::parse(R"({"x": 2, "y": 1, "z": 2})"));
  CHECK(parse_ok(kAnchors + "c:\n  <<:\n    - *b\n    - *a\n")["c"] == nlohmann::json::parse(R"({"x": 2, "y": 1, "z": 2})"));
  CHECK(parse_ok(kAnchors + "c: {<<: []}\n")["c"] == nlohmann::json::object());
  // Two sources giving the same key are not duplicates; nor is the same alias twice.
  CHECK(parse_ok(kAnchors + "c: {<<: [*a, *a]}\n")["c"] == nlohmann::json::parse(R"({"x": 1, "y": 1})"));
}

TEST_CASE("merge key: keys written after << win, before << a different value is an error", "[yaml][merge]") {
  CHECK(parse_ok(kAnchors + "c:\n  <<: *a\n  x: 9\n")["c"] == nlohmann::json::parse(R"({"x": 9, "y": 1})"));
  CHECK(parse_ok(kAnchors + "c:\n  <<: [*a, *b]\n  z: 9\n  x: 8\n")["c"] == nlohmann::json::parse(R"({"x": 8, "y": 1, "z": 9})"));
  // Replacing a merged mapping replaces it whole (no deep merge).
  CHECK(parse_ok("m: &m {sc: {privileged: true, runAsUser: 0}}\nc:\n  <<: *m\n  sc: {runAsUser: 1}\n")["c"] ==
        nlohmann::json::parse(R"({"sc": {"runAsUser": 1}})"));
  // Written before `<<` with the merged value: no conflict, whatever the reader.
  CHECK(parse_ok(kAnchors + "c:\n  x: 1\n  <<: *a\n")["c"] == nlohmann::json::parse(R"({"x": 1, "y": 1})"));
  CHECK(parse_ok(kAnchors + "c:\n  x: 1\n  <<: [*a, *b]\n")["c"] == nlohmann::json::parse(R"({"x": 1, "y": 1, "z": 2})"));
  CHECK(parse_ok("c: {a: 1, <<: [{a: 1}, {a: 2}]}\n")["c"] == nlohmann::json::parse(R"({"a": 1})"));  // v2: 1 too
  CHECK(parse_ok("m: &m {n: {p: 1, q: [2]}}\nc: {n: {q: [2], p: 1}, <<: *m}\n")["c"]["n"]["p"] == 1);  // key order
  // Written before `<<` with another value: go-yaml v2 (kubectl) takes the merged value, YAML 1.1
  // and go-yaml v3 the written one. A gate must not guess: `privileged: false` followed by a merge
  // of `privileged: true` is applied privileged by kubectl.
  auto e = parse_error("root: &root {privileged: true}\nsc:\n  privileged: false\n  <<: *root\n");
  CHECK(e.message.find("key \"privileged\" in sc is written before \"<<\"") != std::string::npos);
  CHECK(e.message.find("kubectl") != std::string::npos);
  CHECK(e.mark.line == 4);
  CHECK(e.mark.column == 7);
  CHECK_FALSE(parse_error(kAnchors + "c:\n  x: 2\n  <<: [*a, *b]\n").message.empty());
}

TEST_CASE("merge key: inline mappings and lists of them are merged", "[yaml][merge]") {
  CHECK(parse_ok("c:\n  <<: {a: 1}\n  b: 2\n")["c"] == nlohmann::json::parse(R"({"a": 1, "b": 2})"));
  CHECK(parse_ok("c:\n  <<:\n    a: 1\n    n: {deep: [1, 2]}\n")["c"] == nlohmann::json::parse(R"({"a": 1, "n": {"deep": [1, 2]}})"));
  CHECK(parse_ok("c: {<<: [{a: 1}, {a: 2, b: 2}], b: 3}\n")["c"] == nlohmann::json::parse(R"({"a": 1, "b": 3})"));
  CHECK(parse_ok(kAnchors + "c: {<<: [{x: 0}, *a]}\n")["c"] == nlohmann::json::parse(R"({"x": 0, "y": 1})"));
  // An anchored merge value stays what it is when aliased elsewhere.
  nlohmann::json v = parse_ok(kAnchors + "c: {<<: &m {k: 1}}\nd: *m\ne: {<<: &l [*a, {w: 1}]}\nf: *l\n");
  CHECK(v["d"] == nlohmann::json::parse(R"({"k": 1})"));
  CHECK(v["e"] == nlohmann::json::parse(R"({"x": 1, "y": 1, "w": 1})"));
  CHECK(v["f"] == nlohmann::json::parse(R"([{"x": 1, "y": 1}, {"w": 1}])"));
}

TEST_CASE("merge key: a value that is not a mapping or a list of mappings is an error", "[yaml][merge]") {
  const std::string anchors = kAnchors + "s: &s text\nl: &l [1]\nll: &ll [*a]\n";
  struct Case {
    std::string text;
    int line, column;
  };
  for (const Case& c : std::initializer_list<Case>{{"c:\n  <<: 1\n", 2, 7},
                                                   {"c:\n  <<: text\n", 2, 7},
                                                   {"c:\n  <<: ~\n", 2, 3},
                                                   {"c:\n  <<:\n  k: v\n", 2, 3},
                                                   {"c:\n  <<: [*a, 1]\n", 2, 12},
                                                   {"c:\n  <<: [[*a]]\n", 2, 8},
                                                   {"c:\n  <<: *s\n", 2, 7},
                                                   {"c:\n  <<: *l\n", 2, 7},
                                                   {"c:\n  <<: *ll\n", 2, 7},
                                                   {"c:\n  <<: [*ll]\n", 2, 8},
                                                   {"c: {<<: [{k: v}, null]}\n", 1, 18}}) {
    std::string text = anchors + c.text;
    auto e = parse_error(text);
    INFO(text);
    CHECK(e.message == "invalid YAML: merge key value must be a mapping or a sequence of mappings");
    CHECK(e.mark.line == c.line + 5);
    CHECK(e.mark.column == c.column);
  }
}

TEST_CASE("merge key: merged mappings may merge in turn", "[yaml][merge]") {
  nlohmann::json v = parse_ok("a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: &c {<<: [*b, {z: 3}], x: 0}\nd: {<<: *c}\n");
  CHECK(v["b"] == nlohmann::json::parse(R"({"x": 1, "y": 2})"));
  CHECK(v["c"] == nlohmann::json::parse(R"({"x": 0, "y": 2, "z": 3})"));
  CHECK(v["d"] == v["c"]);
  // Merges inside the value of a merge, and inside an inline merge source.
  nlohmann::json w = parse_ok("a: &a {x: 1}\nb: &b {sc: {<<: *a, y: 2}}\nc:\n  <<: *b\nd:\n  <<: {n: {<<: *a}}\n");
  CHECK(w["c"] == nlohmann::json::parse(R"({"sc": {"x": 1, "y": 2}})"));
  CHECK(w["d"] == nlohmann::json::parse(R"({"n": {"x": 1}})"));
}

TEST_CASE("merge key: duplicate keys are still errors, merged ones are not duplicates", "[yaml][merge]") {
  auto dup = parse_error(kAnchors + "c:\n  <<: *a\n  x: 2\n  x: 3\n");
  CHECK(dup.message.find("duplicate key \"x\" in c") != std::string::npos);
  CHECK(dup.mark.line == 6);
  CHECK(parse_error(kAnchors + "c:\n  w: 2\n  <<: *a\n  w: 3\n").message.find("duplicate key \"w\"") != std::string::npos);
  CHECK(parse_error(kAnchors + "c:\n  x: 1\n  <<: *a\n  x: 1\n").message.find("duplicate key \"x\"") != std::string::npos);
  CHECK(parse_error(kAnchors + "c:\n  <<: *a\n  <<: *b\n").message.find("duplicate key \"<<\" in c") !=
        std::string::npos);
  CHECK(parse_error("c: {k: 1, k: 2}\n").message.find("duplicate key \"k\" in c") != std::string::npos);
}

TEST_CASE("merge key: only a plain or !!merge-tagged << merges, quoted '<<' is a key", "[yaml][merge]") {
  // yaml-cpp tells them apart: the tag of a plain untagged scalar is "?", of a quoted one "!".
  nlohmann::json v = parse_ok(kAnchors + "c: {\"<<\": *a}\nd: {'<<': 1}\ne: {!!str <<: *a}\nf: {!!merge \"<<\": *a}\n"
                               "g: {! <<: 2}\nh: {\"<<\": 3, <<: *b}\n");
  CHECK(v["c"] == nlohmann::json::parse(R"({"<<": {"x": 1, "y": 1}})"));
  CHECK(v["d"] == nlohmann::json::parse(R"({"<<": 1})"));
  CHECK(v["e"] == nlohmann::json::parse(R"({"<<": {"x": 1, "y": 1}})"));
  CHECK(v["f"] == nlohmann::json::parse(R"({"x": 1, "y": 1})"));
  CHECK(v["g"] == nlohmann::json::parse(R"({"<<": 2})"));
  CHECK(v["h"] == nlohmann::json::parse(R"({"<<": 3, "x": 2, "z": 2})"));
  // A value "<<" is just a string, and `<<x` is an ordinary key.
  CHECK(parse_ok("k: <<\n<<x: 1\n") == nlohmann::json::parse(R"({"k": "<<", "<<x": 1})"));
  // to_yaml quotes a "<<" key, so that it reads back as the same key (and kubectl reads it so).
  Json literal = Json::parse(R"({"<<": {"<<": "<<"}, "k": ["<<"]})");
  std::string yaml = webhook::to_yaml(literal);
  INFO(yaml);
  auto back = parse_yaml_or_json(yaml);
  REQUIRE_FALSE(back.error);
  CHECK(back.documents.at(0).value == literal);
}

TEST_CASE("merge key: merged fields point to where their value is written", "[yaml][merge]") {
  auto parsed = parse_yaml_or_json(
      "base: &base\n  privileged: true\n  caps: {add: [SYS_ADMIN]}\n"  // lines 1-3
      "pod:\n  sc:\n    <<: *base\n    runAsUser: 0\n"                  // lines 4-7
      "  inline:\n    <<:\n      - {hostPID: true}\n"                    // lines 8-10
      "  over:\n    <<: *base\n    privileged: false\n");                // lines 11-13
  REQUIRE_FALSE(parsed.error);
  const auto& marks = parsed.documents.at(0).marks;
  CHECK(marks.find("pod.sc.privileged").line == 2);
  CHECK(marks.find("pod.sc.privileged").column == 15);
  CHECK(marks.find("pod.sc.caps.add[0]").line == 3);  // nearest marked ancestor: the merged key
  CHECK(marks.find("pod.sc.runAsUser").line == 7);
  CHECK(marks.find("pod.inline.hostPID").line == 10);
  CHECK(marks.find("pod.over.privileged").line == 13);
  CHECK(marks.find("pod.over.caps").line == 3);
  // Marks of an anchored mapping that merges are kept for the next merge.
  auto nested = parse_yaml_or_json("a: &a\n  x: 1\nb: &b\n  <<: *a\nc:\n  <<: *b\n");
  REQUIRE_FALSE(nested.error);
  CHECK(nested.documents.at(0).marks.find("c.x").line == 2);
}

TEST_CASE("merge key: merges count towards the alias-expansion bound", "[yaml][merge]") {
  // Each level merges the previous one ten times: exponential unless bounded.
  std::string bomb = "l0: &l0 {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v, k8: v, k9: v}\n";
  for (int i = 1; i <= 12; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " {<<: [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", " : "") + prev;
    bomb += "], n" + std::to_string(i) + ": " + prev + "}\n";
  }
  auto start = std::chrono::steady_clock::now();
  auto e = parse_error(bomb);
  CHECK(e.message.find("nodes (aliases included)") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

  // With a small bound, merging the same mapping a few times is enough to reach it.
  webhook::YamlLimits small;
  small.max_nodes = 60;
  std::string text = "a: &a {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7, k8: 8, k9: 9}\n";
  CHECK_FALSE(parse_yaml_or_json(text + "b: {<<: *a}\n", small).error);
  for (int i = 0; i < 3; ++i) text += "m" + std::to_string(i) + ": {<<: *a}\n";
  CHECK(parse_error(text, small).message.find("more than 60 nodes") != std::string::npos);
}
