// Exact parsing of Kubernetes resource quantities ("2", "1k", "500m", "1e3", "2Gi").
// GPU arithmetic needs exact integers: a quantity is parsed into its exact ceiling (what the
// kubelet hands out for an extended resource) and flagged when it is not a whole number; no
// floating point is involved.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

namespace gpu_admission::policy {

struct Quantity {
  enum class Status : uint8_t { Integer, NotInteger, Negative, Invalid, TooLarge };
  static constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

  Status status = Status::Invalid;
  // Integer: the value. NotInteger: its ceiling ("500m" -> 1, "999900u" -> 1, "1.5" -> 2).
  // TooLarge: kMax (saturated; a ceiling beyond int64 is TooLarge too). Negative, Invalid: 0.
  int64_t value = 0;

  bool is_integer() const { return status == Status::Integer; }
  // True unless the quantity is exactly zero: a fraction, a negative or an unreadable quantity
  // of a GPU resource still asks for a GPU.
  bool nonzero() const { return !(status == Status::Integer && value == 0); }
};

// Parses the Kubernetes quantity grammar: [+-]digits[.digits][suffix] (either digit run may be
// empty, not both), where suffix is a binary SI suffix (Ki..Ei), a decimal SI suffix
// (n u m "" k M G T P E) or an exponent (e3, E-2, e+7). Any number of digits and any exponent
// are read exactly; results beyond int64 are TooLarge.
Quantity parse_quantity(std::string_view text);

const char* describe(Quantity::Status status);

}  // namespace gpu_admission::policy
