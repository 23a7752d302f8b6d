// Finds the MIG profile a DRA CEL selector pins (declared in claim_gpus.h). Not a CEL
// evaluator: a small tokenizer plus the one shape we accept. Everything not certainly a pin is
// not a pin, and the caller then counts the worst case (a whole GPU).
//
// Why a top-level `&&` conjunct is enough: CEL's `&&` is true only when every operand is true
// (an operand that errors makes the result false or an error, and a selector that errors fails
// the allocation), and `&&` binds looser than every operator but `||` and `?:`. So when the
// depth-0 tokens of an expression contain no `||`, `?` or `:`, its `&&` operands are exactly the
// runs between depth-0 `&&` tokens, and each must hold for a device to be picked.
#include <algorithm>
#include <array>
#include <cstddef>
#include <memory_resource>
#include <string>
#include <vector>

#include "policy/dra/claim_gpus.h"

namespace gpu_admission::policy {
namespace {

enum class TokKind : uint8_t { Ident, String, Number, Op, Open, Close };

struct Token {
  TokKind kind;
  bool plain = true;      // String: no escapes (text is the value)
  std::string_view text;  // String: between the quotes
};
using Tokens = std::pmr::vector<Token>;
using Indexes = std::pmr::vector<size_t>;

constexpr size_t kNone = static_cast<size_t>(-1);

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool ident_char(char c) { return ident_start(c) || digit(c); }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// A quoted string at cel[i]; false for what we do not read with certainty: triple quotes,
// unterminated strings, line breaks inside one.
bool string_token(std::string_view cel, size_t& i, Tokens& out) {
  const char q = cel[i];
  if (i + 2 < cel.size() && cel[i + 1] == q && cel[i + 2] == q) return false;
  Token t{TokKind::String, true, {}};
  size_t j = i + 1;
  while (j < cel.size() && cel[j] != q) {
    if (cel[j] == '\n' || cel[j] == '\r') return false;
    if (cel[j] == '\\') {
      t.plain = false;
      ++j;
    }
    ++j;
  }
  if (j >= cel.size()) return false;
  t.text = cel.substr(i + 1, j - i - 1);
  out.push_back(t);
  i = j + 1;
  return true;
}

bool op_token(std::string_view cel, size_t& i, Tokens& out) {
  static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
  for (std::string_view op : kTwo)
    if (cel.substr(i, 2) == op) {
      out.push_back(Token{TokKind::Op, true, cel.substr(i, 2)});
      i += 2;
      return true;
    }
  const char c = cel[i];
  TokKind kind;
  if (c == '(' || c == '[' || c == '{') {
    kind = TokKind::Open;
  } else if (c == ')' || c == ']' || c == '}') {
    kind = TokKind::Close;
  } else if (std::string_view("!<>?:+-*/%.,").find(c) != std::string_view::npos) {
    kind = TokKind::Op;
  } else {
    return false;  // `&`, `|`, `=`, backticks, non-ASCII, ...
  }
  out.push_back(Token{kind, true, cel.substr(i, 1)});
  ++i;
  return true;
}

bool tokenize(std::string_view cel, Tokens& out) {
  size_t i = 0;
  while (i < cel.size()) {
    const char c = cel[i];
    if (space(c)) {
      ++i;
    } else if (c == '/' && i + 1 < cel.size() && cel[i + 1] == '/') {
      while (i < cel.size() && cel[i] != '\n') ++i;
    } else if (ident_start(c) || digit(c)) {
      size_t j = i;
      // Numbers take '.' too (1.5, 1e3); identifiers do not.
      while (j < cel.size() && (ident_char(cel[j]) || (digit(c) && cel[j] == '.'))) ++j;
      // A quote right after a word: a raw or bytes literal (r'..', b"..") or invalid text.
      if (j < cel.size() && (cel[j] == '\'' || cel[j] == '"')) return false;
      out.push_back(Token{digit(c) ? TokKind::Number : TokKind::Ident, true, cel.substr(i, j - i)});
      i = j;
    } else if (c == '\'' || c == '"') {
      if (!string_token(cel, i, out)) return false;
    } else if (!op_token(cel, i, out)) {
      return false;
    }
  }
  return true;
}

// match[i]: for an opening bracket, the index of its closing one. False when unbalanced.
bool match_brackets(const Tokens& tokens, Indexes& match, Indexes& stack) {
  match.assign(tokens.size(), kNone);
  stack.clear();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind == TokKind::Open) {
      stack.push_back(i);
    } else if (tokens[i].kind == TokKind::Close) {
      if (stack.empty()) return false;
      const char open = tokens[stack.back()].text[0], close = tokens[i].text[0];
      if ((open == '(') != (close == ')') || (open == '[') != (close == ']')) return false;
      match[stack.back()] = i;
      stack.pop_back();
    }
  }
  return stack.empty();
}

