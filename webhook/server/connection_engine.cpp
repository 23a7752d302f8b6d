// The connection engine's machinery around the connections: starting and stopping, the event
// loops, accepting (with the connection cap), the registry, housekeeping (timeouts, draining,
// the listener's state) and parking connections in epoll. Serving a connection is in
// connection_io.cpp.
#include "webhook/server/connection_engine.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "webhook/server/tls_identity.h"

namespace gpu_admission::webhook::detail {

bool ConnectionEngine::start(int listen_fd, std::string& error) {
  listen_fd_ = listen_fd;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    error = config_.name + ": cannot create epoll/eventfd: " + errno_text(errno);
    return false;
  }
  // The listener is one-shot like the connections, so that one loop thread at a time accepts.
  epoll_event listen_event{};
  listen_event.events = EPOLLIN | EPOLLONESHOT;
  listen_event.data.u64 = kListenTag;
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u64 = kWakeTag;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event) != 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event) != 0) {
    error = config_.name + ": epoll_ctl: " + errno_text(errno);
    return false;
  }
  try {
    pool_ = std::make_unique<WorkerPool>(config_.core_threads, config_.max_threads);
    for (size_t i = 0; i < std::max<size_t>(1, config_.event_loops); ++i)
      loop_threads_.emplace_back([this] { loop_main(); });
  } catch (const std::exception& e) {
    error = config_.name + ": cannot start threads: " + e.what();
    loops_exit_ = true;
    for (auto& thread : loop_threads_) thread.join();
    loop_threads_.clear();
    if (pool_) pool_->shutdown();
    return false;
  }
  return true;
}

void ConnectionEngine::wake() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
  }
}

void ConnectionEngine::stop_accepting() {
  stop_accepting_requested_ = true;
  wake();
}

void ConnectionEngine::begin_draining() {
  draining_ = true;
  wake();
}

bool ConnectionEngine::wait_until_empty(Clock::time_point deadline) {
  std::unique_lock lock(registry_mutex_);
  return registry_empty_.wait_until(lock, deadline, [&] { return connections_.empty(); });
}

void ConnectionEngine::stop() {
  std::call_once(stop_once_, [&] {
    stopping_ = true;
    draining_ = true;
    stop_accepting_requested_ = true;
    wake();
    for (auto& thread : loop_threads_) thread.join();
    if (pool_) pool_->shutdown();
    // Anything still registered (only possible when the loops could not run) goes now.
    std::vector<ConnectionPtr> left;
    {
      std::lock_guard lock(registry_mutex_);
      for (auto& [id, connection] : connections_) left.push_back(connection);
      connections_.clear();
    }
    left.clear();
    close_fd(listen_fd_);
    close_fd(wake_fd_);
    close_fd(epoll_fd_);
  });
}

HttpsServer::Stats ConnectionEngine::stats() const {
  HttpsServer::Stats stats;
  {
    std::lock_guard lock(registry_mutex_);
    stats.open_connections = connections_.size();
  }
  stats.accepted = accepted_.load();
  stats.evicted = evicted_.load();
  stats.timed_out = timed_out_.load();
  stats.requests = requests_.load();
  stats.direct_requests = direct_requests_.load();
  stats.pooled_requests = pooled_requests_.load();
  stats.event_loops = loop_threads_.size();
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

std::vector<ConnectionEngine::ConnectionPtr> ConnectionEngine::snapshot() const {
  std::vector<ConnectionPtr> all;
  std::lock_guard lock(registry_mutex_);
  all.reserve(connections_.size());
  for (const auto& [id, connection] : connections_) all.push_back(connection);
  return all;
}

void ConnectionEngine::remove_from_registry(Connection& connection) {
  std::lock_guard lock(registry_mutex_);
  connections_.erase(connection.id);
  if (connections_.empty()) registry_empty_.notify_all();
}

void ConnectionEngine::account_input(Connection& connection) {
  const size_t now_buffered = connection.input.size();
  if (now_buffered >= connection.accounted_bytes) buffered_bytes_ += now_buffered - connection.accounted_bytes;
  else buffered_bytes_ -= connection.accounted_bytes - now_buffered;
  connection.accounted_bytes = now_buffered;
}

void ConnectionEngine::close_connection(Connection& connection, bool graceful) {
  {
    std::lock_guard lock(connection.handover);
    if (connection.closed) return;
    connection.closed = true;
    connection.parked = false;
  }
  if (connection.ssl != nullptr && graceful && connection.tls_established) {
    ERR_clear_error();
    SSL_shutdown(connection.ssl);  // best effort close_notify; never waits
  }
  ERR_clear_error();
  if (connection.fd >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.fd, nullptr);
  close_fd(connection.fd);
  connection.input.clear();
  connection.input.shrink_to_fit();
  connection.output.clear();
  connection.output.shrink_to_fit();
  account_input(connection);
  remove_from_registry(connection);
}

// Every loop thread runs this over the one epoll set; EPOLLONESHOT hands each ready
// connection to exactly one of them, which serves it to completion and parks it again.
void ConnectionEngine::loop_main() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (!loops_exit_) {
    try {
      // Look again soon while stopping or draining (connections finishing their last request
      // leave the registry) and while tasks wait for a worker (the pool may have to grow).
      const bool hurry = stopping_ || draining_ || pool_tasks_waiting_;
      const int count = ::epoll_wait(epoll_fd_, events, kMaxEvents, hurry ? 5 : 100);
      if (count < 0 && errno != EINTR) {
        log_throttled(LogLevel::Error, "epoll_wait failed", {{"listener", config_.name}, {"error", errno_text(errno)}},
                      last_error_log_);
      }
      for (int i = 0; i < count; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) {
          uint64_t value;
          [[maybe_unused]] ssize_t ignored = ::read(wake_fd_, &value, sizeof value);
          sweep_requested_ = true;
        } else if (tag == kListenTag) {
          accept_connections();
        } else {
          dispatch(tag);
        }
      }
      housekeeping();
    } catch (const std::exception& e) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}, {"error", e.what()}},
                    last_error_log_);
    } catch (...) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}}, last_error_log_);
    }
  }
}

