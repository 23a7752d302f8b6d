#include "policy/host_path.h"

#include <vector>

namespace gpu_admission::policy {

std::string normalize_host_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  if (parts.size() >= 2 && parts[0] == "var" && parts[1] == "run") parts.erase(parts.begin());
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

bool path_within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

}  // namespace gpu_admission::policy
