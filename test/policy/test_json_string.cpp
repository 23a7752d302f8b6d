// append_json_string: every string it writes reads back as the same string (a JSON parser as
// the judge), for each ASCII character alone and amid others, and for UTF-8 text.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "policy/patch.h"

using gpu_admission::policy::append_json_string;

namespace {
std::string written(const std::string& text) {
  std::string out = "prefix:";
  append_json_string(out, text);
  REQUIRE(out.rfind("prefix:", 0) == 0);
  return out.substr(7);
}
}  // namespace

TEST_CASE("append_json_string round-trips every ASCII character, alone and between plain text") {
  for (int c = 0; c < 128; ++c) {
    const std::string one(1, static_cast<char>(c));
    for (const std::string& text : {one, "ab" + one + "cd", one + one + "x" + one, std::string("plain")}) {
      INFO("character " << c);
      const std::string json = written(text);
      CHECK(nlohmann::json::parse(json).get<std::string>() == text);
    }
  }
}

TEST_CASE("append_json_string keeps UTF-8 and escapes only what JSON requires") {
  const std::string text = "gpu-\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \"q\" \\ \n\t\x01";
  const std::string json = written(text);
  CHECK(nlohmann::json::parse(json).get<std::string>() == text);
  CHECK(json == "\"gpu-\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \\\"q\\\" \\\\ \\n\\t\\u0001\"");
  CHECK(written("") == "\"\"");
}
