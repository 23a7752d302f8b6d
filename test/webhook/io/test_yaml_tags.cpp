// Tagged YAML scalars as kubectl's reader (sigs.k8s.io/yaml, go-yaml v2) types them: every tag it
// gives meaning to (!!binary, !!str, !!int, !!float, !!bool, !!null, !!timestamp, !!merge) in
// every spelling yaml-cpp passes on (shorthand and verbatim), and local tags, which keep the text.
#include <catch2/catch.hpp>

#include <string>

#include "webhook/io/yaml_json.h"

using namespace gpu_admission;
using webhook::parse_yaml_or_json;

namespace {

Json value_of(const std::string& yaml) {
  auto parsed = parse_yaml_or_json("v: " + yaml + "\n");
  INFO(yaml);
  REQUIRE_FALSE(parsed.error);
  return parsed.documents.at(0).value["v"];
}

// The error for `v: <yaml>` on the document's second line, checked to be located there.
std::string error_of(const std::string& yaml) {
  auto parsed = parse_yaml_or_json("a: 1\nv: " + yaml + "\n");
  if (!parsed.error) return "";
  CHECK(parsed.error->mark.line == 2);
  CHECK(parsed.error->mark.column >= 4);
  return parsed.error->message;
}

}  // namespace

TEST_CASE("!!binary is the text its base64 decodes to", "[yaml][yaml-tags]") {
  CHECK(value_of("!!binary TlZJRElBX1ZJU0lCTEVfREVWSUNFUw==") == "NVIDIA_VISIBLE_DEVICES");
  CHECK(value_of("!<tag:yaml.org,2002:binary> YWxs") == "all");
  CHECK(value_of("!!binary \"YWxs\"") == "all");
  CHECK(value_of("!!binary 'YQ=='") == "a");
  CHECK(value_of("!!binary YWI=") == "ab");
  CHECK(value_of("!!binary ''") == "");
  CHECK(value_of("!!binary |\n  YW\n  xs\n") == "all");  // line breaks are skipped, as Go's decoder does
  CHECK(value_of("!!binary 4pyTIMOgIGxhIG1vZGU=") == "\xE2\x9C\x93 \xC3\xA0 la mode");
}

TEST_CASE("!!binary that kubectl cannot decode, or that is not text, is an error at its position", "[yaml][yaml-tags]") {
  for (const char* bad : {"YWxs*", "YWx", "YQ", "YQ=", "Y===", "YW=s", "YW xs", "=YWx"}) {
    INFO(bad);
    const std::string message = error_of(std::string("!!binary \"") + bad + "\"");
    CHECK(message.find("invalid base64") != std::string::npos);
  }
  for (const char* bytes : {"/w==", "wCA=", "7aCA"}) {  // 0xFF; an overlong 0xC0 0x20; a surrogate
    INFO(bytes);
    CHECK(error_of(std::string("!!binary ") + bytes).find("not UTF-8") != std::string::npos);
  }
}

TEST_CASE("typed tags hold a value of their type or are refused, as kubectl refuses them", "[yaml][yaml-tags]") {
  CHECK(value_of("!!int \"12\"") == 12);
  CHECK(value_of("!!int -3") == -3);
  CHECK(value_of("!!float 1") == 1);
  CHECK(value_of("!!float '1.5'") == 1.5);
  CHECK(value_of("!!null ~").is_null());
  CHECK(value_of("!!null ''").is_null());
  for (const char* t : {"yes", "Yes", "on", "ON", "y", "true"}) CHECK(value_of(std::string("!!bool ") + t) == true);
  for (const char* f : {"no", "Off", "n", "FALSE"}) CHECK(value_of(std::string("!!bool ") + f) == false);
  CHECK(error_of("!!int two").find("as !!int") != std::string::npos);
  CHECK(error_of("!!int 1.5").find("as !!int") != std::string::npos);
  CHECK(error_of("!!float .inf").find("as !!float") != std::string::npos);
  CHECK(error_of("!!bool maybe").find("as !!bool") != std::string::npos);
  CHECK(error_of("!!null x").find("as !!null") != std::string::npos);
}

TEST_CASE("!!str, !!timestamp and local tags keep the text", "[yaml][yaml-tags]") {
  CHECK(value_of("!!str 12") == "12");
  CHECK(value_of("!!str true") == "true");
  CHECK(value_of("!!timestamp 2001-12-14") == "2001-12-14");
  CHECK(value_of("2001-12-14") == "2001-12-14");
  CHECK(value_of("!custom 12") == "12");
  CHECK(value_of("!custom YWxs") == "YWxs");
}
