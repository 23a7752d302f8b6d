// The connection engine's event loops (see connection_engine.h): each one waits on its own
// epoll set, serves the connections its events name, then its ready list round robin, takes
// back the connections its workers are done with, accepts from its listener, and sweeps its
// connections for timeouts. No loop touches another loop's connections, so nothing on this path
// takes a lock (the hand-back queue aside). Serving one connection is in connection_io.cpp.
#include "webhook/server/connection_engine.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "webhook/server/tls_identity.h"

namespace gpu_admission::webhook::detail {

namespace {

constexpr int kAcceptsPerTurn = 64;

uint64_t handle_of(const Connection& connection) {
  return (uint64_t{connection.generation} << 32) | connection.slot;
}

// Watches OpenSSL's reads from the socket, so that the engine knows when the socket is empty
// (Connection::note_socket_read) without a read(2) of its own.
long note_bio_read(BIO* bio, int operation, const char*, size_t length, int, long, int result, size_t* processed) {
  if (operation != (BIO_CB_READ | BIO_CB_RETURN)) return result;
  auto* connection = reinterpret_cast<Connection*>(BIO_get_callback_arg(bio));
  if (connection == nullptr) return result;
  if (result > 0) connection->note_socket_read(length, processed != nullptr ? *processed : length, false);
  else connection->note_socket_read(length, 0, BIO_should_retry(bio) != 0);
  return result;
}

}  // namespace

void ConnectionEngine::loop_main(EventLoop& loop) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  loop.owner = std::this_thread::get_id();
  while (!loop.exit) {
    try {
      const int count = ::epoll_wait(loop.epoll_fd, events, kMaxEvents, wait_timeout(loop));
      if (count < 0 && errno != EINTR) {
        log_throttled(LogLevel::Error, "epoll_wait failed", {{"listener", config_.name}, {"error", errno_text(errno)}},
                      last_error_log_);
      }
      // This turn serves what was ready before it, after the connections with events; whatever
      // becomes ready meanwhile waits for the next turn.
      ++loop.turn;
      loop.now = Clock::now();
      loop.serving.clear();
      loop.serving.swap(loop.ready);
      for (const uint64_t handle : loop.serving)
        if (Slot* slot = find_slot(loop, handle)) slot->queued = false;
      for (int i = 0; i < count; ++i) on_event(loop, events[i]);
      if (loop.listener_ready) accept_connections(loop);
      serve_ready(loop);
      housekeeping(loop);
    } catch (const std::exception& e) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}, {"error", e.what()}},
                    last_error_log_);
    } catch (...) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}}, last_error_log_);
    }
  }
}

// 0 while connections or the listener have work left; soon while shutting down or while tasks
// wait for a worker (the pool may have to grow); else the sweep interval.
int ConnectionEngine::wait_timeout(const EventLoop& loop) const {
  if (!loop.ready.empty()) return 0;
  if (loop.listener_ready && loop.listening) {
    if (loop.accept_paused_until == Clock::time_point{}) return 0;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(loop.accept_paused_until - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 100));
  }
  return stopping_ || draining_ || pool_tasks_waiting_ ? 5 : 100;
}

