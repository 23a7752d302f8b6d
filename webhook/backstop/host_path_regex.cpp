// The host path table as one regular expression; see host_path_regex.h. The table's entries
// become a trie of path segments, written as nested alternations, so each separator pattern is
// written once per edge rather than once per entry.
#include "webhook/backstop/host_path_regex.h"

#include <memory>
#include <string_view>

#include "webhook/backstop/cel_text.h"

namespace gpu_admission::webhook::backstop {
namespace {

using policy::HostPathMatch;

// The pieces of the full expression, in terms of segments (the text between two "/"):
// a segment other than "", "." and ".." that is not "run" either (a "run" that a ".." removes may
// be /var/run's, which the kernel resolves as /run: such spellings are left to the webhook).
const std::string kNormalNotRun =
    R"((?:[^/.r][^/]*|r(?:[^/u][^/]*)?|ru(?:[^/n][^/]*)?|run[^/]+|\.[^/.][^/]*|\.\.[^/]+))";
// A segment and the ".." that removes it, with "." and empty segments between: nothing.
const std::string kCancel = kNormalNotRun + R"((?:/\.?)*/\.\.)";
// What leaves the path as it is: an empty or "." segment, or a cancelled one.
const std::string kNull = "(?:\\.?|" + kCancel + ")";
// /var/run/.. at the root: /var/run is /run, so this is / again.
const std::string kVarRunUp = "var(?:/" + kNull + ")*/run(?:/" + kNull + ")*/\\.\\.";
// Any segment but "..".
const std::string kAnyButUp = R"((?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.?))";

// How segments are separated, led into, followed and trailed: in the full expression (any
// spelling above), and in the simple one (a path without "", "." and ".." segments, but for a
// leading and a trailing "/"), which is far shorter: the API server counts a regular expression's
// length into the cost of every match.
struct Pieces {
  std::string sep;    // between two kept segments
  std::string lead;   // before the first kept segment
  std::string root;   // the whole path when it is the root
  std::string below;  // anything under a subtree entry, never climbing out of it
  std::string trail;  // after the last kept segment of an exact entry
};

const Pieces kFull = {
    "(?:/" + kNull + ")*/",
    "(?:(?:\\.?|\\.\\.|" + kCancel + "|" + kVarRunUp + ")/)*",
    "(?:\\.?|\\.\\.|" + kCancel + "|" + kVarRunUp + ")",
    "(?:/(?:" + kAnyButUp + "|" + kCancel + "))*",
    "(?:/" + kNull + ")*",
};
const Pieces kSimple = {"/", "/?", "", "(?:/[^/]+)*/?", "/?"};

struct Node {
  std::string segment;
  bool exact = false;    // the path itself
  bool subtree = false;  // the path and everything under it
  std::vector<std::unique_ptr<Node>> children;
  std::vector<std::string> name_prefixes;  // last segments matched as prefixes (/dev/nvidia*)

  Node& child(std::string_view seg) {
    for (auto& c : children)
      if (c->segment == seg) return *c;
    children.push_back(std::make_unique<Node>());
    children.back()->segment = std::string(seg);
    return *children.back();
  }
};

std::vector<std::string_view> segments_of(std::string_view normalized) {
  std::vector<std::string_view> out;
  size_t start = 1;  // normalized paths start with "/"
  while (start < normalized.size()) {
    size_t slash = normalized.find('/', start);
    if (slash == std::string_view::npos) slash = normalized.size();
    out.push_back(normalized.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

std::string join_alternatives(const std::vector<std::string>& alts) {
  std::string out = "(?:";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? "|" : "") + alts[i];
  return out + ")";
}

// What may follow once `node`'s own segment is matched.
std::string after(const Node& node, const Pieces& k) {
  std::vector<std::string> alts;
  if (node.subtree) alts.push_back(k.below);
  else if (node.exact) alts.push_back(k.trail);
  for (const auto& c : node.children) alts.push_back(k.sep + re_escape(c->segment) + after(*c, k));
  for (const auto& p : node.name_prefixes) alts.push_back(k.sep + re_escape(p) + "[^/]*" + k.below);
  return join_alternatives(alts);
}

std::string expression(const Node& root, const Pieces& k) {
  if (root.subtree) return "^(?s:.*)$";  // "/" with everything under it: any path
  std::vector<std::string> alts;
  if (root.exact) alts.push_back(k.root);
  for (const auto& c : root.children) {
    // Everything under /run is also spelled /var/run/...: the kernel resolves the symlink.
    std::string head = c->segment == "run" ? "(?:var" + k.sep + ")?run" : re_escape(c->segment);
    alts.push_back(head + after(*c, k));
  }
  for (const auto& p : root.name_prefixes) alts.push_back(re_escape(p) + "[^/]*" + k.below);
  return "^" + k.lead + join_alternatives(alts) + "$";
}

void add_entry(Node& root, const policy::HostPathEntry& e, std::vector<std::string>& notes) {
  std::vector<std::string_view> segs = segments_of(e.path);
  HostPathMatch match = e.match;
  if (match == HostPathMatch::Subtree && e.path == "/var") {
    notes.push_back("host path " + e.display + " is matched only as itself, not with what lies under it "
                    "(a path under /var/run is one under /run)");
    match = HostPathMatch::Exact;
  }
  if (match == HostPathMatch::NamePrefix && !segs.empty()) {
    std::string_view last = segs.back();
    segs.pop_back();
    Node* n = &root;
    for (auto s : segs) n = &n->child(s);
    n->name_prefixes.emplace_back(last);
    return;
  }
  Node* n = &root;
  for (auto s : segs) n = &n->child(s);
  (match == HostPathMatch::Subtree ? n->subtree : n->exact) = true;
}

}  // namespace

PathRegex host_path_regex(const policy::HostPathTable& table, std::vector<std::string>& notes) {
  Node root;
  for (const auto& e : table.entries()) add_entry(root, e, notes);
  return {expression(root, kSimple), expression(root, kFull)};
}

std::string path_matches(const std::string& path, const PathRegex& re) {
  // "//", or a "." or ".." segment: the full expression; else the simple one.
  return "(" + path + ".matches(r'//|(?:^|/)\\.\\.?(?:/|$)') ? " + path + ".matches(" + regex_literal(re.full) +
         ") : " + path + ".matches(" + regex_literal(re.simple) + "))";
}

}  // namespace gpu_admission::webhook::backstop
