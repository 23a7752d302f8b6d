// Elastic worker pool (see worker_pool.h).
#include "webhook/server/worker_pool.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <system_error>

namespace gpu_admission::webhook {

WorkerPool::WorkerPool(size_t core_threads, size_t max_threads, std::chrono::milliseconds idle_exit,
                       std::chrono::milliseconds stall_threshold)
    : core_threads_(std::max<size_t>(1, core_threads)),
      max_threads_(std::max(std::max<size_t>(1, core_threads), max_threads)),
      idle_exit_(idle_exit),
      stall_threshold_(stall_threshold) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < core_threads_; ++i) start_worker_locked(true);
  if (workers_.empty())
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                            "cannot start any worker thread");
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::start_worker_locked(bool core) {
  workers_.emplace_back();
  Worker* worker = &workers_.back();
  worker->core = core;
  try {
    worker->thread = std::thread([this, worker] { worker_main(worker); });
    peak_threads_ = std::max(peak_threads_, live_threads_locked());
  } catch (const std::system_error&) {
    workers_.pop_back();  // out of threads: the running ones will get to the task
  }
}

void WorkerPool::grow_if_stalled_locked(Clock::time_point now) {
  if (stopping_ || tasks_.size() <= idle_) return;
  size_t stalled = 0;
  const int64_t threshold = std::chrono::duration_cast<std::chrono::nanoseconds>(stall_threshold_).count();
  for (const Worker& worker : workers_) {
    if (worker.exited || worker.busy_since == Clock::time_point{} || now - worker.busy_since <= stall_threshold_) continue;
    timespec cpu{};
    if (worker.has_cpu_clock && clock_gettime(worker.cpu_clock, &cpu) == 0) {
      const int64_t used = static_cast<int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec -
                           worker.task_cpu_start_ns.load(std::memory_order_relaxed);
      if (used > threshold) ++stalled;
    }
  }
  size_t wanted = std::min(stalled, tasks_.size() - idle_);
  while (wanted-- > 0 && live_threads_locked() < max_threads_) start_worker_locked(false);
}

void WorkerPool::reap_exited_locked(std::list<Worker>& out) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->exited) {
      auto next = std::next(it);
      out.splice(out.end(), workers_, it);
      --exited_;
      it = next;
    } else {
      ++it;
    }
  }
}

bool WorkerPool::submit(std::function<void()> task) {
  std::list<Worker> finished;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
    if (exited_ > 0) reap_exited_locked(finished);
    grow_if_stalled_locked(Clock::now());
  }
  work_available_.notify_one();
  for (Worker& worker : finished) worker.thread.join();
  return true;
}

bool WorkerPool::maintain() {
  std::list<Worker> finished;
  bool waiting;
  {
    std::lock_guard lock(mutex_);
    if (exited_ > 0) reap_exited_locked(finished);
    grow_if_stalled_locked(Clock::now());
    waiting = !tasks_.empty();
  }
  if (waiting) work_available_.notify_all();
  for (Worker& worker : finished) worker.thread.join();
  return waiting;
}

void WorkerPool::worker_main(Worker* self) {
  {
    std::lock_guard guard(mutex_);
    self->has_cpu_clock = pthread_getcpuclockid(pthread_self(), &self->cpu_clock) == 0;
  }
  std::unique_lock lock(mutex_);
  while (true) {
    ++idle_;
    const bool woken = work_available_.wait_for(lock, idle_exit_, [&] { return !tasks_.empty() || stopping_; });
    --idle_;
    if (tasks_.empty()) {
      if (stopping_) return;
      if (!woken && !self->core) {
        self->exited = true;
        ++exited_;
        return;
      }
      continue;
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    self->busy_since = Clock::now();
    timespec cpu{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
      self->task_cpu_start_ns.store(static_cast<int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec,
                                    std::memory_order_relaxed);
    lock.unlock();
    try {
      task();
    } catch (...) {
      lock.lock();
      ++task_exceptions_;
      lock.unlock();
    }
    task = nullptr;  // release captures outside the lock
    lock.lock();
    self->busy_since = Clock::time_point{};
  }
}

void WorkerPool::shutdown() {
  std::list<Worker> workers;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    workers.splice(workers.end(), workers_);
    exited_ = 0;
  }
  work_available_.notify_all();
  for (Worker& worker : workers) {
    if (!worker.thread.joinable()) continue;
    if (worker.thread.get_id() == std::this_thread::get_id()) worker.thread.detach();  // shutdown from a task
    else worker.thread.join();
  }
}

WorkerPool::Stats WorkerPool::stats() const {
  std::lock_guard lock(mutex_);
  Stats stats;
  stats.threads = live_threads_locked();
  stats.busy = stats.threads - std::min(stats.threads, idle_);
  stats.queued = tasks_.size();
  stats.peak_threads = peak_threads_;
  stats.task_exceptions = task_exceptions_;
  return stats;
}

}  // namespace gpu_admission::webhook
