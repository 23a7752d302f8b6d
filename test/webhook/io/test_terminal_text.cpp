// Escaping for terminals (webhook/io/terminal_text.h): every C0 control, DEL, C1 control, bidi
// control and line separator is shown as an escape, and bytes that are not UTF-8 as \xNN; all
// other text, multi-byte characters included, is kept.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "webhook/io/terminal_text.h"

using gpu_admission::webhook::terminal_text;

TEST_CASE("terminal text: plain text and other Unicode are kept", "[terminal-text]") {
  CHECK(terminal_text("Pod team-alpha/train") == "Pod team-alpha/train");
  CHECK(terminal_text("caf\u00e9 \u2026 \u4e2d\u6587 \U0001F600 back\\slash") ==
        "caf\u00e9 \u2026 \u4e2d\u6587 \U0001F600 back\\slash");
  CHECK(terminal_text("") == "");
  // Neighbours of the escaped ranges stay.
  CHECK(terminal_text("\u00a0\u2027\u202f\u2065\u206a") == "\u00a0\u2027\u202f\u2065\u206a");
}

TEST_CASE("terminal text: every C0 control and DEL is \\xNN, newline and tab too", "[terminal-text]") {
  static const char kHex[] = "0123456789abcdef";
  for (int c = 0; c < 0x20; ++c) {
    const std::string expected = std::string("a\\x") + kHex[c >> 4] + kHex[c & 0xF] + "b";
    CHECK(terminal_text(std::string("a") + static_cast<char>(c) + "b") == expected);
  }
  CHECK(terminal_text("\x7f") == "\\x7f");
  CHECK(terminal_text("\x1b[2K\rPod x: ALLOWED\n") == "\\x1b[2K\\x0dPod x: ALLOWED\\x0a");
}

TEST_CASE("terminal text: C1, bidi controls and line separators are \\uNNNN", "[terminal-text]") {
  for (unsigned code = 0x80; code <= 0x9F; ++code) {
    const std::string utf8 = {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
    char expected[8];
    std::snprintf(expected, sizeof expected, "\\u%04x", code);
    CHECK(terminal_text(utf8) == expected);
  }
  const struct {
    const char* in;
    const char* out;
  } kCases[] = {{"\u202a", "\\u202a"}, {"\u202b", "\\u202b"}, {"\u202c", "\\u202c"}, {"\u202d", "\\u202d"},
                {"\u202e", "\\u202e"}, {"\u2066", "\\u2066"}, {"\u2067", "\\u2067"}, {"\u2068", "\\u2068"},
                {"\u2069", "\\u2069"}, {"\u2028", "\\u2028"}, {"\u2029", "\\u2029"}};
  for (const auto& c : kCases) CHECK(terminal_text(std::string("x") + c.in + "y") == std::string("x") + c.out + "y");
}

TEST_CASE("terminal text: bytes that are not UTF-8 are \\xNN, one by one", "[terminal-text]") {
  CHECK(terminal_text("a\xff" "b") == "a\\xffb");
  CHECK(terminal_text("\x80") == "\\x80");                     // a stray continuation byte
  CHECK(terminal_text("\xe2\x80") == "\\xe2\\x80");            // truncated
  CHECK(terminal_text("\xc0\xaf") == "\\xc0\\xaf");            // overlong "/"
  CHECK(terminal_text("\xc2\x1b") == "\\xc2\\x1b");            // a lead byte before a control
  CHECK(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");   // a surrogate
  CHECK(terminal_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  // An overlong spelling of a control is not a way around the escape either.
  CHECK(terminal_text("\xc0\x9b") == "\\xc0\\x9b");
}