// Timers, the listener's state and shutdown; done by whichever loop thread gets here first.
void ConnectionEngine::housekeeping() {
  std::unique_lock lock(housekeeping_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  pool_tasks_waiting_ = pool_->maintain();
  const auto now = Clock::now();
  if (listening_ && stop_accepting_requested_) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    close_fd(listen_fd_);
    listening_ = false;
  }
  if (listening_ && accept_paused_until_ != Clock::time_point{} && now >= accept_paused_until_) {
    accept_paused_until_ = {};
    arm_listener_locked(true);
  }
  const bool stopping = stopping_.load();
  if (stopping && stop_deadline_ == Clock::time_point::max()) stop_deadline_ = now + std::chrono::seconds(5);
  if (now >= next_sweep_ || stopping || draining_ || sweep_requested_.exchange(false)) {
    sweep(now, stopping);
    next_sweep_ = now + std::chrono::milliseconds(100);
  }
  if (stopping) {
    std::unique_lock registry_lock(registry_mutex_);
    if (connections_.empty() || now >= stop_deadline_) loops_exit_ = true;
  }
}

void ConnectionEngine::arm_listener_locked(bool armed) {
  epoll_event listen_event{};
  listen_event.events = armed ? EPOLLIN | EPOLLONESHOT : 0;
  listen_event.data.u64 = kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &listen_event);
}

bool ConnectionEngine::make_room_for_one_more() {
  {
    std::lock_guard lock(registry_mutex_);
    if (connections_.size() < config_.max_connections) return true;
  }
  // Drop the parked connection least likely to matter: one that never finished its TLS
  // handshake, else the longest idle keep-alive connection. Connections with a request in
  // progress are never dropped for a newcomer.
  ConnectionPtr victim;
  int victim_rank = 0;
  Clock::time_point victim_since{};
  for (const auto& connection : snapshot()) {
    std::lock_guard lock(connection->handover);
    if (!connection->parked || connection->closed) continue;
    int rank = 0;
    Clock::time_point since = connection->accepted_at;
    if (connection->ssl != nullptr && !connection->tls_established) rank = 2;
    else if (connection->input.empty() && connection->output.empty()) rank = 1, since = connection->deadline;
    if (rank == 0) continue;
    if (!victim || rank > victim_rank || (rank == victim_rank && since < victim_since)) {
      victim = connection;
      victim_rank = rank;
      victim_since = since;
    }
  }
  if (!victim) return false;
  {
    std::lock_guard lock(victim->handover);
    if (!victim->parked || victim->closed) return false;
  }
  close_connection(*victim, false);
  ++evicted_;
  return true;
}

