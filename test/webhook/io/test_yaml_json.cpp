// The YAML/JSON reader's guards and the YAML writer: malformed input that hangs yaml-cpp 0.7,
// invalid UTF-8, control characters, duplicate keys, depth and alias bombs; typing of scalars;
// source marks; round trips.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "webhook/io/yaml_json.h"

using namespace gpu_admission;
using webhook::parse_yaml_or_json;

namespace {
std::string error_of(const std::string& text) {
  auto parsed = parse_yaml_or_json(text);
  return parsed.error ? parsed.error->message : "";
}
}  // namespace

TEST_CASE("input that makes yaml-cpp loop forever is an error, quickly", "[yaml]") {
  for (std::string text : {",", "{},", "[],", "\"x\",", ",a", " ,", "[a]\n,", "---\n,", "--- ,", "a: b\n---\n,",
                           "&a ,", "!t [a],", "|\n  x\n,", "{{{{}}:[{{{\"\"}}}]}},", ",#s and tenta:\n  x: y\n"}) {
    INFO(text);
    auto start = std::chrono::steady_clock::now();
    auto parsed = parse_yaml_or_json(text);
    CHECK(parsed.error.has_value());
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }
}

TEST_CASE("invalid UTF-8 and control characters are refused with their position", "[yaml]") {
  auto bad = parse_yaml_or_json("a: b\nc: \xff\xfe\n");
  REQUIRE(bad.error);
  CHECK(bad.error->message.find("invalid UTF-8") != std::string::npos);
  CHECK(bad.error->mark.line == 2);
  CHECK(bad.error->mark.column == 4);
  CHECK(error_of(std::string("a: b\0c", 6)).find("control character") != std::string::npos);
  CHECK(error_of("a: \xC0\xAF\n").find("invalid UTF-8") != std::string::npos);  // overlong '/'
  CHECK(error_of("a: \xED\xA0\x80\n").find("invalid UTF-8") != std::string::npos);  // surrogate
  CHECK(error_of("a: caf\xC3\xA9\n").empty());
}

TEST_CASE("duplicate keys, deep nesting and alias bombs are errors", "[yaml]") {
  auto dup = parse_yaml_or_json("metadata:\n  name: a\n  name: b\n");
  REQUIRE(dup.error);
  CHECK(dup.error->message.find("duplicate key \"name\" in metadata") != std::string::npos);
  CHECK(dup.error->mark.line == 3);

  std::string deep(500, '[');
  CHECK(error_of(deep + std::string(500, ']')).find("nesting deeper") != std::string::npos);
  std::string deep_yaml;
  for (int i = 0; i < 300; ++i) deep_yaml += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  CHECK_FALSE(error_of(deep_yaml).empty());

  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c, ++prev) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", " : "") + "*" + prev;
    bomb += "]\n";
  }
  CHECK(error_of(bomb).find("nodes (aliases included)") != std::string::npos);
}

TEST_CASE("scalars are typed like Kubernetes reads them, quoted stays string", "[yaml]") {
  auto parsed = parse_yaml_or_json("a: 2\nb: \"2\"\nc: true\nd: ~\ne: 1.5\nf: 1e3\ng: yes\nh: 0x1F\ni: '007'\nj: -3\n");
  REQUIRE_FALSE(parsed.error);
  const Json& v = parsed.documents.at(0).value;
  CHECK(v["a"] == 2);
  CHECK(v["b"] == "2");
  CHECK(v["c"] == true);
  CHECK(v["d"].is_null());
  CHECK(v["e"] == 1.5);
  CHECK(v["f"] == 1000.0);
  CHECK(v["g"] == "yes");  // YAML 1.2: only true/false are booleans
  CHECK(v["h"] == 31);
  CHECK(v["i"] == "007");
  CHECK(v["j"] == -3);
}

TEST_CASE("documents keep source marks, empty documents are left out", "[yaml]") {
  auto parsed = parse_yaml_or_json("---\n# nothing\n---\nkind: Pod\nspec:\n  containers:\n    - name: a\n---\n");
  REQUIRE_FALSE(parsed.error);
  REQUIRE(parsed.documents.size() == 1);
  const auto& doc = parsed.documents[0];
  CHECK(doc.line == 4);
  CHECK(doc.marks.find("spec.containers[0].name").line == 7);
  CHECK(doc.marks.find("spec.containers[0].name").column == 13);
}

