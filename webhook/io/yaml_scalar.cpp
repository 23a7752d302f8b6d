// YAML 1.2 core schema resolution of plain scalars (internal to webhook/io/): what an untagged,
// unquoted scalar means (null, bool, integer, float or string). The reader uses it to type the
// scalars it reads; the writer uses it to decide whether a string may be written plain.
#include "webhook/io/yaml_internal.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

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

}  // namespace gpu_admission::webhook::detail
