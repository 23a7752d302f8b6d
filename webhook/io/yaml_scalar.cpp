// YAML 1.2 core schema resolution of plain scalars (internal to webhook/io/): what an untagged,
// unquoted scalar means (null, bool, integer, float or string). The reader uses it to type the
// scalars it reads; the writer uses it to decide whether a string may be written plain. Tagged
// scalars are read as kubectl reads them (resolve_tagged).
#include "webhook/io/yaml_internal.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string_view>

namespace gpu_admission::webhook::detail {
namespace {

bool is_null_scalar(std::string_view s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }
bool is_true(std::string_view s) { return s == "true" || s == "True" || s == "TRUE"; }
bool is_false(std::string_view s) { return s == "false" || s == "False" || s == "FALSE"; }

bool all_digits(std::string_view s, bool hex = false) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

// YAML 1.2 core schema resolution of a plain scalar.
Json resolve_plain(const std::string& s) {
  if (is_null_scalar(s)) return nullptr;
  if (is_true(s)) return true;
  if (is_false(s)) return false;
  std::string_view v = s;
  std::string_view digits = v;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (all_digits(digits)) {
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return static_cast<int64_t>(n);
    errno = 0;
    if (!negative) {
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') return static_cast<uint64_t>(u);
    }
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
    return s;  // out of any number's range: kept as text, never an infinity
  }
  if (v.size() > 2 && v[0] == '0' && v[1] == 'x' && all_digits(v.substr(2), true))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 16));
  if (v.size() > 2 && v[0] == '0' && v[1] == 'o' && all_digits(v.substr(2)))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 8));
  if (v == ".inf" || v == ".Inf" || v == ".INF" || v == "+.inf" || v == "-.inf" || v == ".nan" || v == ".NaN" ||
      v == ".NAN")
    return s;  // JSON has no infinities or NaN: keep the text
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kFloat)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
}

namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// Go's base64.StdEncoding.DecodeString, which kubectl uses for `!!binary`: line breaks are
// skipped, every other byte must be in the alphabet, and padding completes the last quantum.
std::optional<std::string> decode_go_base64(std::string_view text) {
  std::string clean;
  for (char c : text)
    if (c != '\n' && c != '\r') clean += c;
  if (clean.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  for (size_t i = 0; i < clean.size(); i += 4) {
    const bool last = i + 4 == clean.size();
    const size_t pad = last ? (clean[i + 3] == '=') + (clean[i + 2] == '=' && clean[i + 3] == '=') : 0;
    uint32_t acc = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int v = k >= 4 - pad ? 0 : value(clean[i + k]);
      if (v < 0) return std::nullopt;
      acc = (acc << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>(acc >> 16);
    if (pad < 2) out += static_cast<char>((acc >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(acc & 0xff);
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xC2)) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += n;
  }
  return true;
}

// go-yaml v2's booleans, which an explicit `!!bool` accepts.
std::optional<bool> yaml11_bool(std::string_view s) {
  static constexpr std::string_view kTrue[] = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static constexpr std::string_view kFalse[] = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  for (auto t : kTrue)
    if (s == t) return true;
  for (auto f : kFalse)
    if (s == f) return false;
  return std::nullopt;
}

TaggedScalar refused(std::string_view tag, const std::string& text) {
  return {text, "cannot decode \"" + text + "\" as !!" + std::string(tag) + " (kubectl refuses it too)"};
}

}  // namespace

TaggedScalar resolve_tagged(const std::string& tag, const std::string& text) {
  if (tag == "?" || tag.empty()) return {resolve_plain(text), std::nullopt};
  if (!std::string_view(tag).starts_with(kTagPrefix)) return {text, std::nullopt};  // quoted ("!") or a local tag
  const std::string_view name = std::string_view(tag).substr(kTagPrefix.size());
  if (name == "binary") {
    auto decoded = decode_go_base64(text);
    if (!decoded) return {text, "!!binary value contains invalid base64 data"};
    if (!valid_utf8(*decoded)) return {text, "!!binary value is not UTF-8 text (kubectl would send it altered)"};
    return {std::move(*decoded), std::nullopt};
  }
  if (name == "bool") {
    if (auto b = yaml11_bool(text)) return {*b, std::nullopt};
    return refused(name, text);
  }
  if (name == "int" || name == "float" || name == "null") {
    Json v = resolve_plain(text);
    const bool ok = name == "int" ? v.is_number_integer() : name == "float" ? v.is_number() : v.is_null();
    return ok ? TaggedScalar{std::move(v), std::nullopt} : refused(name, text);
  }
  return {text, std::nullopt};  // !!str, !!timestamp (kubectl keeps its text), !!merge and others
}

}  // namespace gpu_admission::webhook::detail
