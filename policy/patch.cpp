#include "policy/patch.h"

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

void append_escaped(std::string& out, unsigned char c) {
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

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  size_t plain_from = 0;  // characters since the last escape are appended in one piece
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain_from, i - plain_from);
    append_escaped(out, c);
    plain_from = i + 1;
  }
  out.append(s.data() + plain_from, s.size() - plain_from);
  out += '"';
}

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