void ConnectionEngine::on_event(EventLoop& loop, const epoll_event& event) {
  const uint64_t tag = event.data.u64;
  if (tag == kWakeTag) {
    uint64_t value;
    [[maybe_unused]] ssize_t ignored = ::read(loop.wake_fd, &value, sizeof value);
    take_queued(loop);
    return;
  }
  if (tag == kListenTag) {
    loop.listener_ready = true;
    return;
  }
  Slot* slot = find_slot(loop, tag);
  if (slot == nullptr || slot->with_worker) return;  // closed meanwhile, or a worker's for now
  Connection& connection = *slot->connection;
  if ((event.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) connection.socket_drained = false;
  if ((event.events & (EPOLLRDHUP | EPOLLHUP)) != 0) connection.peer_hup = true;
  // A client that sends but does not read: nothing to do until its socket takes more.
  if (connection.blocked_on_write && (event.events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
  serve_slot(loop, *slot, 0);
}

Clock::time_point ConnectionEngine::turn_now(const Connection& connection) const {
  const EventLoop& loop = *loops_[connection.loop];
  return std::this_thread::get_id() == loop.owner ? loop.now : Clock::now();
}

// One turn of the connection in `slot` (once per loop turn; see serve_ready).
void ConnectionEngine::serve_slot(EventLoop& loop, Slot& slot, int answered) {
  slot.turn = loop.turn;
  const ConnectionPtr connection = slot.connection;  // the slot may be given up while serving
  serve(connection, answered);
}

// The connections that were ready before this turn, in the order they became ready; one that
// an event named has had its turn already (if it yielded, it is on the ready list again).
void ConnectionEngine::serve_ready(EventLoop& loop) {
  for (const uint64_t handle : loop.serving) {
    Slot* slot = find_slot(loop, handle);
    if (slot == nullptr || slot->with_worker || slot->turn == loop.turn) continue;
    serve_slot(loop, *slot, 0);
  }
  loop.serving.clear();
}

// What other threads queued for this loop: newcomers passed on by a loop at the cap, and
// connections whose large request a worker answered. Those have had their events go unseen,
// so each is served as if ready (its socket may hold more), after the response it now has.
void ConnectionEngine::take_queued(EventLoop& loop) {
  std::vector<ConnectionPtr> back;
  std::vector<Newcomer> newcomers;
  {
    std::lock_guard lock(loop.handback_mutex);
    back.swap(loop.handed_back);
    newcomers.swap(loop.newcomers);
  }
  for (const Newcomer& newcomer : newcomers) {
    if (draining_) ::close(newcomer.fd);
    else admit(loop, newcomer.fd, newcomer.peer, false);
  }
  for (const ConnectionPtr& connection : back) {
    Connection& c = *connection;
    Slot& slot = loop.slots[c.slot];  // kept while the worker held the connection
    slot.with_worker = false;
    c.socket_drained = false;
    c.trust_short_reads = false;
    if (c.worker_failed) close_connection(c, false);
    else serve_slot(loop, slot, 1);
  }
}

// Timers, the listener's state and shutdown, for this loop.
void ConnectionEngine::housekeeping(EventLoop& loop) {
  const auto now = Clock::now();
  loop.now = now;
  if (loop.listening && stop_accepting_requested_) {
    std::lock_guard lock(listeners_mutex_);  // stop_accepting() may be shutting it down
    epoll_control(loop, EPOLL_CTL_DEL, loop.listen_fd, 0, 0);
    close_fd(loop.listen_fd);
    loop.listening = false;
    loop.listener_ready = false;
  }
  if (loop.accept_paused_until != Clock::time_point{} && now >= loop.accept_paused_until)
    loop.accept_paused_until = {};
  const bool stopping = stopping_.load();
  if (stopping && loop.stop_deadline == Clock::time_point::max()) loop.stop_deadline = now + std::chrono::seconds(5);
  const bool sweep_now = now >= loop.next_sweep || stopping || draining_;
  if (sweep_now) {
    sweep(loop, now, stopping);
    loop.next_sweep = now + std::chrono::milliseconds(100);
  }
  if (sweep_now || pool_tasks_waiting_) {
    std::unique_lock lock(pool_maintenance_mutex_, std::try_to_lock);
    if (lock.owns_lock()) pool_tasks_waiting_ = pool_->maintain();
  }
  if (stopping && (loop.live == 0 || now >= loop.stop_deadline)) loop.exit = true;
}

void ConnectionEngine::accept_connections(EventLoop& loop) {
  if (!loop.listening || stop_accepting_requested_) {  // housekeeping closes the listener
    loop.listener_ready = false;
    return;
  }
  if (loop.accept_paused_until != Clock::time_point{}) return;
  for (int accepted_now = 0; accepted_now < kAcceptsPerTurn; ++accepted_now) {
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    const int fd = ::accept4(loop.listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) {
        loop.listener_ready = false;  // the backlog is empty: the next connection raises an event
        return;
      }
      // Out of descriptors or memory: stop accepting for a moment instead of spinning.
      log_throttled(LogLevel::Warn, "accept failed; pausing accepts",
                    {{"listener", config_.name}, {"error", errno_text(error)}}, last_error_log_);
      loop.accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
      return;
    }
    if (draining_) ::close(fd);
    else admit(loop, fd, peer, true);
  }
  // The backlog may hold more (listener_ready stays set): the next turn goes on, after the
  // connections that are ready now.
}

// A reserved connection's place in `loop`: a slot, and its one registration in epoll, for
// reading and writing, edge-triggered, never changed while it lives.
void ConnectionEngine::adopt(EventLoop& loop, int fd, const sockaddr_storage& peer) {
  const ConnectionPtr connection = new_connection(fd, peer);
  if (!connection) {
    release_connection();
    return;
  }
  connection->loop = loop.index;
  connection->slot = allocate_slot(loop, connection);
  connection->generation = loop.slots[connection->slot].generation;
  // The first bytes (ClientHello or request) must come within the read timeout.
  connection->deadline = connection->accepted_at + config_.read_timeout;
  ++accepted_;
  loop.accepted.fetch_add(1, std::memory_order_relaxed);
  if (!connection->tls_established) loop.handshaking.fetch_add(1, std::memory_order_relaxed);
  if (epoll_control(loop, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, handle_of(*connection)) != 0)
    close_connection(*connection, false);
}

// The Connection for an accepted socket, with its addresses and (on the TLS listener) its TLS
// session; nullptr when the session cannot be created (the socket is closed then).
ConnectionEngine::ConnectionPtr ConnectionEngine::new_connection(int fd, const sockaddr_storage& peer) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  auto connection = std::make_shared<Connection>();
  connection->fd = fd;
  connection->accepted_at = Clock::now();
  connection->framer = RequestFramer(config_.limits);
  describe_address(peer, connection->remote_ip, connection->remote_port);
  sockaddr_storage local{};
  socklen_t local_length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0)
    describe_address(local, connection->local_ip, connection->local_port);
  if (config_.tls != nullptr) {
    clear_tls_errors();
    connection->ssl = SSL_new(config_.tls);
    // Separate socket BIOs for reading and writing (the fd stays the connection's to close), so
    // that the read callback below is not also run around every write and control call.
    BIO* read_bio = connection->ssl ? BIO_new_socket(fd, BIO_NOCLOSE) : nullptr;
    BIO* write_bio = read_bio ? BIO_new_socket(fd, BIO_NOCLOSE) : nullptr;
    if (write_bio == nullptr) {
      BIO_free(read_bio);
      log_throttled(LogLevel::Error, "cannot create a TLS session", {{"error", openssl_errors()}}, last_error_log_);
      return nullptr;  // the destructor closes fd
    }
    SSL_set_bio(connection->ssl, read_bio, write_bio);
    BIO_set_callback_arg(read_bio, reinterpret_cast<char*>(connection.get()));
    BIO_set_callback_ex(read_bio, note_bio_read);
    SSL_set_accept_state(connection->ssl);
  } else {
    connection->tls_established = true;
  }
  return connection;
}

