#include "policy/quantity.h"

#include <limits>

namespace gpu_admission::policy {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Suffix {
  int base;      // 2 or 10
  int exponent;  // power of the base
};

bool parse_suffix(std::string_view s, Suffix& out) {
  if (s.empty()) { out = {10, 0}; return true; }
  if (s.size() == 2 && s[1] == 'i') {
    switch (s[0]) {
      case 'K': out = {2, 10}; return true;
      case 'M': out = {2, 20}; return true;
      case 'G': out = {2, 30}; return true;
      case 'T': out = {2, 40}; return true;
      case 'P': out = {2, 50}; return true;
      case 'E': out = {2, 60}; return true;
      default: return false;
    }
  }
  if (s.size() == 1) {
    switch (s[0]) {
      case 'n': out = {10, -9}; return true;
      case 'u': out = {10, -6}; return true;
      case 'm': out = {10, -3}; return true;
      case 'k': out = {10, 3}; return true;
      case 'M': out = {10, 6}; return true;
      case 'G': out = {10, 9}; return true;
      case 'T': out = {10, 12}; return true;
      case 'P': out = {10, 15}; return true;
      case 'E': out = {10, 18}; return true;
      default: return false;
    }
  }
  if (s[0] == 'e' || s[0] == 'E') {
    size_t i = 1;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    if (i >= s.size()) return false;
    int exponent = 0;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      exponent = exponent * 10 + (s[i] - '0');
      if (exponent > 1000) return false;
    }
    out = {10, negative ? -exponent : exponent};
    return true;
  }
  return false;
}

bool mul_checked(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add_checked(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace

Quantity parse_quantity(std::string_view text) {
  Quantity q;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';

  // Collect significant digits; track how many digits follow the decimal point.
  std::string_view int_digits, frac_digits;
  size_t start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  int_digits = text.substr(start, i - start);
  if (i < text.size() && text[i] == '.') {
    ++i;
    size_t frac_start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    frac_digits = text.substr(frac_start, i - frac_start);
  }
  if (int_digits.empty() && frac_digits.empty()) return q;  // Invalid

  Suffix suffix;
  if (!parse_suffix(text.substr(i), suffix)) return q;

  // Strip trailing zeros of the fraction: they do not change the value.
  while (!frac_digits.empty() && frac_digits.back() == '0') frac_digits.remove_suffix(1);
  // Strip leading zeros of the integer part.
  while (!int_digits.empty() && int_digits.front() == '0') int_digits.remove_prefix(1);

  bool zero = int_digits.empty();
  for (char c : frac_digits) zero = zero && c == '0';
  if (zero) { q.status = Quantity::Status::Integer; q.value = 0; return q; }
  if (negative) { q.status = Quantity::Status::Negative; return q; }  // negative counts are never valid

  // value = digits * 10^(-frac_len) * base^exponent
  if (suffix.base == 2) {
    if (!frac_digits.empty()) {
      // Fractional mantissa with a binary suffix: integer only if the fraction times 2^exp is whole.
      // 10^-f * 2^e is whole iff 5^f divides the mantissa and e >= f.
      int64_t mantissa = 0;
      for (char c : int_digits) if (!mul_checked(mantissa, 10, mantissa) || !add_checked(mantissa, c - '0', mantissa)) { q.status = Quantity::Status::TooLarge; return q; }
      for (char c : frac_digits) if (!mul_checked(mantissa, 10, mantissa) || !add_checked(mantissa, c - '0', mantissa)) { q.status = Quantity::Status::TooLarge; return q; }
      int f = static_cast<int>(frac_digits.size());
      if (suffix.exponent < f) { q.status = Quantity::Status::NotInteger; return q; }
      for (int k = 0; k < f; ++k) {
        if (mantissa % 5 != 0) { q.status = Quantity::Status::NotInteger; return q; }
        mantissa /= 5;
      }
      int shift = suffix.exponent - f;
      if (shift >= 63 || mantissa > (kMax >> shift)) { q.status = Quantity::Status::TooLarge; return q; }
      q.status = Quantity::Status::Integer;
      q.value = mantissa << shift;
      return q;
    }
    int64_t value = 0;
    for (char c : int_digits) if (!mul_checked(value, 10, value) || !add_checked(value, c - '0', value)) { q.status = Quantity::Status::TooLarge; return q; }
    if (suffix.exponent >= 63 || value > (kMax >> suffix.exponent)) { q.status = Quantity::Status::TooLarge; return q; }
    q.status = Quantity::Status::Integer;
    q.value = value << suffix.exponent;
    return q;
  }

  // Decimal: digits string D (int + frac), scale = exponent - len(frac).
  int scale = suffix.exponent - static_cast<int>(frac_digits.size());
  std::string_view parts[2] = {int_digits, frac_digits};
  // If scale < 0, the last -scale digits must be zeros for the value to be whole.
  size_t total = int_digits.size() + frac_digits.size();
  if (scale < 0) {
    size_t drop = static_cast<size_t>(-scale);
    if (drop > total) { q.status = Quantity::Status::NotInteger; return q; }
    // Check the dropped digits (the last `drop` digits of D) are zero.
    for (size_t k = 0; k < drop; ++k) {
      size_t pos = total - 1 - k;
      char c = pos < int_digits.size() ? int_digits[pos] : frac_digits[pos - int_digits.size()];
      if (c != '0') { q.status = Quantity::Status::NotInteger; return q; }
    }
    total -= drop;
    scale = 0;
  }
  int64_t value = 0;
  size_t taken = 0;
  for (auto part : parts) {
    for (char c : part) {
      if (taken++ >= total) break;
      if (!mul_checked(value, 10, value) || !add_checked(value, c - '0', value)) { q.status = Quantity::Status::TooLarge; return q; }
    }
  }
  for (int k = 0; k < scale; ++k) {
    if (!mul_checked(value, 10, value)) { q.status = Quantity::Status::TooLarge; return q; }
  }
  q.status = Quantity::Status::Integer;
  q.value = value;
  return q;
}

const char* describe(Quantity::Status status) {
  switch (status) {
    case Quantity::Status::Integer: return "a whole number";
    case Quantity::Status::NotInteger: return "not a whole number";
    case Quantity::Status::Negative: return "negative";
    case Quantity::Status::Invalid: return "not a valid quantity";
    case Quantity::Status::TooLarge: return "too large";
  }
  return "invalid";
}

}  // namespace gpu_admission::policy
