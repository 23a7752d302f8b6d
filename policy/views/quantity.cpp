// Exact Kubernetes quantity parsing. A quantity is read as a digit string D (integer and fraction
// digits together, leading and trailing zeros dropped) times 2^pow2 (binary suffix) times 10^pow10
// (decimal suffix or exponent, less the fraction digits). Short digit strings are scaled in
// 128-bit integers; longer ones in base-10^9 limbs, so any spelling is read exactly.
#include "policy/views/quantity.h"

#include <algorithm>
#include <vector>

namespace gpu_admission::policy {
namespace {

using u128 = unsigned __int128;
using Status = Quantity::Status;

constexpr int64_t kMax = Quantity::kMax;
constexpr uint64_t kLimbBase = 1'000'000'000;
// Exponents are read up to about this magnitude; beyond it every non-zero value is out of range
// either way (too large, or a positive fraction below one).
constexpr int64_t kExponentCap = int64_t{1} << 40;

Quantity make(Status status, int64_t value) {
  Quantity q;
  q.status = status;
  q.value = value;
  return q;
}
Quantity too_large() { return make(Status::TooLarge, kMax); }

struct Suffix {
  int pow2 = 0;       // binary suffix: Ki = 10 ... Ei = 60
  int64_t pow10 = 0;  // decimal suffix or exponent
};

bool parse_exponent(std::string_view s, int64_t& out) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i >= s.size()) return false;
  int64_t e = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (e < kExponentCap) e = e * 10 + (s[i] - '0');
  }
  out = negative ? -e : e;
  return true;
}

bool parse_suffix(std::string_view s, Suffix& out) {
  out = {};
  if (s.empty()) return true;
  if (s.size() == 2 && s[1] == 'i') {
    constexpr std::string_view kBinary = "KMGTPE";
    size_t k = kBinary.find(s[0]);
    if (k == std::string_view::npos) return false;
    out.pow2 = 10 * static_cast<int>(k + 1);
    return true;
  }
  if (s.size() == 1) {
    constexpr std::string_view kDecimal = "num kMGTPE";  // 10^-9, 10^-6, 10^-3, -, 10^3 ... 10^18
    size_t k = kDecimal.find(s[0]);
    if (k == std::string_view::npos || s[0] == ' ') return false;
    out.pow10 = 3 * (static_cast<int64_t>(k) - 3);
    return true;
  }
  if (s[0] == 'e' || s[0] == 'E') return parse_exponent(s.substr(1), out.pow10);
  return false;
}

// The significant digits: the integer and the fraction digit runs read as one string.
struct Digits {
  std::string_view head, tail;
  size_t size() const { return head.size() + tail.size(); }
  int at(size_t i) const { return (i < head.size() ? head[i] : tail[i - head.size()]) - '0'; }
  void drop_front() { head.empty() ? tail.remove_prefix(1) : head.remove_prefix(1); }
  void drop_back() { tail.empty() ? head.remove_suffix(1) : tail.remove_suffix(1); }
};

// ceil(r / divisor).
Quantity ceil_div(u128 r, u128 divisor) {
  const u128 whole = r / divisor;
  const bool fraction = r % divisor != 0;
  if (whole + fraction > static_cast<u128>(kMax)) return too_large();
  return make(fraction ? Status::NotInteger : Status::Integer, static_cast<int64_t>(whole + fraction));
}

// d x 2^pow2 x 10^pow10 for 0 < d < 10^19 (so d x 2^60 < 2^124).
Quantity scale_short(uint64_t d, int pow2, int64_t pow10) {
  u128 r = static_cast<u128>(d) << pow2;
  if (pow10 >= 0) {
    for (int64_t k = 0; k < pow10 && r <= static_cast<u128>(kMax); ++k) r *= 10;
    return r > static_cast<u128>(kMax) ? too_large() : make(Status::Integer, static_cast<int64_t>(r));
  }
  if (pow10 < -38) return make(Status::NotInteger, 1);  // r < 10^38: above zero, below one
  u128 divisor = 1;
  for (int64_t k = 0; k < -pow10; ++k) divisor *= 10;
  return ceil_div(r, divisor);
}