ConnectionEngine::Slot* ConnectionEngine::find_slot(EventLoop& loop, uint64_t handle) {
  const auto index = static_cast<uint32_t>(handle);
  const auto generation = static_cast<uint32_t>(handle >> 32);
  if (index >= loop.slots.size()) return nullptr;
  Slot& slot = loop.slots[index];
  if (slot.generation != generation || !slot.connection) return nullptr;
  return &slot;
}

uint32_t ConnectionEngine::allocate_slot(EventLoop& loop, const ConnectionPtr& connection) {
  uint32_t index;
  if (!loop.free_slots.empty()) {
    index = loop.free_slots.back();
    loop.free_slots.pop_back();
  } else {
    index = static_cast<uint32_t>(loop.slots.size());
    loop.slots.emplace_back();
  }
  Slot& slot = loop.slots[index];
  slot.connection = connection;
  slot.with_worker = false;
  slot.queued = false;
  slot.turn = 0;
  loop.open.store(++loop.live, std::memory_order_relaxed);
  return index;
}

// A new generation makes every handle of the old connection (in epoll events not yet seen, on
// the ready list) stale.
void ConnectionEngine::free_slot(EventLoop& loop, uint32_t index) {
  Slot& slot = loop.slots[index];
  slot.connection.reset();
  if (++slot.generation == 0) slot.generation = 1;
  slot.with_worker = false;
  slot.queued = false;
  loop.free_slots.push_back(index);
  loop.open.store(--loop.live, std::memory_order_relaxed);
}

