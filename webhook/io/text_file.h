// Reading input files (policies, manifests, suites) with a size bound and a clear error.
#pragma once

#include <cstddef>
#include <string>

namespace gpu_admission::webhook {

inline constexpr size_t kMaxPolicyFileBytes = 16u << 20;
inline constexpr size_t kMaxManifestBytes = 64u << 20;

struct TextFile {
  std::string text;
  std::string error;  // empty on success, e.g. "cannot read: No such file or directory"
};

// `path` "-" reads standard input.
TextFile read_text_file(const std::string& path, size_t max_bytes);

}  // namespace gpu_admission::webhook
