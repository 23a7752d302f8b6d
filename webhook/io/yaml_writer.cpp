// JSON trees -> YAML text (to_yaml): block style, two-space indents, and strings quoted (as JSON
// strings, which YAML reads as double-quoted scalars) whenever a plain one would read back as
// something else.
#include "webhook/io/yaml_internal.h"

#include "policy/evaluation/patch.h"

#include <string_view>

namespace gpu_admission::webhook {
namespace {

using detail::resolve_plain;

// A string can be written plain when it reads back as the same string: no indicator at the
// start, no ": " or " #" inside, no surrounding spaces, printable ASCII, not "<<" (a merge key) and
// not a null, bool or number. Anything else is written as a JSON string, which is a valid YAML
// double-quoted scalar.
bool plain_safe(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  if (s == "<<") return false;  // a plain << key is a merge key
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`~").find(s.front()) != std::string_view::npos) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) return false;
    if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) return false;
    if (c == '#' && i > 0 && s[i - 1] == ' ') return false;
  }
  return resolve_plain(s).is_string();
}

void write_scalar_string(std::string& out, const std::string& s) {
  if (plain_safe(s)) {
    out += s;
    return;
  }
  std::string quoted;
  policy::append_json_string(quoted, s);
  // YAML, unlike JSON, reads U+0085, U+2028 and U+2029 as line breaks (folded into a space inside
  // a quoted scalar): escape them.
  for (size_t i = 0; i < quoted.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(quoted[i]);
    if (c == 0xC2 && i + 1 < quoted.size() && static_cast<unsigned char>(quoted[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
    } else if (c == 0xE2 && i + 2 < quoted.size() && static_cast<unsigned char>(quoted[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(quoted[i + 2]) == 0xA8 || static_cast<unsigned char>(quoted[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(quoted[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += quoted[i];
    }
  }
}

void write_value(std::string& out, const Json& v, int indent, const YamlWriteOptions& options);

// With options.literal_blocks: a string of several lines that reads back the same as a literal
// block scalar (`|-`): printable ASCII lines, not starting with a space or a line break (that would
// change the block's indentation), not ending with a line break.
bool literal_block_safe(const std::string& s) {
  if (s.find('\n') == std::string::npos || s.front() == ' ' || s.front() == '\n' || s.back() == '\n') return false;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c != '\n' && (c < 0x20 || c >= 0x7f)) return false;
  }
  return true;
}

void write_literal_block(std::string& out, const std::string& s, int indent) {
  out += " |-\n";
  size_t start = 0;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    if (nl > start) out.append(static_cast<size_t>(indent), ' ').append(s, start, nl - start);
    out += '\n';
    start = nl + 1;
  }
}

void write_inline(std::string& out, const Json& v) {
  if (v.is_string()) write_scalar_string(out, v.get_ref<const std::string&>());
  else if (v.is_object()) out += "{}";
  else if (v.is_array()) out += "[]";
  else out += to_json_text(v);
}

// Writes a collection whose first line continues the current one (after "- " or at the top).
void write_block(std::string& out, const Json& v, int indent, bool first_line_started, const YamlWriteOptions& options) {
  bool first = true;
  auto line_start = [&] {
    if (!(first && first_line_started)) out.append(static_cast<size_t>(indent), ' ');
    first = false;
  };
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      line_start();
      std::string key;
      write_scalar_string(key, it.key());
      if (key.size() > 1000) {  // an implicit key is at most 1024 characters: write `? KEY` then `: VALUE`
        out += "? ";
        out += key;
        out += '\n';
        out.append(static_cast<size_t>(indent), ' ');
      } else {
        out += key;
      }
      out += ':';
      write_value(out, it.value(), indent + 2, options);
    }
  } else {
    for (const auto& item : v) {
      line_start();
      out += '-';
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        out += ' ';
        write_block(out, item, indent + 2, true, options);
      } else {
        out += ' ';
        write_inline(out, item);
        out += '\n';
      }
    }
  }
}

// After "key:": a scalar or empty collection on the same line, else the block below.
void write_value(std::string& out, const Json& v, int indent, const YamlWriteOptions& options) {
  if ((v.is_object() || v.is_array()) && !v.empty()) {
    out += '\n';
    // Sequences under a key are indented like the key's children.
    write_block(out, v, indent, false, options);
    return;
  }
  if (options.literal_blocks && v.is_string() && literal_block_safe(v.get_ref<const std::string&>())) {
    write_literal_block(out, v.get_ref<const std::string&>(), indent);
    return;
  }
  out += ' ';
  write_inline(out, v);
  out += '\n';
}

}  // namespace

std::string to_yaml(const Json& value, const YamlWriteOptions& options) {
  std::string out;
  if ((value.is_object() || value.is_array()) && !value.empty()) write_block(out, value, 0, false, options);
  else {
    write_inline(out, value);
    out += '\n';
  }
  return out;
}

}  // namespace gpu_admission::webhook
