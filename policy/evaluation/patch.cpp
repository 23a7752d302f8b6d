#include "policy/evaluation/patch.h"

#include <cstdint>
#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace gpu_admission::policy {

void Patch::add(std::string_view path, std::string_view value_json) {
  add([&](std::string& out) { out += path; }, [&](std::string& out) { out += value_json; });
}

void Patch::remove(std::string_view path) {
  remove([&](std::string& out) { out += path; });
}

void Patch::append(const Patch& other) {
  const size_t base = text_.size();
  const size_t count = other.records_.size();  // by index: `other` may be this patch
  text_ += other.text_;
  for (size_t i = 0; i < count; ++i) {
    const Record r = other.records_[i];
    records_.push_back({r.kind, base + r.path_at, base + r.value_at, base + r.end});
  }
}

void Patch::clear() {
  text_.clear();
  records_.clear();
}

PatchOp Patch::operator[](size_t i) const {
  const Record& r = records_[i];
  const std::string_view text = text_;
  return {r.kind, text.substr(r.path_at, r.value_at - r.path_at), text.substr(r.value_at, r.end - r.value_at)};
}

void append_pointer_token(std::string& out, std::string_view key) {
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
}

std::string pointer_token(std::string_view key) {
  std::string out;
  append_pointer_token(out, key);
  return out;
}

namespace {

template <typename Out>
void append_escaped(Out& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
  }
}

// The position of the first character of s[from, end) that JSON requires escaped, or s.size():
// 32 at a time where AVX2 is there (a uid or a path is one or two blocks), then one by one.
size_t next_to_escape(std::string_view s, size_t from) {
  size_t i = from;
#ifdef __AVX2__
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i control_max = _mm256_set1_epi8(0x1f);
  for (; i + 32 <= s.size(); i += 32) {
    const __m256i block = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.data() + i));
    const __m256i control = _mm256_cmpeq_epi8(_mm256_min_epu8(block, control_max), block);  // <= 0x1f, unsigned
    const __m256i special = _mm256_or_si256(_mm256_cmpeq_epi8(block, quote), _mm256_cmpeq_epi8(block, backslash));
    const auto hits = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(control, special)));
    if (hits) return i + static_cast<size_t>(__builtin_ctz(hits));
  }
#endif
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') return i;
  }
  return s.size();
}

template <typename Out>
void append_json_string_to(Out& out, std::string_view s) {
  out += '"';
  size_t plain_from = 0;  // characters since the last escape are appended in one piece
  for (size_t i = next_to_escape(s, 0); i < s.size(); i = next_to_escape(s, plain_from)) {
    out.append(s.data() + plain_from, i - plain_from);
    append_escaped(out, static_cast<unsigned char>(s[i]));
    plain_from = i + 1;
  }
  out.append(s.data() + plain_from, s.size() - plain_from);
  out += '"';
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) { append_json_string_to(out, s); }
void append_json_string(std::pmr::string& out, std::string_view s) { append_json_string_to(out, s); }

void append_patch_json(std::string& out, const Patch& patch) {
  out += '[';
  bool first = true;
  for (const PatchOp op : patch) {
    if (!first) out += ',';
    first = false;
    out += op.kind == PatchOp::Kind::Add ? "{\"op\":\"add\",\"path\":" : "{\"op\":\"remove\",\"path\":";
    append_json_string(out, op.path);
    if (op.kind == PatchOp::Kind::Add) {
      out += ",\"value\":";
      out += op.value;
    }
    out += '}';
  }
  out += ']';
}

std::string patch_to_json(const Patch& patch) {
  std::string out;
  append_patch_json(out, patch);
  return out;
}

}  // namespace gpu_admission::policy
