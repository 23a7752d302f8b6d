// Name matching for exemptions and tenant namespaces: exact names and `*` globs.
// GlobIndex answers "which is the first (lowest-ranked) pattern matching this name" without
// scanning every pattern: exact names live in a hash map, globs are bucketed by their literal
// prefix so a lookup only tries globs whose prefix is a prefix of the name. Before hashing, a
// lookup checks (length, first byte) against the keys it could find: most names asked about
// (a tenant's namespace against the exemptions) hash nothing.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/string_map.h"

namespace gpu_admission::policy {

// True when `name` matches `pattern`, where `*` matches any run of characters (including none).
bool glob_match(std::string_view pattern, std::string_view name);

class GlobIndex {
 public:
  static constexpr int kNoMatch = -1;

  // Adds a pattern with the owner it belongs to (e.g. a tenant index). Lower ranks win.
  void add(std::string_view pattern, int owner);

  // The owner of the lowest-ranked (first-added) matching pattern, or kNoMatch.
  int first_match(std::string_view name) const;

  // The pattern text that matched, for explanations; empty when none did.
  std::string_view matching_pattern(std::string_view name) const;

  bool empty() const { return patterns_.empty(); }
  size_t size() const { return patterns_.size(); }

 private:
  struct Pattern {
    std::string text;
    int owner;
  };
  int first_match_rank(std::string_view name) const;
  // Whether some key of a map has this length and first byte (a cheap test before hashing).
  struct KeyShapes {
    std::vector<std::bitset<256>> first_bytes_by_length;
    void add(std::string_view key);
    bool may_hold(std::string_view key) const {
      return key.size() < first_bytes_by_length.size() &&
             (key.empty() || first_bytes_by_length[key.size()].test(static_cast<unsigned char>(key[0])));
    }
  };

  std::vector<Pattern> patterns_;                              // rank = index
  StringMap<int> exact_;                         // name -> best rank
  StringMap<std::vector<int>> globs_by_prefix_;  // literal prefix -> ranks
  std::vector<size_t> prefix_lengths_;           // distinct prefix lengths, ascending
  KeyShapes exact_shapes_, prefix_shapes_;
};

}  // namespace gpu_admission::policy
