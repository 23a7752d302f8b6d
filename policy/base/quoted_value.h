// Values a tenant wrote (names, env values, paths, label and annotation keys, resource names), as
// messages and field paths show them: whole up to kQuotedValueBytes, else the first
// kQuotedValueBytes bytes or fewer (cut at a UTF-8 character boundary), an ellipsis and the
// value's full size, so one long value cannot make a log line or a report huge:
//   quoted("main")        -> "main"
//   quoted(1.4 MB of a)   -> "aaaa…" (1.4 MB)
// Sizes are decimal (1 KB = 1000 bytes): "300 B", then KB, MB and GB with one decimal, rounded
// down. Nothing is escaped here: text outputs for terminals escape (webhook/io/terminal_text.h),
// JSON and YAML encode.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpu_admission::policy {

inline constexpr size_t kQuotedValueBytes = 256;

// "s", bounded as above.
std::string quoted(std::string_view s);
// The same for a std::string, as exact matches, so that argument-dependent lookup never picks
// std::quoted (<iomanip>, for streams) in its place.
inline std::string quoted(const std::string& s) { return quoted(std::string_view(s)); }
inline std::string quoted(std::string& s) { return quoted(std::string_view(s)); }
inline std::string quoted(const char* s) { return quoted(std::string_view(s)); }
// s without quotes, bounded the same way: aaaa… (1.4 MB). For values a message shows bare
// (resource and env names: `requests nvidia.com/gpu`).
std::string bounded(std::string_view s);
// A map key in a field path: ["key"], bounded: ["aaaa…" (1.4 MB)].
std::string quoted_key(std::string_view key);

// "317 B", "1.4 KB", "1.4 MB", "2.0 GB".
std::string size_text(size_t bytes);
// The largest n <= limit such that s[0, n) does not end inside a UTF-8 sequence (bytes that are
// not UTF-8 are cut anywhere, but never more than 3 bytes before `limit`).
size_t utf8_prefix_size(std::string_view s, size_t limit);

}  // namespace gpu_admission::policy
