// append_json_string: every string it writes reads back as the same string (a JSON parser as
// the judge), for each ASCII character alone and amid others, and for UTF-8 text.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "policy/evaluation/patch.h"

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

TEST_CASE("append_json_string escapes a character wherever it lies in a long string") {
  // Long strings are scanned in blocks of 32: every position of the first blocks and the tail,
  // in strings of every length up to 100, with UTF-8 bytes (>= 0x80, never escaped) around it.
  auto reference = [](const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') out += std::string("\\") + static_cast<char>(c);
      else if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c == '\b') out += "\\b";
      else if (c == '\f') out += "\\f";
      else if (c < 0x20) out += "\\u00" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 0xf];
      else out += static_cast<char>(c);
    }
    return out + "\"";
  };
  for (size_t length = 1; length <= 100; ++length) {
    for (size_t at = 0; at < length; ++at) {
      for (const char special : {'"', '\\', '\x01', '\x1f', '\n'}) {
        std::string text;
        for (size_t i = 0; i < length; ++i) text += i % 7 == 3 ? '\xc3' : i % 7 == 4 ? '\xa9' : static_cast<char>('a' + i % 26);
        text[at] = special;
        INFO("length " << length << ", character " << int(special) << " at " << at);
        CHECK(written(text) == reference(text));
      }
    }
    const std::string plain(length, '\x7f');
    CHECK(written(plain) == "\"" + plain + "\"");
  }
}
