// RFC 6902 JSON Patch operations as produced by mutations, and their JSON text. Paths are
// RFC 6901 pointers; keys are escaped ('~' -> "~0", '/' -> "~1").
//
// A Patch keeps the text of all its operations in one buffer that clear() keeps, so a patch
// reused across requests (Decision::clear) builds its operations without allocating: callers
// write each path and value straight into that buffer.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::policy {

// One operation, viewing its patch's text: valid until the patch is next changed.
struct PatchOp {
  enum class Kind { Add, Remove };
  Kind kind = Kind::Add;
  std::string_view path;   // the JSON Pointer, not JSON-escaped
  std::string_view value;  // JSON text of the value (Add only; empty for Remove)
};

class Patch {
 public:
  // Adds an operation: `write_path(out)` appends the pointer to `out`, then `write_value(out)`
  // appends the value's JSON text.
  template <class PathWriter, class ValueWriter>
    requires std::invocable<PathWriter&, std::string&> && std::invocable<ValueWriter&, std::string&>
  void add(PathWriter&& write_path, ValueWriter&& write_value) {
    const size_t path_at = text_.size();
    write_path(text_);
    const size_t value_at = text_.size();
    write_value(text_);
    records_.push_back({PatchOp::Kind::Add, path_at, value_at, text_.size()});
  }
  template <class PathWriter>
    requires std::invocable<PathWriter&, std::string&>
  void remove(PathWriter&& write_path) {
    const size_t path_at = text_.size();
    write_path(text_);
    records_.push_back({PatchOp::Kind::Remove, path_at, text_.size(), text_.size()});
  }
  // The same with the path and value already written.
  void add(std::string_view path, std::string_view value_json);
  void remove(std::string_view path);

  // Appends the operations of `other` after this patch's.
  void append(const Patch& other);
  // Removes every operation, keeping the buffers for the next patch.
  void clear();

  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  PatchOp operator[](size_t i) const;

  class const_iterator {
   public:
    const_iterator(const Patch& patch, size_t i) : patch_(&patch), i_(i) {}
    PatchOp operator*() const { return (*patch_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const const_iterator& other) const { return i_ == other.i_; }

   private:
    const Patch* patch_;
    size_t i_;
  };
  const_iterator begin() const { return {*this, 0}; }
  const_iterator end() const { return {*this, records_.size()}; }

 private:
  // Offsets into text_ (which moves when it grows): path is [path_at, value_at), value
  // [value_at, end).
  struct Record {
    PatchOp::Kind kind;
    size_t path_at, value_at, end;
  };

  std::string text_;
  std::vector<Record> records_;
};

// Appends `key` escaped as one JSON Pointer reference token.
void append_pointer_token(std::string& out, std::string_view key);
std::string pointer_token(std::string_view key);

// Appends `s` as a JSON string literal (quoted, escaped).
void append_json_string(std::string& out, std::string_view s);
void append_json_string(std::pmr::string& out, std::string_view s);

// The patch as a JSON array text: [{"op":"add","path":"...","value":...}, ...]
std::string patch_to_json(const Patch& patch);
void append_patch_json(std::string& out, const Patch& patch);

}  // namespace gpu_admission::policy
