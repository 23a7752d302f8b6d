// Escaping for terminals (terminal_text.h).
#include "webhook/io/terminal_text.h"

#include <cstdint>

namespace gpu_admission::webhook {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The code point of the UTF-8 sequence at text[i] and its length, or length 0 when the bytes
// there are not one (a stray continuation byte, a truncated sequence, an overlong form, a
// surrogate, past U+10FFFF).
struct Decoded {
  uint32_t code = 0;
  size_t size = 0;
};

Decoded decode(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t size = 0;
  uint32_t code = 0, min = 0;
  if (lead < 0x80) return {lead, 1};
  if ((lead & 0xE0) == 0xC0) size = 2, code = lead & 0x1F, min = 0x80;
  else if ((lead & 0xF0) == 0xE0) size = 3, code = lead & 0x0F, min = 0x800;
  else if ((lead & 0xF8) == 0xF0) size = 4, code = lead & 0x07, min = 0x10000;
  else return {};
  if (i + size > text.size()) return {};
  for (size_t k = 1; k < size; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {};
  return {code, size};
}

bool escaped(uint32_t code) {
  return code < 0x20 || (code >= 0x7F && code <= 0x9F) || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0x2028 || code == 0x2029;
}

void append_byte_escape(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

void append_code_escape(std::string& out, uint32_t code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 0xF];
}

}  // namespace

void append_terminal_text(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size());
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode(text, i);
    if (d.size == 0) {  // not UTF-8: the byte alone
      append_byte_escape(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (!escaped(d.code)) out.append(text.substr(i, d.size));
    else if (d.code < 0x80) append_byte_escape(out, static_cast<unsigned char>(d.code));  // C0 and DEL
    else append_code_escape(out, d.code);
    i += d.size;
  }
}

std::string terminal_text(std::string_view text) {
  std::string out;
  append_terminal_text(out, text);
  return out;
}

}  // namespace gpu_admission::webhook
