// CEL text helpers; see cel_text.h.
#include "webhook/backstop/cel_text.h"

#include <array>
#include <cstdio>

namespace gpu_admission::webhook::backstop {
namespace {

constexpr std::string_view kRegexMeta = R"(\.+*?()|[]{}^$)";

// Words CEL reserves (cel-spec): never written after a dot.
constexpr std::array<std::string_view, 21> kReserved = {
    "as",     "break", "const",  "continue", "else", "for",  "function", "if",   "import", "let", "loop",
    "package", "namespace", "return", "var", "void", "while", "in", "true", "false", "null"};

}  // namespace

std::string quote(std::string_view text) {
  std::string out = "'";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string quote_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quote(items[i]);
  return out + "]";
}

std::string re_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (kRegexMeta.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string regex_literal(std::string_view re) {
  bool raw_ok = true;
  for (char c : re) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\'' || u < 0x20 || u == 0x7f) raw_ok = false;
  }
  if (raw_ok) return "r'" + std::string(re) + "'";
  return quote(re);
}

std::string glob_regex(std::string_view glob) {
  std::string out = "^";
  size_t start = 0;
  while (true) {
    const size_t star = glob.find('*', start);
    out += re_escape(glob.substr(start, star == std::string_view::npos ? std::string_view::npos : star - start));
    if (star == std::string_view::npos) break;
    out += "(?s:.*)";
    start = star + 1;
  }
  return out + "$";
}

std::string matches_any(std::string_view text, const std::vector<std::string>& patterns) {
  std::vector<std::string> exact, globs;
  for (const auto& p : patterns) (p.find('*') == std::string::npos ? exact : globs).push_back(p);
  std::vector<std::string> parts;
  if (exact.size() == 1) parts.push_back(std::string(text) + " == " + quote(exact[0]));
  else if (!exact.empty()) parts.push_back(std::string(text) + " in " + quote_list(exact));
  if (!globs.empty()) {
    std::string re;
    for (const auto& g : globs) {
      const std::string one = glob_regex(g);
      re += (re.empty() ? "" : "|") + one;
    }
    parts.push_back(std::string(text) + ".matches(" + regex_literal(re) + ")");
  }
  if (parts.empty()) return "false";
  if (parts.size() == 1) return parts[0];
  return "(" + parts[0] + " || " + parts[1] + ")";
}

std::string has_path(std::string_view root, std::string_view path) {
  std::string out, at(root);
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    at += "." + std::string(path.substr(start, dot - start));
    out += (out.empty() ? "" : " && ") + std::string("has(") + at + ")";
    start = dot + 1;
  }
  return out;
}

std::string value_or(std::string_view root, std::string_view path, std::string_view otherwise) {
  return "(" + has_path(root, path) + " ? " + std::string(root) + "." + std::string(path) + " : " +
         std::string(otherwise) + ")";
}

std::string map_holds(std::string_view map, std::string_view key, std::string_view value) {
  return "(" + quote(key) + " in " + std::string(map) + " && " + std::string(map) + "[" + quote(key) +
         "] == " + quote(value) + ")";
}

std::string any_of(const std::vector<std::string>& operands) {
  if (operands.empty()) return "false";
  if (operands.size() == 1) return operands[0];
  std::string out = "(";
  for (size_t i = 0; i < operands.size(); ++i) out += (i ? " ||\n" : "") + ("(" + operands[i] + ")");
  return out + ")";
}

std::string all_of(const std::vector<std::string>& operands) {
  if (operands.empty()) return "true";
  if (operands.size() == 1) return operands[0];
  std::string out = "(";
  for (size_t i = 0; i < operands.size(); ++i) out += (i ? " &&\n" : "") + ("(" + operands[i] + ")");
  return out + ")";
}

bool is_cel_identifier(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  for (auto word : kReserved)
    if (word == name) return false;
  return true;
}

}  // namespace gpu_admission::webhook::backstop
