// Exact parsing of Kubernetes resource quantities ("2", "1k", "500m", "1e3", "2Gi").
// GPU arithmetic needs exact integers, so a quantity is parsed into an integer value when it
// denotes a whole number and flagged otherwise; no floating point is involved.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpu_admission::policy {

struct Quantity {
  enum class Status : uint8_t { Integer, NotInteger, Negative, Invalid, TooLarge };
  Status status = Status::Invalid;
  int64_t value = 0;  // meaningful only when status == Integer

  bool is_integer() const { return status == Status::Integer; }
};

// Parses the Kubernetes quantity grammar: [+-]digits[.digits][suffix], where suffix is a
// binary SI suffix (Ki..Ei), a decimal SI suffix (n u m "" k M G T P E) or an exponent (e3, E-2).
Quantity parse_quantity(std::string_view text);

const char* describe(Quantity::Status status);

}  // namespace gpu_admission::policy