TEST_CASE("to_yaml reads back to the same tree", "[yaml]") {
  Json v = Json::parse(R"({"kind":"Pod","metadata":{"labels":{"a/b":"yes","n":"2","e":"","sp":" x","colon":"a: b","hash":"a #b",
      "nl":"line1\nline2","nul":"a\u0000b","uni":"café","breaks":"a\u0085b\u2028c\u2029d"}},"spec":{"list":[1,"two",true,null,{"k":[]},[{"x":{}}]],"empty":{}}})");
  std::string yaml = webhook::to_yaml(v);
  auto back = parse_yaml_or_json(yaml);
  INFO(yaml);
  REQUIRE_FALSE(back.error);
  CHECK(back.documents.at(0).value == v);
  // YAML limits implicit keys to 1024 characters: longer ones are written as explicit `? key`.
  Json long_keys;
  long_keys[std::string(1500, 'k')] = {{std::string(600, '\r'), "v"}, {"short", Json::array({1, Json::object({{std::string(1100, 'x'), 2}})})}};
  long_keys["next"] = nullptr;
  std::string long_yaml = webhook::to_yaml(long_keys);
  INFO(long_yaml);
  auto long_back = parse_yaml_or_json(long_yaml);
  REQUIRE_FALSE(long_back.error);
  CHECK(long_back.documents.at(0).value == long_keys);
}

TEST_CASE("to_yaml with literal_blocks writes readable lines and reads back the same", "[yaml]") {
  Json v = Json::parse(R"({"spec":{"expression":"a ||\n  b: c #d\n\n'e'","lead":" x\ny","trail":"x\ny\n","first":"\nx",
      "uni":"caf\u00e9\nx","one":"single line","list":["a\nb"],"tab":"a\tb\nc"}})");
  const std::string yaml = webhook::to_yaml(v, {.literal_blocks = true});
  INFO(yaml);
  // Only what a literal block keeps exactly becomes one: no leading space or line break, no trailing
  // line break, printable ASCII; a string in a list stays quoted.
  CHECK(yaml.find("expression: |-\n    a ||\n      b: c #d\n\n    'e'\n") != std::string::npos);
  for (const char* quoted : {"lead: \" x\\ny\"", "trail: \"x\\ny\\n\"", "first: \"\\nx\"", "- \"a\\nb\"",
                             "tab: \"a\\tb\\nc\""})
    CHECK(yaml.find(quoted) != std::string::npos);
  auto back = parse_yaml_or_json(yaml);
  REQUIRE_FALSE(back.error);
  CHECK(back.documents.at(0).value == v);
  CHECK(webhook::to_yaml(v).find("|-") == std::string::npos);  // not by default
}

TEST_CASE("escapes that yaml-cpp writes as single bytes come out as UTF-8", "[yaml]") {
  // yaml-cpp 0.7 turns \N (U+0085) and \_ (U+00A0) into the bytes 0x85 and 0xA0.
  auto parsed = parse_yaml_or_json("a: \"x\\Ny\\_z\\L\\P\\x85\"\nb: \"\u00c5\\N\"\n");
  REQUIRE_FALSE(parsed.error);
  CHECK(parsed.documents.at(0).value["a"] == "x\u0085y\u00a0z\u2028\u2029\u0085");
  CHECK(parsed.documents.at(0).value["b"] == "\u00c5\u0085");
  auto back = parse_yaml_or_json(webhook::to_yaml(parsed.documents.at(0).value));
  REQUIRE_FALSE(back.error);
  CHECK(back.documents.at(0).value == parsed.documents.at(0).value);
}

TEST_CASE("numbers out of range never become infinities", "[yaml]") {
  // Not JSON (a double overflows), but valid YAML: the scalar stays text, so a quantity field
  // holding it is reported by the decoder instead of being read as an infinite number.
  auto huge = parse_yaml_or_json("[1e400]");
  REQUIRE_FALSE(huge.error.has_value());
  CHECK(huge.documents.at(0).value[0] == "1e400");
  auto digits = parse_yaml_or_json("{\"a\": " + std::string(400, '9') + "}");
  REQUIRE_FALSE(digits.error.has_value());
  CHECK(digits.documents.at(0).value["a"].is_string());
  auto big = parse_yaml_or_json("a: 99999999999999999999\n");  // fits a double
  REQUIRE_FALSE(big.error.has_value());
  CHECK(big.documents.at(0).value["a"].is_number());
}
