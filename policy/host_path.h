// Host path comparison for hostPath volume rules: paths are normalized lexically ("." and ".."
// resolved, repeated slashes collapsed) and /var/run is treated as /run, which it is a symlink
// to on every current distribution.
#pragma once

#include <string>
#include <string_view>

namespace gpu_admission::policy {

std::string normalize_host_path(std::string_view path);

// True when `path` is `dir` or lies below it (both normalized).
bool path_within(std::string_view path, std::string_view dir);

// True when mounting `path` exposes `target`: `target` is `path` or lies below it.
inline bool path_exposes(std::string_view path, std::string_view target) { return path_within(target, path); }

}  // namespace gpu_admission::policy