void ConnectionEngine::accept_connections() {
  std::lock_guard housekeeping_lock(housekeeping_mutex_);
  if (!listening_) return;
  for (int accepted_now = 0; accepted_now < 256; ++accepted_now) {
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) break;
      // Out of descriptors or memory: stop polling the listener for a moment instead of spinning.
      log_throttled(LogLevel::Warn, "accept failed; pausing accepts",
                    {{"listener", config_.name}, {"error", errno_text(error)}}, last_error_log_);
      accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      return;  // the listener stays disarmed until housekeeping re-arms it
    }
    if (draining_ || !make_room_for_one_more()) {
      ::close(fd);
      log_throttled(LogLevel::Warn, "connection limit reached; refusing connections",
                    {{"listener", config_.name}, {"max_connections", config_.max_connections}}, last_capacity_log_);
      continue;
    }
    if (const ConnectionPtr connection = new_connection(fd, peer)) register_and_park(connection);
  }
  arm_listener_locked(true);
}

// The Connection for an accepted socket, with its addresses and (on the TLS listener) its TLS
// session; nullptr when the session cannot be created (the socket is closed then).
ConnectionEngine::ConnectionPtr ConnectionEngine::new_connection(int fd, const sockaddr_storage& peer) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  auto connection = std::make_shared<Connection>();
  connection->id = next_id_++;
  connection->fd = fd;
  connection->accepted_at = Clock::now();
  connection->framer = RequestFramer(config_.limits);
  describe_address(peer, connection->remote_ip, connection->remote_port);
  sockaddr_storage local{};
  socklen_t local_length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0)
    describe_address(local, connection->local_ip, connection->local_port);
  if (config_.tls != nullptr) {
    ERR_clear_error();
    connection->ssl = SSL_new(config_.tls);
    if (connection->ssl == nullptr || SSL_set_fd(connection->ssl, fd) != 1) {
      log_throttled(LogLevel::Error, "cannot create a TLS session", {{"error", openssl_errors()}}, last_error_log_);
      return nullptr;  // the destructor closes fd
    }
    SSL_set_accept_state(connection->ssl);
  } else {
    connection->tls_established = true;
  }
  return connection;
}

// Registers a new connection and parks it in epoll for its first bytes.
void ConnectionEngine::register_and_park(const ConnectionPtr& connection) {
  {
    std::lock_guard lock(registry_mutex_);
    connections_.emplace(connection->id, connection);
  }
  ++accepted_;
  // The first bytes (ClientHello or request) must come within the read timeout.
  std::lock_guard lock(connection->handover);
  connection->parked = true;
  connection->deadline = connection->accepted_at + config_.read_timeout;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
  event.data.u64 = connection->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection->fd, &event) != 0) {
    connection->parked = false;
    connection->closed = true;
    close_fd(connection->fd);
    remove_from_registry(*connection);
  }
}


void ConnectionEngine::dispatch(uint64_t id) {
  ConnectionPtr connection;
  {
    std::lock_guard lock(registry_mutex_);
    const auto found = connections_.find(id);
    if (found == connections_.end()) return;  // closed since the event was queued
    connection = found->second;
  }
  {
    std::lock_guard lock(connection->handover);
    if (!connection->parked || connection->closed) return;
    connection->parked = false;
  }
  if (stopping_) return close_connection(*connection, false);
  serve(connection, false);
}

void ConnectionEngine::sweep(Clock::time_point now, bool stopping) {
  for (const auto& connection : snapshot()) {
    bool close = false;
    bool timed_out = false;
    {
      std::lock_guard lock(connection->handover);
      if (connection->closed) continue;
      if (!connection->parked) {
        // Being served right now. When stopping, unblock it: its reads and writes fail.
        if (stopping && connection->fd >= 0) ::shutdown(connection->fd, SHUT_RDWR);
        continue;
      }
      const bool idle = connection->tls_established && connection->input.empty() && connection->output.empty();
      const bool handshaking = !connection->tls_established;
      if (stopping || (draining_ && (idle || handshaking))) close = true;
      else if (now >= connection->deadline) close = true, timed_out = !connection->lingering;
    }
    if (!close) continue;
    if (timed_out) ++timed_out_;
    close_connection(*connection, !timed_out);
  }
}

void ConnectionEngine::park(const ConnectionPtr& connection, uint32_t events, Clock::time_point deadline) {
  std::lock_guard lock(connection->handover);
  if (connection->closed) return;
  connection->deadline = deadline;
  epoll_event event{};
  event.events = events | EPOLLRDHUP | EPOLLONESHOT;
  event.data.u64 = connection->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection->fd, &event) != 0) {
    // Cannot wait for it: give the connection up (closed by the sweep, which sees it parked
    // with a deadline in the past).
    connection->deadline = Clock::time_point{};
  }
  connection->parked = true;
  if (draining_) wake();  // let housekeeping close it if it is idle now
}

// Reads until `frame` (scanned as bytes arrive) is complete or the socket has nothing more.
// Reading stops at a complete request, so a client pipelining without end is held back by TCP

}  // namespace gpu_admission::webhook::detail
