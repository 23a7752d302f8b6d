// Base64 encoding and decoding (base64.h).
#include "webhook/ops/base64.h"

#include <cstdint>

namespace gpu_admission::webhook {
namespace {

constexpr char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// A character's 6 bits in `alphabet`, or in either when `alphabet` is null; -1 when it has none.
int digit_value(char c, const Base64Alphabet* alphabet) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  const bool standard = alphabet == nullptr || *alphabet == Base64Alphabet::standard;
  const bool url = alphabet == nullptr || *alphabet == Base64Alphabet::url;
  if ((c == '+' && standard) || (c == '-' && url)) return 62;
  if ((c == '/' && standard) || (c == '_' && url)) return 63;
  return -1;
}

// Decoded 6-bit digits gathered into groups of four, each written out as three bytes; the
// final group of 2 or 3 digits becomes 1 or 2 bytes.
struct DigitGroups {
  std::string& out;
  uint32_t bits = 0;
  int count = 0;  // digits of the current group of four

  void push(int value) {
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count < 4) return;
    out += static_cast<char>(bits >> 16);
    out += static_cast<char>(bits >> 8);
    out += static_cast<char>(bits);
    bits = 0;
    count = 0;
  }
  void finish() {
    if (count == 2) out += static_cast<char>(bits >> 4);
    if (count == 3) {
      out += static_cast<char>(bits >> 10);
      out += static_cast<char>(bits >> 2);
    }
  }
};

}  // namespace

void append_base64(std::string& out, std::string_view data, Base64Alphabet alphabet, bool pad) {
  const char* digits = alphabet == Base64Alphabet::url ? kUrl : kStandard;
  out.reserve(out.size() + (data.size() + 2) / 3 * 4);
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    out += digits[v >> 18];
    out += digits[(v >> 12) & 63];
    out += digits[(v >> 6) & 63];
    out += digits[v & 63];
  }
  const size_t rest = data.size() - i;
  if (rest == 0) return;
  const uint32_t v = (uint32_t{p[i]} << 16) | (rest == 2 ? uint32_t{p[i + 1]} << 8 : 0u);
  out += digits[v >> 18];
  out += digits[(v >> 12) & 63];
  if (rest == 2) out += digits[(v >> 6) & 63];
  if (pad) out.append(rest == 2 ? 1 : 2, '=');
}

std::string base64_encode(std::string_view data, Base64Alphabet alphabet, bool pad) {
  std::string out;
  append_base64(out, data, alphabet, pad);
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  DigitGroups groups{out};
  int padding = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '=') {
      if (++padding > 2) return std::nullopt;
      continue;
    }
    const int value = digit_value(c, nullptr);
    if (value < 0 || padding > 0) return std::nullopt;
    groups.push(value);
  }
  if (groups.count == 1) return std::nullopt;
  groups.finish();
  return out;
}

std::optional<std::string> base64_decode_strict(std::string_view text, Base64Alphabet alphabet) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  DigitGroups groups{out};
  int padding = 0;
  for (const char c : text) {
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      // Padding only completes a group that has two or three characters.
      if (groups.count + padding < 2 || groups.count + ++padding > 4) return std::nullopt;
      continue;
    }
    const int value = digit_value(c, &alphabet);
    if (value < 0 || padding > 0) return std::nullopt;
    groups.push(value);
  }
  if (groups.count == 0) return padding == 0 ? std::optional(out) : std::nullopt;
  if (groups.count + padding != 4) return std::nullopt;
  groups.finish();
  return out;
}

}  // namespace gpu_admission::webhook