void ConnectionEngine::sweep(EventLoop& loop, Clock::time_point now, bool stopping) {
  for (size_t i = 0; i < loop.slots.size(); ++i) {
    Slot& slot = loop.slots[i];
    if (!slot.connection || slot.with_worker) continue;  // a worker's: handed back before it closes
    Connection& c = *slot.connection;
    const bool idle = c.tls_established && c.input.empty() && c.output.empty();
    const bool handshaking = !c.tls_established;
    bool close = false;
    bool timed_out = false;
    if (stopping || (draining_ && (idle || handshaking))) close = true;
    else if (now >= c.deadline) close = true, timed_out = !c.lingering;
    if (!close) {
      if (idle) release_tls_buffers(c, now);
      continue;
    }
    if (timed_out) ++timed_out_;
    const ConnectionPtr connection = slot.connection;
    close_connection(*connection, !timed_out);
  }
}

// An idle connection's OpenSSL record buffers go back once it has idled tls_buffers_idle; its
// next request allocates them again. OpenSSL keeps them while they hold bytes (a partial record).
void ConnectionEngine::release_tls_buffers(Connection& c, Clock::time_point now) {
  if (!c.holds_tls_buffers || c.ssl == nullptr || now - c.last_turn < config_.tls_buffers_idle) return;
  if (SSL_free_buffers(c.ssl) != 1) return;
  c.holds_tls_buffers = false;
  tls_buffers_released_.fetch_add(1, std::memory_order_relaxed);
}

// The connection waits for its client: an edge (bytes, room to write, the end) brings it back,
// the sweep closes it at `deadline`.
void ConnectionEngine::wait_for_client(Connection& connection, Clock::time_point deadline) {
  connection.deadline = deadline;
}

// The connection has more to do but yields its turn: to the back of the ready list.
void ConnectionEngine::make_ready(Connection& connection, Clock::time_point deadline) {
  connection.deadline = deadline;
  EventLoop& loop = *loops_[connection.loop];
  Slot& slot = loop.slots[connection.slot];
  if (slot.queued) return;
  slot.queued = true;
  loop.ready.push_back(handle_of(connection));
}

// After a read that found nothing: wait for the next edge when the socket is known to be empty,
// else try again next turn (no edge would come for bytes already there).
void ConnectionEngine::await_input(Connection& connection, Clock::time_point deadline) {
  if (connection.socket_drained || connection.tls_wants_write) wait_for_client(connection, deadline);
  else make_ready(connection, deadline);
}

void ConnectionEngine::hand_to_worker(Connection& connection, const RequestFrame& frame, bool peer_finished) {
  EventLoop& loop = *loops_[connection.loop];
  Slot& slot = loop.slots[connection.slot];
  ConnectionPtr shared = slot.connection;
  slot.with_worker = true;
  ++pooled_requests_;
  const bool queued = pool_->submit(
      [this, shared, frame, peer_finished] { answer_on_worker(shared, frame, peer_finished); });
  if (!queued) {
    slot.with_worker = false;
    close_connection(connection, false);
  }
}

// On a worker: answers the large request, then hands the connection back to its loop, which
// writes the response (or closes the connection when no answer could be made).
void ConnectionEngine::answer_on_worker(const ConnectionPtr& connection, const RequestFrame& frame, bool peer_finished) {
  Connection& c = *connection;
  try {
    c.worker_failed = !respond(c, frame, peer_finished);
  } catch (const std::exception& e) {
    log_throttled(LogLevel::Error, "connection error", {{"listener", config_.name}, {"error", e.what()}}, last_error_log_);
    c.worker_failed = true;
  } catch (...) {
    c.worker_failed = true;
  }
  EventLoop& loop = *loops_[c.loop];
  {
    std::lock_guard lock(loop.handback_mutex);
    loop.handed_back.push_back(connection);
  }
  wake(loop);
}

}  // namespace gpu_admission::webhook::detail