// The digits followed by `pad` zeros, in base-10^9 limbs, least significant first.
std::vector<uint64_t> to_limbs(const Digits& d, size_t pad) {
  const size_t total = d.size() + pad;
  std::vector<uint64_t> limbs;
  limbs.reserve(total / 9 + 8);
  for (size_t end = total; end > 0;) {
    const size_t start = end >= 9 ? end - 9 : 0;
    uint64_t limb = 0;
    for (size_t i = start; i < end; ++i) limb = limb * 10 + (i < d.size() ? d.at(i) : 0);
    limbs.push_back(limb);
    end = start;
  }
  return limbs;
}

void multiply_pow2(std::vector<uint64_t>& limbs, int pow2) {
  for (; pow2 > 0; pow2 -= 30) {
    const int k = std::min(pow2, 30);  // limb < 2^30: limb << 30 plus carry fits 64 bits
    uint64_t carry = 0;
    for (auto& limb : limbs) {
      const uint64_t x = (limb << k) + carry;
      limb = x % kLimbBase;
      carry = x / kLimbBase;
    }
    for (; carry != 0; carry /= kLimbBase) limbs.push_back(carry % kLimbBase);
  }
}

// Ceiling of a limb number whose lowest `fraction_limbs` limbs are below the decimal point.
Quantity ceil_of_limbs(const std::vector<uint64_t>& limbs, size_t fraction_limbs) {
  bool fraction = false;
  for (size_t i = 0; i < std::min(fraction_limbs, limbs.size()); ++i) fraction = fraction || limbs[i] != 0;
  int64_t whole = 0;
  for (size_t i = limbs.size(); i > fraction_limbs; --i) {
    if (__builtin_mul_overflow(whole, static_cast<int64_t>(kLimbBase), &whole) ||
        __builtin_add_overflow(whole, static_cast<int64_t>(limbs[i - 1]), &whole))
      return too_large();
  }
  if (fraction && __builtin_add_overflow(whole, 1, &whole)) return too_large();
  return make(fraction ? Status::NotInteger : Status::Integer, whole);
}

// d x 2^pow2 x 10^pow10 for d of 20 digits or more (first and last digit non-zero).
Quantity scale_long(const Digits& d, int pow2, int64_t pow10) {
  if (pow10 >= 0) return too_large();  // d >= 10^19 already
  const int64_t len = static_cast<int64_t>(d.size()), n = -pow10;
  if (len - n >= 20) return too_large();         // the whole part alone has 20 digits
  if (n - len >= 19) return make(Status::NotInteger, 1);  // below 10^-19 x 2^60 < 1, above zero
  // Pad so that the fraction is whole limbs; n < len + 19 keeps this small.
  const size_t pad = static_cast<size_t>((9 - n % 9) % 9);
  std::vector<uint64_t> limbs = to_limbs(d, pad);
  multiply_pow2(limbs, pow2);
  return ceil_of_limbs(limbs, static_cast<size_t>((n + static_cast<int64_t>(pad)) / 9));
}

size_t skip_digits(std::string_view text, size_t i) {
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i;
}

}  // namespace

Quantity parse_quantity(std::string_view text) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  Digits digits;
  size_t end = skip_digits(text, i);
  digits.head = text.substr(i, end - i);
  if (end < text.size() && text[end] == '.') {
    i = end + 1;
    end = skip_digits(text, i);
    digits.tail = text.substr(i, end - i);
  }
  if (digits.size() == 0) return {};  // Invalid: no digits at all
  Suffix suffix;
  if (!parse_suffix(text.substr(end), suffix)) return {};

  int64_t pow10 = suffix.pow10 - static_cast<int64_t>(digits.tail.size());
  while (digits.size() > 0 && digits.at(0) == 0) digits.drop_front();
  while (digits.size() > 0 && digits.at(digits.size() - 1) == 0) {
    digits.drop_back();
    ++pow10;
  }
  if (digits.size() == 0) return make(Status::Integer, 0);
  if (negative) return make(Status::Negative, 0);  // negative counts are never valid
  if (digits.size() > 19) return scale_long(digits, suffix.pow2, pow10);
  uint64_t d = 0;
  for (size_t k = 0; k < digits.size(); ++k) d = d * 10 + static_cast<uint64_t>(digits.at(k));
  return scale_short(d, suffix.pow2, pow10);
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
