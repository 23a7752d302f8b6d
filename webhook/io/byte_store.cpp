#include "webhook/io/byte_store.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace gpu_admission::webhook {

ByteStore::~ByteStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<ByteStore> ByteStore::over_file(int fd, uint64_t base, uint64_t size, std::string name) {
  std::unique_ptr<ByteStore> store(new ByteStore());
  store->fd_ = fd;
  store->base_ = base;
  store->size_ = size;
  store->name_ = std::move(name);
  return store;
}

std::unique_ptr<ByteStore> ByteStore::spool(const std::string& dir) {
  std::unique_ptr<ByteStore> store(new ByteStore());
  store->is_spool_ = true;
  std::string where = dir;
  if (where.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    where = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string path = where + "/gpu-admission-spool-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd >= 0) {
    ::unlink(path.c_str());  // gone with the descriptor
    store->fd_ = fd;
    store->name_ = "a temporary file in " + where;
  } else {
    store->name_ = "memory";
  }
  return store;
}

bool ByteStore::append(std::string_view bytes, std::string& error) {
  if (!is_spool_) {
    error = "cannot append to " + name_;
    return false;
  }
  if (fd_ < 0) {
    memory_.append(bytes);
    size_ += bytes.size();
    return true;
  }
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write " + name_ + ": " + std::strerror(errno);
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  return true;
}

void ByteStore::truncate(uint64_t offset) {
  if (!is_spool_ || offset >= size_) return;
  if (fd_ < 0) {
    memory_.resize(offset);
  } else if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0 || ::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    return;  // the bytes stay: only space is lost
  }
  size_ = offset;
}

bool ByteStore::read(uint64_t offset, size_t size, std::string& out, std::string& error) const {
  out.clear();
  if (offset > size_ || size > size_ - offset) {
    error = "cannot read " + name_ + ": past its end (it changed while it was read)";
    return false;
  }
  if (fd_ < 0) {
    out.assign(memory_, offset, size);
    return true;
  }
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, out.data() + done, size - done, static_cast<off_t>(base_ + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot read " + name_ + (n == 0 ? ": it got shorter while it was read" : ": " + std::string(std::strerror(errno)));
      out.clear();
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace gpu_admission::webhook
