// Host paths in the backstop: one RE2 expression per table that matches a path exactly when the
// path's spelling normalizes (policy/views/host_path.h: slashes collapsed, "." dropped, ".."
// resolved, /var/run folded into /run, relative taken as absolute) to an entry of the table, for
// the spellings a regular expression can follow:
//   - any number of "/" and "." segments anywhere, a trailing "/", a relative path;
//   - ".." at the root (it stays at /), "x/.." anywhere (one level: a segment and its ".."), and
//     "/var/run/.." at the start (which climbs out of /run, not /var/run);
//   - /var/run/... for every entry under /run.
// A path that needs more ("a/b/../../x", "run/.." after a "var") is not matched: the backstop is
// more permissive than the webhook there, never stricter (the API server refuses ".." in
// hostPath.path anyway). An entry exactly at /var taken as a whole subtree would meet /var/run's
// fold, so it matches /var itself only (noted).
#pragma once

#include <string>
#include <vector>

#include "policy/views/host_path.h"

namespace gpu_admission::webhook::backstop {

// Two anchored expressions for `table`: `full` follows the spellings above; `simple`, far shorter,
// only paths made of plain segments (with or without a leading and a trailing "/"). What they leave
// out is appended to `notes`.
struct PathRegex {
  std::string simple;
  std::string full;
};
PathRegex host_path_regex(const policy::HostPathTable& table, std::vector<std::string>& notes);

// CEL: whether `path` (a string expression) matches: the simple expression for a path without "//",
// "." or ".." segments, the full one for the rest (the API server counts a regular expression's
// length into the cost of each match, and most paths are plain).
std::string path_matches(const std::string& path, const PathRegex& re);

}  // namespace gpu_admission::webhook::backstop
