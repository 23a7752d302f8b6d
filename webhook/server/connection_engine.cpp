// The connection engine's lifecycle and shared state: setting up the event loops on their
// listeners, starting, draining and stopping them, the stats, the connection count over all
// loops (the cap, wait_until_empty) and closing a connection. The loops themselves are in
// event_loop.cpp; serving a connection is in connection_io.cpp.
#include "webhook/server/connection_engine.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "webhook/server/tls_identity.h"

namespace gpu_admission::webhook::detail {

bool ConnectionEngine::start(std::vector<int> listeners, std::string& error) {
  if (!set_up_loops(listeners, error)) {
    for (int& fd : listeners) close_fd(fd);
    for (auto& loop : loops_) {
      close_fd(loop->listen_fd);
      close_fd(loop->wake_fd);
      close_fd(loop->epoll_fd);
    }
    loops_.clear();
    return false;
  }
  return start_threads(error);
}

// One EventLoop per configured loop, each with its epoll set, eventfd and listener: its own
// socket when there is one per loop, else a duplicate of the shared one, which every loop
// registers with EPOLLEXCLUSIVE so that a new connection wakes one loop, not all of them.
// Takes the descriptors out of `listeners` as it goes.
bool ConnectionEngine::set_up_loops(std::vector<int>& listeners, std::string& error) {
  const size_t count = std::max<size_t>(1, config_.event_loops);
  if (listeners.size() != count && listeners.size() != 1) {
    error = config_.name + ": " + std::to_string(listeners.size()) + " listening sockets for " + std::to_string(count) +
            " event loops";
    return false;
  }
  const bool shared = listeners.size() != count;
  listeners_ = listeners.size();
  for (size_t i = 0; i < count; ++i) {
    loops_.push_back(std::make_unique<EventLoop>());
    EventLoop& loop = *loops_.back();
    loop.index = static_cast<uint32_t>(i);
    loop.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    loop.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop.epoll_fd < 0 || loop.wake_fd < 0) {
      error = config_.name + ": cannot create epoll/eventfd: " + errno_text(errno);
      return false;
    }
    if (!shared || i == 0) std::swap(loop.listen_fd, listeners[shared ? 0 : i]);
    else loop.listen_fd = ::fcntl(loops_.front()->listen_fd, F_DUPFD_CLOEXEC, 0);
    if (loop.listen_fd < 0) {
      error = config_.name + ": cannot duplicate the listening socket: " + errno_text(errno);
      return false;
    }
    // Edge-triggered like the connections: accept_connections() takes the backlog until EAGAIN
    // or remembers (listener_ready) that some may be left.
    const uint32_t listen_events = EPOLLIN | EPOLLET | (shared ? EPOLLEXCLUSIVE : 0u);
    if (epoll_control(loop, EPOLL_CTL_ADD, loop.listen_fd, listen_events, kListenTag) != 0 ||
        epoll_control(loop, EPOLL_CTL_ADD, loop.wake_fd, EPOLLIN, kWakeTag) != 0) {
      error = config_.name + ": epoll_ctl: " + errno_text(errno);
      return false;
    }
    loop.listening = true;
    loop.listener_ready = true;  // connections may be waiting already
  }
  return true;
}

bool ConnectionEngine::start_threads(std::string& error) {
  try {
    pool_ = std::make_unique<WorkerPool>(config_.core_threads, config_.max_threads);
    for (auto& loop : loops_) {
      EventLoop* self = loop.get();
      loop->thread = std::thread([this, self] { loop_main(*self); });
    }
  } catch (const std::exception& e) {
    error = config_.name + ": cannot start threads: " + e.what();
    stop();
    return false;
  }
  return true;
}

void ConnectionEngine::wake(EventLoop& loop) {
  if (loop.wake_fd >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(loop.wake_fd, &one, sizeof one);
  }
}

void ConnectionEngine::wake_all() {
  for (auto& loop : loops_) wake(*loop);
}

// The listeners stop at once, not when each loop gets to it: shutdown() ends a listening socket
// (new connections to the port are refused from here on) while its descriptor stays valid for
// the loop that closes it.
void ConnectionEngine::stop_accepting() {
  stop_accepting_requested_ = true;
  {
    std::lock_guard lock(listeners_mutex_);
    for (auto& loop : loops_)
      if (loop->listen_fd >= 0) ::shutdown(loop->listen_fd, SHUT_RDWR);
  }
  wake_all();
}

