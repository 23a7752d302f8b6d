// RFC 6902 JSON Patch operations as produced by mutations, and their JSON text. Paths are
// RFC 6901 pointers; keys are escaped ('~' -> "~0", '/' -> "~1").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::policy {

struct PatchOp {
  enum class Kind { Add, Remove };
  Kind kind = Kind::Add;
  std::string path;
  std::string value;  // JSON text of the value (Add only)
};

using Patch = std::vector<PatchOp>;

// Appends `key` escaped as one JSON Pointer reference token.
void append_pointer_token(std::string& out, std::string_view key);
std::string pointer_token(std::string_view key);

// Appends `s` as a JSON string literal (quoted, escaped).
void append_json_string(std::string& out, std::string_view s);

// The patch as a JSON array text: [{"op":"add","path":"...","value":...}, ...]
std::string patch_to_json(const Patch& patch);
void append_patch_json(std::string& out, const Patch& patch);

}  // namespace gpu_admission::policy
