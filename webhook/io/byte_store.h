// Bytes read back by offset, so that a large input can be read twice without being held: a
// regular file as it lies (read with pread, the descriptor kept open), or a spool that keeps what
// is appended to it in an unlinked temporary file (in a given directory, else $TMPDIR, else /tmp),
// or in memory when no temporary file can be made there. `audit` reads its FILEs through these.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

class ByteStore {
 public:
  ~ByteStore();
  ByteStore(const ByteStore&) = delete;
  ByteStore& operator=(const ByteStore&) = delete;

  // The open regular file `fd` (taken over: closed with the store) from byte `base` on, named
  // `name` in errors.
  static std::unique_ptr<ByteStore> over_file(int fd, uint64_t base, uint64_t size, std::string name);
  // An empty spool; `dir` empty: $TMPDIR, else /tmp.
  static std::unique_ptr<ByteStore> spool(const std::string& dir = {});

  // Appends to a spool (a file store cannot be appended to). False with `error` set when the
  // temporary file cannot be written.
  bool append(std::string_view bytes, std::string& error);
  // Drops a spool's bytes from `offset` on (what was appended for nothing).
  void truncate(uint64_t offset);
  // Reads `size` bytes at `offset` into `out` (replacing its content).
  bool read(uint64_t offset, size_t size, std::string& out, std::string& error) const;

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  bool in_memory() const { return fd_ < 0; }

 private:
  ByteStore() = default;
  int fd_ = -1;
  uint64_t base_ = 0, size_ = 0;
  bool is_spool_ = false;
  std::string memory_;  // a spool without a temporary file
  std::string name_;
};

}  // namespace gpu_admission::webhook