void ConnectionEngine::begin_draining() {
  draining_ = true;
  wake_all();
}

bool ConnectionEngine::wait_until_empty(Clock::time_point deadline) {
  std::unique_lock lock(empty_mutex_);
  return empty_.wait_until(lock, deadline, [&] { return open_connections_.load() == 0; });
}

void ConnectionEngine::stop() {
  std::call_once(stop_once_, [&] {
    stopping_ = true;
    draining_ = true;
    stop_accepting_requested_ = true;
    wake_all();
    for (auto& loop : loops_)
      if (loop->thread.joinable()) loop->thread.join();
    if (pool_) pool_->shutdown();
    // What the loops left (connections a worker still held at their stop deadline) goes now;
    // the workers are gone, so nothing else touches them.
    for (auto& loop : loops_) {
      {
        std::lock_guard lock(loop->handback_mutex);
        loop->handed_back.clear();
        for (Newcomer& newcomer : loop->newcomers) close_fd(newcomer.fd);
        loop->newcomers.clear();
      }
      for (Slot& slot : loop->slots) slot.connection.reset();  // closes the socket
      close_fd(loop->listen_fd);
      close_fd(loop->wake_fd);
      close_fd(loop->epoll_fd);
    }
    std::lock_guard lock(empty_mutex_);
    open_connections_ = 0;
    empty_.notify_all();
  });
}

HttpsServer::Stats ConnectionEngine::stats() const {
  HttpsServer::Stats stats;
  stats.open_connections = open_connections_.load();
  stats.accepted = accepted_.load();
  stats.evicted = evicted_.load();
  stats.timed_out = timed_out_.load();
  stats.requests = requests_.load();
  stats.direct_requests = direct_requests_.load();
  stats.pooled_requests = pooled_requests_.load();
  stats.event_loops = loops_.size();
  stats.listeners = listeners_;
  for (const auto& loop : loops_) stats.accepted_per_loop.push_back(loop->accepted.load());
  stats.epoll_rearms = epoll_rearms_.load();
  stats.tls_buffers_released = tls_buffers_released_.load();
  if (pool_) {
    const WorkerPool::Stats pool = pool_->stats();
    stats.worker_threads = pool.threads;
    stats.busy_workers = pool.busy;
    stats.peak_worker_threads = pool.peak_threads;
  }
  return stats;
}

void ConnectionEngine::log_throttled(LogLevel level, const char* message, const Json& fields, Clock::time_point& last) {
  if (logger_ == nullptr) return;
  {
    const auto now = Clock::now();
    std::lock_guard lock(log_mutex_);
    if (last != Clock::time_point{} && now - last < std::chrono::seconds(10)) return;
    last = now;
  }
  logger_->log(level, message, fields);
}

// Every epoll_ctl of the engine goes through here, so that Stats::epoll_rearms counts the
// EPOLL_CTL_MODs (none are expected: connections are registered once, edge-triggered).
int ConnectionEngine::epoll_control(EventLoop& loop, int op, int fd, uint32_t events, uint64_t tag) {
  if (op == EPOLL_CTL_MOD) epoll_rearms_.fetch_add(1, std::memory_order_relaxed);
  epoll_event event{};
  event.events = events;
  event.data.u64 = tag;
  return ::epoll_ctl(loop.epoll_fd, op, fd, op == EPOLL_CTL_DEL ? nullptr : &event);
}

// A newcomer becomes a connection of `loop` if there is room. At the cap it takes the place of
// an unfinished TLS handshake: one of this loop's, else it is passed to the loop with the most
// of them (where the kernel put a client must not decide whether it finds room); failing that,
// of this loop's longest idle keep-alive connection; failing that, it is passed to the loop
// with the most connections. Connections with a request in progress are never dropped for a
// newcomer. A newcomer passed on (`may_pass` false) is not passed again.
void ConnectionEngine::admit(EventLoop& loop, int fd, const sockaddr_storage& peer, bool may_pass) {
  constexpr int kHandshaking = 2;
  constexpr int kIdle = 1;
  if (try_reserve_connection() || replace_one(loop, kHandshaking)) return adopt(loop, fd, peer);
  if (may_pass && pass_newcomer(loop, fd, peer, true)) return;
  if (replace_one(loop, kIdle)) return adopt(loop, fd, peer);
  if (may_pass && pass_newcomer(loop, fd, peer, false)) return;
  ::close(fd);
  log_throttled(LogLevel::Warn, "connection limit reached; refusing connections",
                {{"listener", config_.name}, {"max_connections", config_.max_connections}}, last_capacity_log_);
}

