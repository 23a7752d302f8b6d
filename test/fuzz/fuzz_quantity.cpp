// Fuzz target: the Kubernetes quantity parser. Invariants: never crashes; an integer result is
// non-negative; appending "000m" (x1000 / 1000) keeps a whole value unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "policy/quantity.h"

using namespace gpu_admission::policy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Quantity q = parse_quantity(text);
  if (q.is_integer() && q.value < 0) std::abort();
  bool plain_digits = !text.empty() && text.size() < 15;
  for (char c : text) plain_digits = plain_digits && c >= '0' && c <= '9';
  if (plain_digits) {
    Quantity milli = parse_quantity(text + "000m");
    if (!q.is_integer() || !milli.is_integer() || milli.value != q.value) {
      std::fprintf(stderr, "quantity %s != %s000m\n", text.c_str(), text.c_str());
      std::abort();
    }
  }
  return 0;
}
