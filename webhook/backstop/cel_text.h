// Building CEL text for the backstop (ValidatingAdmissionPolicy export): literals, regular
// expressions (RE2, as Kubernetes and every conformant CEL implementation read them), globs, and
// the guarded field reads every generated expression is made of. Only standard CEL is produced
// (has, exists, all, map, filter, size, in, startsWith, matches, string(), int()): no Kubernetes
// library function, so that any conformant engine evaluates the export as the API server does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::webhook::backstop {

// A CEL string literal: 'text', with \\ \' and control characters escaped.
std::string quote(std::string_view text);

// A CEL list literal of string literals: ['a', 'b'].
std::string quote_list(const std::vector<std::string>& items);

// `text` with every RE2 metacharacter escaped, so that it matches itself.
std::string re_escape(std::string_view text);

// A CEL literal holding the regular expression `re`: a raw string r'...' when it can be one.
std::string regex_literal(std::string_view re);

// An anchored RE2 expression for a glob whose `*` matches any run of characters (policy/config/glob.h).
std::string glob_regex(std::string_view glob);

// Whether `text` (a CEL expression of type string) equals one of the exact names in `patterns` or
// matches one of its globs; "false" when `patterns` is empty.
std::string matches_any(std::string_view text, const std::vector<std::string>& patterns);

// `root.a.b` behind has(): "has(root.a) && has(root.a.b)". `path` is dotted; every part must be a
// CEL identifier (field names of the Kubernetes API are).
std::string has_path(std::string_view root, std::string_view path);

// The value at `root.path` when every part is present, else `otherwise`.
std::string value_or(std::string_view root, std::string_view path, std::string_view otherwise);

// `key in map && map[key] == value`, with `map` a CEL expression of a map of strings.
std::string map_holds(std::string_view map, std::string_view key, std::string_view value);

// (a || b || ...), each operand in parentheses, one per line; "false" for none; the operand
// itself for one (operands are expected to be parenthesized or atomic where it matters).
std::string any_of(const std::vector<std::string>& operands);
// (a && b && ...); "true" for none.
std::string all_of(const std::vector<std::string>& operands);

// Whether `name` can be written after a dot in CEL (an identifier that is not a reserved word).
bool is_cel_identifier(std::string_view name);

}  // namespace gpu_admission::webhook::backstop
