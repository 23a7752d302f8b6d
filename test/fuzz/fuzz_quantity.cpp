// Fuzz target: the Kubernetes quantity parser. Invariants: never crashes; the value is never
// negative; a fraction counts as its ceiling (at least 1), too large saturates at kMax, negative
// and invalid count 0; leading zeros change nothing; for plain digits D, "D000m" is D, "Dm" is
// ceil(D / 1000) and "D.5" is D + 1, not a whole number.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "policy/views/quantity.h"

using namespace gpu_admission::policy;
using Status = Quantity::Status;

namespace {

void fail(const char* what, const std::string& text) {
  std::fprintf(stderr, "quantity \"%s\": %s\n", text.c_str(), what);
  std::abort();
}

bool same(const Quantity& a, const Quantity& b) { return a.status == b.status && a.value == b.value; }

void check_shape(const Quantity& q, const std::string& text) {
  if (q.value < 0) fail("negative value", text);
  if (q.status == Status::NotInteger && q.value < 1) fail("a fraction counts as less than 1", text);
  if (q.status == Status::TooLarge && q.value != Quantity::kMax) fail("too large but not saturated", text);
  if ((q.status == Status::Negative || q.status == Status::Invalid) && q.value != 0) fail("counts", text);
}

void check_plain_digits(const Quantity& q, const std::string& text) {
  if (!q.is_integer()) fail("plain digits are not a whole number", text);
  if (!same(parse_quantity(text + "000m"), q)) fail("D000m != D", text);
  const Quantity milli = parse_quantity(text + "m");
  const int64_t up = (q.value + 999) / 1000;
  if (milli.value != up || milli.is_integer() != (q.value % 1000 == 0)) fail("Dm != ceil(D / 1000)", text);
  const Quantity half = parse_quantity(text + ".5");
  if (half.status != Status::NotInteger || half.value != q.value + 1) fail("D.5 != D + 1", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Quantity q = parse_quantity(text);
  check_shape(q, text);
  if (!text.empty() && text[0] >= '0' && text[0] <= '9' && !same(parse_quantity("0000000000000000000000" + text), q))
    fail("leading zeros change the value", text);
  bool plain_digits = !text.empty() && text.size() < 15;
  for (char c : text) plain_digits = plain_digits && c >= '0' && c <= '9';
  if (plain_digits) check_plain_digits(q, text);
  return 0;
}