bool is(const Token& t, TokKind kind, std::string_view text) { return t.kind == kind && t.text == text; }
bool plain_string(const Token& t) { return t.kind == TokKind::String && t.plain; }

// `device.attributes['gpu.nvidia.com'].profile` (or `...['profile']`) starting at tokens[i];
// the index after it, or kNone.
size_t attribute_ref(const Tokens& t, size_t i, size_t end) {
  if (end - i < 8) return kNone;
  if (!is(t[i], TokKind::Ident, "device") || !is(t[i + 1], TokKind::Op, ".") ||
      !is(t[i + 2], TokKind::Ident, "attributes") || !is(t[i + 3], TokKind::Open, "[") || !plain_string(t[i + 4]) ||
      t[i + 4].text != "gpu.nvidia.com" || !is(t[i + 5], TokKind::Close, "]"))
    return kNone;
  if (is(t[i + 6], TokKind::Op, ".") && is(t[i + 7], TokKind::Ident, "profile")) return i + 8;
  if (end - i >= 9 && is(t[i + 6], TokKind::Open, "[") && plain_string(t[i + 7]) && t[i + 7].text == "profile" &&
      is(t[i + 8], TokKind::Close, "]"))
    return i + 9;
  return kNone;
}

// The profile when tokens [b, e) are exactly `<attribute> == '<p>'` or `'<p>' == <attribute>`.
std::optional<std::string_view> leaf_pin(const Tokens& t, size_t b, size_t e) {
  size_t k = attribute_ref(t, b, e);
  if (k != kNone && k + 2 == e && is(t[k], TokKind::Op, "==") && plain_string(t[k + 1])) return t[k + 1].text;
  if (e - b >= 3 && plain_string(t[b]) && is(t[b + 1], TokKind::Op, "==") && attribute_ref(t, b + 2, e) == e)
    return t[b].text;
  return std::nullopt;
}

struct Range {
  size_t b, e;
};

// Walks the `&&` chain (through wrapping parentheses) without recursion: depth is the input's.
// False for an empty operand (`a &&`, `()`): not CEL, so nothing in it counts as a pin.
bool collect_pins(const Tokens& t, const Indexes& match, ProfileList& out, std::pmr::memory_resource* scratch) {
  std::pmr::vector<Range> work(1, Range{0, t.size()}, scratch);
  Indexes cuts(scratch);
  while (!work.empty()) {
    Range r = work.back();
    work.pop_back();
    while (r.e - r.b >= 2 && is(t[r.b], TokKind::Open, "(") && match[r.b] == r.e - 1) {
      ++r.b;
      --r.e;
    }
    if (r.b >= r.e) return false;
    cuts.clear();
    bool chain = true;
    for (size_t i = r.b; i < r.e && chain;) {
      if (t[i].kind == TokKind::Open) {
        i = match[i] + 1;
        continue;
      }
      if (t[i].kind == TokKind::Op && (t[i].text == "||" || t[i].text == "?" || t[i].text == ":")) chain = false;
      if (is(t[i], TokKind::Op, "&&")) cuts.push_back(i);
      ++i;
    }
    if (!chain) continue;
    if (cuts.empty()) {
      if (auto pin = leaf_pin(t, r.b, r.e)) out.push_back(*pin);
      continue;
    }
    work.push_back({cuts.back() + 1, r.e});
    for (size_t c = cuts.size() - 1; c > 0; --c) work.push_back({cuts[c - 1] + 1, cuts[c]});
    work.push_back({r.b, cuts.front()});
  }
  return true;
}

}  // namespace

void append_pinned_mig_profiles(std::string_view cel, ProfileList& out) {
  // The lists live in an arena on the stack: a selector of common length allocates nothing, a
  // long one spills to the heap for this call only.
  std::array<std::byte, 4096> bytes;
  std::pmr::monotonic_buffer_resource scratch(bytes.data(), bytes.size());
  Tokens tokens(&scratch);
  Indexes match(&scratch), stack(&scratch);
  const size_t first = out.size();
  if (!tokenize(cel, tokens) || tokens.empty() || !match_brackets(tokens, match, stack)) return;
  if (!collect_pins(tokens, match, out, &scratch)) {
    out.resize(first);
    return;
  }
  const auto begin = out.begin() + static_cast<std::ptrdiff_t>(first);
  std::sort(begin, out.end());
  out.erase(std::unique(begin, out.end()), out.end());
}

std::vector<std::string_view> pinned_mig_profiles(std::string_view cel) {
  ProfileList out;
  append_pinned_mig_profiles(cel, out);
  return {out.begin(), out.end()};
}

std::optional<std::string> pinned_mig_profile(std::string_view cel) {
  auto pins = pinned_mig_profiles(cel);
  if (pins.size() != 1) return std::nullopt;
  return std::string(pins.front());
}

}  // namespace gpu_admission::policy
