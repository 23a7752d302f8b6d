// Hot-reload triggers for `serve`: a FileWatcher that notices when files change the way
// Kubernetes changes mounted ConfigMaps and Secrets (the file is a symlink into `..data/`, and
// `..data` is swapped atomically to a new directory), by plain rename-over or by in-place
// writes; and a SignalWatcher that turns SIGHUP into "reload everything" and SIGTERM/SIGINT
// into "shut down", on a dedicated thread using sigtimedwait (no async signal handlers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpu_admission::webhook {

class FileWatcher {
 public:
  using Callback = std::function<void()>;

  explicit FileWatcher(std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Watches `paths` as one group: `on_change` runs (on the watcher thread) once per poll in
  // which the content of any of them changed, appeared or disappeared. The current state is
  // recorded now, so call this before loading the files: a change in between is then seen.
  // Must be called before start().
  void watch(std::vector<std::string> paths, Callback on_change);

  void start();
  void stop();        // joins the thread; idempotent
  void poll_now();    // one synchronous check (tests; not concurrently with a running thread)

 private:
  // What identifies a file's content: the resolved path and inode with size and mtime first,
  // and a content hash, computed only when those differ (so an unchanged file costs a stat).
  struct Fingerprint {
    bool exists = false;
    std::string resolved;
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = -1;
    int64_t mtime_ns = 0;
    uint64_t content_hash = 0;
    bool same_file_state(const Fingerprint& other) const;
  };
  struct WatchedFile {
    std::string path;
    Fingerprint last;
  };
  struct Group {
    std::vector<WatchedFile> files;
    Callback on_change;
  };

  static Fingerprint take_fingerprint(const std::string& path, const Fingerprint* previous);
  void run();

  const std::chrono::milliseconds interval_;
  std::vector<Group> groups_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

class SignalWatcher {
 public:
  // Blocks SIGHUP, SIGTERM and SIGINT in the calling thread. Call it first thing in main, before
  // any thread exists, so that every thread inherits the mask and only the watcher sees them.
  static void block_handled_signals();

  SignalWatcher(std::function<void()> on_reload, std::function<void(int signal)> on_terminate);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  void start();
  void stop();  // joins the thread; idempotent

 private:
  void run();

  std::function<void()> on_reload_;
  std::function<void(int)> on_terminate_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace gpu_admission::webhook
