// An elastic worker pool (an httplib::TaskQueue) for the connection engine's large requests.
// `core_threads` threads always run. More are started, up to `max_threads`, only when tasks are
// waiting and a worker has itself used more than `stall_threshold` of CPU on one task (a huge
// review), so that one slow request does not hold up the ones queued behind it. CPU saturation
// alone is never answered with more threads: on a busy core they would only add context
// switches. Threads above the core count
// exit after `idle_exit` without work. Submitting never blocks, and an exception escaping a task
// is caught and counted in the pool, never ending a thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace gpu_admission::webhook {

class WorkerPool : public httplib::TaskQueue {
 public:
  WorkerPool(size_t core_threads, size_t max_threads,
             std::chrono::milliseconds idle_exit = std::chrono::seconds(30),
             std::chrono::milliseconds stall_threshold = std::chrono::milliseconds(10));
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; false only after shutdown() began.
  bool submit(std::function<void()> task);

  void enqueue(std::function<void()> task) override { submit(std::move(task)); }
  // Starts threads for stalled workers if tasks are waiting (also done by submit). Returns true
  // while tasks are waiting, so that the caller checks again soon.
  bool maintain();
  // Runs the tasks already queued, then joins every thread. Idempotent.
  void shutdown() override;

  struct Stats {
    size_t threads = 0;
    size_t busy = 0;
    size_t queued = 0;
    size_t peak_threads = 0;
    unsigned long long task_exceptions = 0;
  };
  Stats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Worker {
    std::thread thread;
    bool core = false;
    bool exited = false;
    Clock::time_point busy_since{};  // epoch while idle
    // The worker's CPU clock, and its reading when the current task started: only a task that
    // has itself used more than `stall_threshold` of CPU counts as stuck. Wall-clock time alone
    // does not: on a saturated core it is mostly time spent waiting for the CPU.
    clockid_t cpu_clock{};
    bool has_cpu_clock = false;
    std::atomic<int64_t> task_cpu_start_ns{0};
  };

  void worker_main(Worker* self);
  void start_worker_locked(bool core);
  void grow_if_stalled_locked(Clock::time_point now);
  void reap_exited_locked(std::list<Worker>& out);
  size_t live_threads_locked() const { return workers_.size() - exited_; }

  const size_t core_threads_;
  const size_t max_threads_;
  const std::chrono::milliseconds idle_exit_;
  const std::chrono::milliseconds stall_threshold_;

  mutable std::mutex mutex_;
  std::condition_variable work_available_;
  std::deque<std::function<void()>> tasks_;
  std::list<Worker> workers_;  // stable addresses; exited ones are joined lazily
  size_t exited_ = 0;
  size_t idle_ = 0;
  size_t peak_threads_ = 0;
  unsigned long long task_exceptions_ = 0;
  bool stopping_ = false;
};

}  // namespace gpu_admission::webhook
