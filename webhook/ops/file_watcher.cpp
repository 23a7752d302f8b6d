// FileWatcher and SignalWatcher (see file_watcher.h).
#include "webhook/ops/file_watcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>

namespace gpu_admission::webhook {

namespace {

constexpr size_t kMaxHashedBytes = 64u << 20;

// FNV-1a 64 of the file's bytes; 0 when unreadable.
uint64_t hash_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t hash = 1469598103934665603ull;
  char buffer[16 * 1024];
  size_t total = 0;
  while (total < kMaxHashedBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      hash ^= static_cast<unsigned char>(buffer[i]);
      hash *= 1099511628211ull;
    }
    total += static_cast<size_t>(n);
  }
  ::close(fd);
  return hash == 0 ? 1 : hash;
}

std::string resolve(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return path;
  return resolved;
}

}  // namespace

bool FileWatcher::Fingerprint::same_file_state(const Fingerprint& other) const {
  return exists == other.exists && resolved == other.resolved && device == other.device && inode == other.inode &&
         size == other.size && mtime_ns == other.mtime_ns;
}

FileWatcher::FileWatcher(std::chrono::milliseconds interval) : interval_(interval) {}

FileWatcher::~FileWatcher() { stop(); }

FileWatcher::Fingerprint FileWatcher::take_fingerprint(const std::string& path, const Fingerprint* previous) {
  Fingerprint print;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return print;  // missing (or a dangling symlink)
  print.exists = true;
  print.resolved = resolve(path);
  print.device = static_cast<uint64_t>(info.st_dev);
  print.inode = static_cast<uint64_t>(info.st_ino);
  print.size = static_cast<int64_t>(info.st_size);
  print.mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  if (previous != nullptr && previous->same_file_state(print)) {
    print.content_hash = previous->content_hash;
  } else {
    print.content_hash = hash_file(path);
  }
  return print;
}

void FileWatcher::watch(std::vector<std::string> paths, Callback on_change) {
  Group group;
  for (auto& path : paths) {
    WatchedFile file;
    file.path = std::move(path);
    file.last = take_fingerprint(file.path, nullptr);
    group.files.push_back(std::move(file));
  }
  group.on_change = std::move(on_change);
  groups_.push_back(std::move(group));
}

void FileWatcher::poll_now() {
  for (auto& group : groups_) {
    bool changed = false;
    for (auto& file : group.files) {
      Fingerprint now = take_fingerprint(file.path, &file.last);
      // Only the content matters: a touched or re-linked file with the same bytes is no change.
      if (now.exists != file.last.exists || now.content_hash != file.last.content_hash) changed = true;
      file.last = std::move(now);
    }
    if (changed && group.on_change) {
      try {
        group.on_change();
      } catch (...) {
        // The callback reports its own failures; a throw must not end the watcher.
      }
    }
  }
}

void FileWatcher::start() {
  if (thread_.joinable() || groups_.empty()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void FileWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileWatcher::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (wake_.wait_for(lock, interval_, [&] { return stopping_; })) break;
    lock.unlock();
    try {
      poll_now();
    } catch (...) {
    }
    lock.lock();
  }
}

// ---------------------------------------------------------------------------------------------

namespace {

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void SignalWatcher::block_handled_signals() {
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(std::function<void()> on_reload, std::function<void(int)> on_terminate)
    : on_reload_(std::move(on_reload)), on_terminate_(std::move(on_terminate)) {}

SignalWatcher::~SignalWatcher() { stop(); }

void SignalWatcher::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void SignalWatcher::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void SignalWatcher::run() {
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // in case the creator forgot
  const timespec tick{0, 100'000'000};
  while (!stopping_) {
    const int received = ::sigtimedwait(&set, nullptr, &tick);
    if (received < 0) continue;  // EAGAIN (tick) or EINTR
    try {
      if (received == SIGHUP) {
        if (on_reload_) on_reload_();
      } else if (on_terminate_) {
        on_terminate_(received);
      }
    } catch (...) {
      // Callbacks report their own failures.
    }
  }
}

}  // namespace gpu_admission::webhook
