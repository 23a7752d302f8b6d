// How messages and field paths show a value a tenant wrote (policy/base/quoted_value.h): whole up
// to 256 bytes; beyond, 256 bytes or fewer cut at a UTF-8 character boundary, an ellipsis and the
// full size in decimal units rounded down.
#include <catch2/catch.hpp>

#include <string>

#include "policy/base/quoted_value.h"

using namespace gpu_admission::policy;

namespace {
const std::string kEllipsis = "\u2026";
}  // namespace

TEST_CASE("quoted value: whole up to 256 bytes", "[quoted-value]") {
  CHECK(quoted("main") == "\"main\"");
  CHECK(quoted("") == "\"\"");
  CHECK(bounded("nvidia.com/gpu") == "nvidia.com/gpu");
  CHECK(quoted_key("app.kubernetes.io/name") == "[\"app.kubernetes.io/name\"]");
  const std::string at_limit(256, 'a');
  CHECK(quoted(at_limit) == "\"" + at_limit + "\"");
  CHECK(bounded(at_limit) == at_limit);
}

TEST_CASE("quoted value: longer values are cut at 256 bytes and sized", "[quoted-value]") {
  const std::string head(256, 'a');
  CHECK(quoted(std::string(257, 'a')) == "\"" + head + kEllipsis + "\" (257 B)");
  CHECK(bounded(std::string(257, 'a')) == head + kEllipsis + " (257 B)");
  CHECK(quoted_key(std::string(1000, 'a')) == "[\"" + head + kEllipsis + "\" (1.0 KB)]");
  const std::string big(1400000, 'a');
  const std::string shown = quoted(big);
  CHECK(shown == "\"" + head + kEllipsis + "\" (1.4 MB)");
  CHECK(shown.size() < 300);
}

TEST_CASE("quoted value: the cut never splits a UTF-8 character", "[quoted-value]") {
  // Each multi-byte character straddling byte 256 is left out whole, for every length 2 to 4 and
  // every offset of the straddle.
  for (const std::string ch : {"\u00e9", "\u202e", "\U0001F600"}) {
    for (size_t pad = 256 - ch.size() + 1; pad < 256; ++pad) {
      const std::string value = std::string(pad, 'a') + ch + std::string(50, 'b');
      INFO("character of " << ch.size() << " bytes at byte " << pad);
      CHECK(utf8_prefix_size(value, 256) == pad);
      CHECK(bounded(value).substr(0, pad + kEllipsis.size()) == std::string(pad, 'a') + kEllipsis);
    }
    // Ending exactly at the limit: kept.
    const std::string ends = std::string(256 - ch.size(), 'a') + ch + "b";
    CHECK(utf8_prefix_size(ends, 256) == 256);
  }
  // Not UTF-8 (stray continuation bytes): cut no more than 3 bytes early.
  const std::string junk(300, '\x80');
  CHECK(utf8_prefix_size(junk, 256) == 253);
  CHECK(utf8_prefix_size("short", 256) == 5);
}

TEST_CASE("quoted value: sizes in decimal units with one decimal, rounded down", "[quoted-value]") {
  CHECK(size_text(257) == "257 B");
  CHECK(size_text(999) == "999 B");
  CHECK(size_text(1000) == "1.0 KB");
  CHECK(size_text(1099) == "1.0 KB");
  CHECK(size_text(1100) == "1.1 KB");
  CHECK(size_text(999999) == "999.9 KB");
  CHECK(size_text(1000000) == "1.0 MB");
  CHECK(size_text(1400000) == "1.4 MB");
  CHECK(size_text(1468006) == "1.4 MB");
  CHECK(size_text(3145728) == "3.1 MB");
  CHECK(size_text(2500000000ULL) == "2.5 GB");
}
