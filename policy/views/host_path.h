// Host paths for the hostPath volume rules (gpu-device-access, mps-adversarial): lexical
// normalization, and HostPathTable, the one mechanism by which a rule decides whether mounting a
// host path reaches something it protects. A table holds entries (a path and everything under
// it, or a name prefix such as /dev/nvidia*) and the directories above them (exact paths:
// mounting a directory exposes everything below it). Tables are built once (the GPU table when a
// policy is compiled, the MPS table on first use) and looked up without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::policy {

// Lexical normalization, what the node's kernel would resolve when the path names no symlink
// other than /var/run: repeated slashes collapsed, "." dropped, ".." resolved (never above "/"),
// trailing slash stripped, a relative path taken as absolute, /var/run folded into /run (it is a
// symlink to /run on every current distribution, so "/var/run/.." is "/"), and the path cut at a
// NUL byte (what the mount(2) system call would see). See docs/design.md.
std::string normalize_host_path(std::string_view path);

// True when `path` is `dir` or lies below it (both normalized).
bool path_within(std::string_view path, std::string_view dir);

// True when mounting `path` exposes `target`: `target` is `path` or lies below it.
inline bool path_exposes(std::string_view path, std::string_view target) { return path_within(target, path); }

enum class HostPathMatch : uint8_t {
  Subtree,     // the path and everything under it
  NamePrefix,  // every path whose normalized text starts with it: /dev/nvidia matches /dev/nvidia0/x
  Exact,       // only the path itself (a directory above a protected entry)
};

struct HostPathEntry {
  std::string path;     // normalized
  std::string display;  // as shown in messages: "/dev/nvidia*" for a name prefix
  HostPathMatch match = HostPathMatch::Subtree;
  std::string reason;   // "NVIDIA device nodes", "contains /dev/nvidia* (NVIDIA device nodes)"
};

// What a built-in table entry is made from.
struct HostPathSpec {
  std::string_view path;
  HostPathMatch match;
  std::string_view reason;
};

class HostPathTable {
 public:
  // Appends an entry; `path` is normalized here.
  void add(std::string_view path, HostPathMatch match, std::string reason);
  // Adds every proper ancestor of entries [0, count) as an Exact entry whose reason names the
  // first entry below it, unless an entry already matches that directory.
  void add_ancestors_of_first(size_t count);

  // The first entry that `normalized` (a normalize_host_path result) matches, or nullptr.
  const HostPathEntry* find(std::string_view normalized) const;
  bool matches(std::string_view normalized) const { return find(normalized) != nullptr; }

  const std::vector<HostPathEntry>& entries() const { return entries_; }

 private:
  std::vector<HostPathEntry> entries_;
};

// The built-in entries of gpu-device-access (the required list, plus the /sys additions in
// docs/design.md), without their ancestors.
const std::vector<HostPathSpec>& builtin_gpu_host_path_specs();

// The gpu-device-access table: built-in entries, then the policy's `spec.gpuHostPaths` (each a
// subtree; their parents are not added), then the ancestors of the built-in entries.
HostPathTable make_gpu_host_path_table(const std::vector<std::string>& policy_paths);

// The mps-adversarial table: the MPS pipe directories and their ancestors (built once).
const HostPathTable& mps_pipe_host_paths();

}  // namespace gpu_admission::policy
