#include "policy/base/quoted_value.h"

#include <array>

namespace gpu_admission::policy {
namespace {

constexpr std::string_view kEllipsis = "\u2026";

// `s` bounded, between `open` and `close`: open s close, or open prefix… close (size).
std::string bound(std::string_view s, std::string_view open, std::string_view close) {
  std::string out;
  if (s.size() <= kQuotedValueBytes) {
    out.reserve(open.size() + s.size() + close.size());
    out += open;
    out += s;
    out += close;
    return out;
  }
  const size_t keep = utf8_prefix_size(s, kQuotedValueBytes);
  out.reserve(open.size() + keep + kEllipsis.size() + close.size() + 16);
  out += open;
  out += s.substr(0, keep);
  out += kEllipsis;
  out += close;
  out += " (";
  out += size_text(s.size());
  out += ')';
  return out;
}

}  // namespace

std::string quoted(std::string_view s) { return bound(s, "\"", "\""); }

std::string bounded(std::string_view s) { return bound(s, "", ""); }

std::string quoted_key(std::string_view key) {
  std::string out = "[";
  out += quoted(key);
  out += ']';
  return out;
}

std::string size_text(size_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " B";
  struct Unit {
    size_t size;
    std::string_view name;
  };
  static constexpr std::array<Unit, 3> kUnits = {{{1000, "KB"}, {1000 * 1000, "MB"}, {1000 * 1000 * 1000, "GB"}}};
  size_t u = 0;
  while (u + 1 < kUnits.size() && bytes >= kUnits[u + 1].size) ++u;
  const size_t tenths = bytes / (kUnits[u].size / 10);  // rounded down: never more than the value
  std::string out = std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " ";
  out += kUnits[u].name;
  return out;
}

size_t utf8_prefix_size(std::string_view s, size_t limit) {
  if (s.size() <= limit) return s.size();
  size_t cut = limit;
  // s[cut] starts the first character left out: back up while it is a continuation byte.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80; ++i) --cut;
  return cut;
}

}  // namespace gpu_admission::policy
