#include "policy/base/source.h"

namespace gpu_admission::policy {

SourceMark SourceMap::find(std::string_view path) const {
  while (true) {
    auto it = marks_.find(path);
    if (it != marks_.end()) return it->second;
    if (path.empty()) return {};
    // Drop the last component: ".key", "[N]" or "[\"key\"]".
    size_t cut = path.size();
    if (path.back() == ']') {
      cut = path.rfind('[');
      // A quoted key may contain '['; find the opening `["` that starts it.
      if (path.size() >= 2 && path[path.size() - 2] == '"') cut = path.rfind("[\"");
    } else {
      size_t dot = path.rfind('.');
      cut = dot == std::string_view::npos ? 0 : dot;
    }
    if (cut == std::string_view::npos) cut = 0;
    path = path.substr(0, cut);
  }
}

bool has_errors(const Issues& issues) {
  for (const auto& issue : issues)
    if (issue.severity == Issue::Severity::Error) return true;
  return false;
}

std::string format_issue(const Issue& issue, std::string_view file) {
  std::string out(file.empty() ? "<input>" : file);
  if (issue.mark.line > 0) {
    out += ':' + std::to_string(issue.mark.line);
    if (issue.mark.column > 0) out += ':' + std::to_string(issue.mark.column);
  }
  switch (issue.severity) {
    case Issue::Severity::Error: out += ": error: "; break;
    case Issue::Severity::Warning: out += ": warning: "; break;
    case Issue::Severity::Note: out += ": note: "; break;
  }
  if (!issue.path.empty()) {
    out += issue.path;
    out += ": ";
  }
  out += issue.message;
  return out;
}

namespace {
bool identifier_like(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

std::string child_path(std::string_view parent, std::string_view key) {
  std::string out(parent);
  if (identifier_like(key)) {
    if (!out.empty()) out += '.';
    out += key;
  } else {
    out += "[\"";
    for (char c : key) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"]";
  }
  return out;
}

std::string index_path(std::string_view parent, size_t index) {
  std::string out(parent);
  out += '[';
  out += std::to_string(index);
  out += ']';
  return out;
}

}  // namespace gpu_admission::policy
