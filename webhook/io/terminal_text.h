// Text for a terminal: what a tenant wrote (object names and namespaces, messages, field paths,
// patch paths and values) printed by the text outputs of `check`, `test` and `audit`, escaped so
// that no input can move the cursor, erase or rewrite a line, reorder what a reader sees or start
// a line of its own:
//   C0 controls (newline and tab too) and DEL   -> \x1b, \x0a, \x7f
//   C1 controls U+0080-U+009F                   -> \u0085
//   bidi controls U+202A-U+202E, U+2066-U+2069  -> \u202e
//   line and paragraph separators U+2028/2029   -> \u2028
//   bytes that are not UTF-8                    -> \xff
// Everything else is kept as it is (a backslash too: the escapes are for reading, not reversible).
// JSON and YAML outputs do not use this: they keep names and objects exactly.
#pragma once

#include <string>
#include <string_view>

namespace gpu_admission::webhook {

std::string terminal_text(std::string_view text);
void append_terminal_text(std::string& out, std::string_view text);

}  // namespace gpu_admission::webhook
