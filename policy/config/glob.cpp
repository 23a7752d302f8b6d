#include "policy/config/glob.h"

#include <algorithm>

namespace gpu_admission::policy {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative wildcard match with single backtrack point: linear in practice, no recursion.
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void GlobIndex::add(std::string_view pattern, int owner) {
  int rank = static_cast<int>(patterns_.size());
  patterns_.push_back({std::string(pattern), owner});
  size_t star = pattern.find('*');
  if (star == std::string_view::npos) {
    exact_.emplace(std::string(pattern), rank);  // keeps the first (lowest) rank
    exact_shapes_.add(pattern);
    return;
  }
  std::string prefix(pattern.substr(0, star));
  globs_by_prefix_[prefix].push_back(rank);
  prefix_shapes_.add(prefix);
  if (std::find(prefix_lengths_.begin(), prefix_lengths_.end(), prefix.size()) == prefix_lengths_.end()) {
    prefix_lengths_.insert(std::upper_bound(prefix_lengths_.begin(), prefix_lengths_.end(), prefix.size()),
                           prefix.size());
  }
}

void GlobIndex::KeyShapes::add(std::string_view key) {
  if (first_bytes_by_length.size() <= key.size()) first_bytes_by_length.resize(key.size() + 1);
  if (!key.empty()) first_bytes_by_length[key.size()].set(static_cast<unsigned char>(key[0]));
}

int GlobIndex::first_match_rank(std::string_view name) const {
  int best = -1;
  if (exact_shapes_.may_hold(name)) {
    auto it = exact_.find(name);
    if (it != exact_.end()) best = it->second;
  }
  for (size_t len : prefix_lengths_) {
    if (len > name.size()) break;
    if (!prefix_shapes_.may_hold(name.substr(0, len))) continue;
    auto it = globs_by_prefix_.find(name.substr(0, len));
    if (it == globs_by_prefix_.end()) continue;
    for (int rank : it->second) {  // ranks ascending within a bucket
      if (best != -1 && rank >= best) break;
      if (glob_match(patterns_[rank].text, name)) {
        best = rank;
        break;
      }
    }
  }
  return best;
}

int GlobIndex::first_match(std::string_view name) const {
  int rank = first_match_rank(name);
  return rank < 0 ? kNoMatch : patterns_[rank].owner;
}

std::string_view GlobIndex::matching_pattern(std::string_view name) const {
  int rank = first_match_rank(name);
  return rank < 0 ? std::string_view() : std::string_view(patterns_[rank].text);
}

}  // namespace gpu_admission::policy