// One more open connection, if that stays within max_connections.
bool ConnectionEngine::try_reserve_connection() {
  size_t open = open_connections_.load();
  while (open < config_.max_connections)
    if (open_connections_.compare_exchange_weak(open, open + 1)) return true;
  return false;
}

// Drops one of the loop's connections of at least `min_rank` (see find_victim) to make room.
// The newcomer's count is taken before the victim gives its own back, so that another loop at
// the cap cannot take the place meanwhile.
bool ConnectionEngine::replace_one(EventLoop& loop, int min_rank) {
  Slot* victim = find_victim(loop, min_rank);
  if (victim == nullptr) return false;
  open_connections_.fetch_add(1);
  const ConnectionPtr connection = victim->connection;
  close_connection(*connection, false);
  ++evicted_;
  return true;
}

// The loop's connection least likely to matter, of rank `min_rank` or more: 2, the oldest that
// has not finished its TLS handshake; 1, else the longest idle keep-alive connection.
ConnectionEngine::Slot* ConnectionEngine::find_victim(EventLoop& loop, int min_rank) {
  Slot* victim = nullptr;
  int victim_rank = 0;
  Clock::time_point victim_since{};
  for (Slot& slot : loop.slots) {
    if (!slot.connection || slot.with_worker) continue;
    const Connection& c = *slot.connection;
    int rank = 0;
    Clock::time_point since = c.accepted_at;
    if (c.ssl != nullptr && !c.tls_established) rank = 2;
    else if (c.input.empty() && c.output.empty()) rank = 1, since = c.deadline;
    if (rank < min_rank || rank == 0) continue;
    if (victim == nullptr || rank > victim_rank || (rank == victim_rank && since < victim_since)) {
      victim = &slot;
      victim_rank = rank;
      victim_since = since;
    }
  }
  return victim;
}

// Hands the newcomer to the other loop with the most unfinished handshakes (`to_handshakes`) or
// the most connections, which admits it (or refuses it) at its next turn.
bool ConnectionEngine::pass_newcomer(EventLoop& from, int fd, const sockaddr_storage& peer, bool to_handshakes) {
  constexpr size_t kMaxPassed = 256;  // waiting for one loop
  EventLoop* target = nullptr;
  size_t most = 0;
  for (auto& other : loops_) {
    const size_t count = (to_handshakes ? other->handshaking : other->open).load(std::memory_order_relaxed);
    if (other.get() != &from && count > most) target = other.get(), most = count;
  }
  if (target == nullptr) return false;
  {
    std::lock_guard lock(target->handback_mutex);
    if (target->newcomers.size() >= kMaxPassed) return false;
    target->newcomers.push_back({fd, peer});
  }
  wake(*target);
  return true;
}

void ConnectionEngine::release_connection() {
  if (open_connections_.fetch_sub(1) == 1) {
    std::lock_guard lock(empty_mutex_);
    empty_.notify_all();
  }
}

void ConnectionEngine::account_input(Connection& connection) {
  const size_t now_buffered = connection.input.size();
  if (now_buffered >= connection.accounted_bytes) buffered_bytes_ += now_buffered - connection.accounted_bytes;
  else buffered_bytes_ -= connection.accounted_bytes - now_buffered;
  connection.accounted_bytes = now_buffered;
}

// Closes the socket and gives up the connection's slot; on its loop's thread only, never while
// a worker holds it.
void ConnectionEngine::close_connection(Connection& connection, bool graceful) {
  if (connection.closed) return;
  connection.closed = true;
  EventLoop& loop = *loops_[connection.loop];
  if (!connection.tls_established) loop.handshaking.fetch_sub(1, std::memory_order_relaxed);
  const ConnectionPtr keep = loop.slots[connection.slot].connection;  // alive until the end here
  if (connection.ssl != nullptr && graceful && connection.tls_established) {
    clear_tls_errors();
    SSL_shutdown(connection.ssl);  // best effort close_notify; never waits
  }
  clear_tls_errors();
  if (connection.fd >= 0) epoll_control(loop, EPOLL_CTL_DEL, connection.fd, 0, 0);
  close_fd(connection.fd);
  connection.input.clear();
  connection.input.shrink_to_fit();
  connection.output.clear();
  connection.output.shrink_to_fit();
  account_input(connection);
  free_slot(loop, connection.slot);
  release_connection();
}

}  // namespace gpu_admission::webhook::detail
