// The connection engine (internal to webhook/server/): one per listener address (TLS main,
// plain metrics). Runs the event loops and the worker pool for large requests, and drives each
// connection's non-blocking state machine (handshake, read, answer, write, linger), with its
// timeouts, the connection cap and graceful shutdown.
//
// The nginx/Envoy model: every event loop has its own listening socket (SO_REUSEPORT on one
// port, so the kernel spreads new connections over the loops), its own epoll set and its own
// connections. A connection is registered once, edge-triggered for reading and writing, and
// never re-armed; its epoll event carries its slot in the loop's table, so an event reaches its
// connection without a lock or a lookup. Because edges are not repeated, a connection that
// stopped while bytes may still wait (after one complete request, with records in OpenSSL's
// buffer, after its resume from a worker) goes on the loop's ready list, which is served round
// robin, one request per connection per turn, between epoll_wait calls (with timeout 0 while
// the list is not empty). Large requests go to the worker pool; the worker hands the
// connection back to its loop (a queue and the loop's eventfd), which resumes it as if ready.
// Handed an already-listening socket that cannot be duplicated with SO_REUSEPORT, the loops
// share it (EPOLLEXCLUSIVE, so one loop is woken per connection). At max_connections (counted
// over all loops) a newcomer takes the place of a handshaking or idle connection of its loop;
// a loop with none passes the newcomer to the loop with the most connections, which does the
// same or refuses it.
//
// connection_engine.cpp: lifecycle, stats, the connection count and cap, closing.
// event_loop.cpp: the loops (events, ready list, hand-back), accepting, timeouts.
// connection_io.cpp: serving one connection (the state machine, reading, answering, writing).
#pragma once

#include <sys/epoll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"
#include "webhook/server/connection.h"
#include "webhook/server/direct_path.h"
#include "webhook/server/https_server.h"
#include "webhook/server/request_framing.h"
#include "webhook/server/worker_pool.h"

namespace gpu_admission::webhook::detail {

// How one listener's engine is set up.
struct EngineConfig {
  std::string name;           // "https" or "metrics", for logs
  SSL_CTX* tls = nullptr;     // nullptr: plain HTTP
  FramingLimits limits;
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  // A TLS connection idle this long gives back OpenSSL's read and write buffers (~33 KiB);
  // busy ones keep them between requests.
  std::chrono::milliseconds tls_buffers_idle{1'000};
  size_t max_connections = 1024;
  size_t max_buffered_bytes = 256u << 20;  // all connections' unanswered input together
  size_t event_loops = 1;
  // Requests up to this size are answered on the event loop thread that read them; larger
  // ones (whose decoding takes long enough to delay the loop's other connections) go to the
  // worker pool.
  size_t inline_request_bytes = 256 * 1024;
  size_t core_threads = 2;
  size_t max_threads = 64;
  // Answers the plain requests that make up nearly all of the traffic without httplib (see
  // DirectRequest); returns false to leave the request to httplib. Empty: everything goes
  // through httplib.
  std::function<bool(const DirectRequest&, std::string& response)> direct_handler;
};

class ConnectionEngine {
 public:
  ConnectionEngine(EngineConfig config, RequestRouter& router, Logger* logger, Metrics* metrics)
      : config_(std::move(config)), router_(router), logger_(logger), metrics_(metrics) {}
  ~ConnectionEngine() { stop(); }

  // Takes the listening sockets (non-blocking): one per event loop, bound to one port with
  // SO_REUSEPORT, or a single one that the loops share. They are closed on failure too.
  bool start(std::vector<int> listeners, std::string& error);
  void stop_accepting();            // stop the listeners at once; new connections are refused
  void begin_draining();            // close idle connections, close the others after their response
  bool wait_until_empty(Clock::time_point deadline);
  void stop();                      // cut every connection and join all threads

  HttpsServer::Stats stats() const;

 private:
  enum class ReadResult { Framed, Data, WouldBlock, Eof, Error, Full };
  enum class Flush { Done, WantWrite, WantRead, Failed };
  enum class AfterAnswer { KeepOpen, Close, Abort };
  using ConnectionPtr = std::shared_ptr<Connection>;
  // epoll_event.data of the two descriptors that are not connections; a connection's is its
  // slot handle, (generation << 32) | index, with generation >= 1.
  static constexpr uint64_t kWakeTag = ~uint64_t{0};
  static constexpr uint64_t kListenTag = ~uint64_t{0} - 1;
  static constexpr int kRequestsPerTurn = 1;  // then a connection with more goes to the back

  // A connection's place in its loop. `with_worker`: a worker answers its request; the loop
  // leaves it alone until it is handed back. `queued`: on the ready list. `turn`: the loop turn
  // that last served it (a connection is served once per turn).
  struct Slot {
    ConnectionPtr connection;
    uint32_t generation = 1;
    bool with_worker = false;
    bool queued = false;
    uint64_t turn = 0;
  };

  // A socket just accepted, not yet a connection.
  struct Newcomer {
    int fd = -1;
    sockaddr_storage peer{};
  };

  // One event loop: a thread, its epoll set, listener, eventfd and connections. Everything but
  // the queues under handback_mutex, the atomics and listen_fd (see listeners_mutex_) is
  // touched by the loop's thread only.
  struct EventLoop {
    uint32_t index = 0;
    std::thread thread;
    int epoll_fd = -1;
    int wake_fd = -1;
    int listen_fd = -1;          // its own socket, or its duplicate of the shared one
    bool listening = false;
    bool listener_ready = false;  // connections may wait in the backlog (edge-triggered)
    Clock::time_point accept_paused_until{};
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;
    size_t live = 0;
    // For the other loops (see pass_newcomer): `live`, and how many of those are still in
    // their TLS handshake.
    std::atomic<size_t> open{0};
    std::atomic<size_t> handshaking{0};
    std::vector<uint64_t> ready;  // slot handles with work left, served next turn in order
    std::vector<uint64_t> serving;  // this turn's share of `ready`
    uint64_t turn = 0;
    // When this turn began: deadlines set on the loop's thread during the turn count from it (at
    // most one turn early), instead of reading the clock for each.
    Clock::time_point now{};
    std::thread::id owner;  // the loop's thread, set as it starts (before it accepts anything)
    Clock::time_point next_sweep{};
    Clock::time_point stop_deadline = Clock::time_point::max();
    bool exit = false;
    std::mutex handback_mutex;  // guards the two queues below, filled by other threads
    std::vector<ConnectionPtr> handed_back;  // connections the workers are done with
    std::vector<Newcomer> newcomers;         // accepted by a loop at the cap with nothing to drop
    std::atomic<unsigned long long> accepted{0};
  };

  // connection_engine.cpp: lifecycle, the connection count and cap, closing.
  bool set_up_loops(std::vector<int>& listeners, std::string& error);
  bool start_threads(std::string& error);
  void wake(EventLoop& loop);
  void wake_all();
  void admit(EventLoop& loop, int fd, const sockaddr_storage& peer, bool may_pass);
  bool try_reserve_connection();
  bool replace_one(EventLoop& loop, int min_rank);
  Slot* find_victim(EventLoop& loop, int min_rank);
  bool pass_newcomer(EventLoop& from, int fd, const sockaddr_storage& peer, bool to_handshakes);
  void release_connection();
  void close_connection(Connection& connection, bool graceful);
  void account_input(Connection& connection);
  int epoll_control(EventLoop& loop, int op, int fd, uint32_t events, uint64_t tag);
  void log_throttled(LogLevel level, const char* message, const Json& fields, Clock::time_point& last);

  // event_loop.cpp: the loops, the ready list, hand-back, accepting, slots and timeouts.
  void loop_main(EventLoop& loop);
  int wait_timeout(const EventLoop& loop) const;
  void on_event(EventLoop& loop, const epoll_event& event);
  void serve_slot(EventLoop& loop, Slot& slot, int answered);
  void serve_ready(EventLoop& loop);
  void take_queued(EventLoop& loop);
  void housekeeping(EventLoop& loop);
  // The turn's time on `connection`'s loop thread; the clock's on a worker.
  Clock::time_point turn_now(const Connection& connection) const;
  void accept_connections(EventLoop& loop);
  void adopt(EventLoop& loop, int fd, const sockaddr_storage& peer);
  ConnectionPtr new_connection(int fd, const sockaddr_storage& peer);
  Slot* find_slot(EventLoop& loop, uint64_t handle);
  uint32_t allocate_slot(EventLoop& loop, const ConnectionPtr& connection);
  void free_slot(EventLoop& loop, uint32_t index);
  void sweep(EventLoop& loop, Clock::time_point now, bool stopping);
  void release_tls_buffers(Connection& connection, Clock::time_point now);
  void wait_for_client(Connection& connection, Clock::time_point deadline);
  void make_ready(Connection& connection, Clock::time_point deadline);
  void await_input(Connection& connection, Clock::time_point deadline);
  void hand_to_worker(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void answer_on_worker(const ConnectionPtr& connection, const RequestFrame& frame, bool peer_finished);

  // connection_io.cpp: serving one connection. The bool steps of serve_turn return false when
  // they left the connection waiting, queued it, closed it or handed it to a worker.
  void serve(const ConnectionPtr& connection, int answered);
  void serve_turn(const ConnectionPtr& connection, int answered);
  bool continue_handshake(Connection& connection);
  bool finish_output(Connection& connection, int answered);
  bool read_more(Connection& connection, RequestFrame& frame, bool& peer_finished);
  bool wait_for_rest(Connection& connection, const RequestFrame& frame);
  bool respond(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void start_lingering(Connection& connection);
  void continue_lingering(Connection& connection);
  ReadResult read_request(Connection& connection, RequestFrame& frame);
  ReadResult read_some(Connection& connection, char* chunk, size_t want, size_t& n);
  AfterAnswer answer(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void queue_output(Connection& connection, std::string text, Connection::AfterOutput after);
  Flush flush_output(Connection& connection);

  const EngineConfig config_;
  RequestRouter& router_;
  Logger* logger_;
  Metrics* metrics_;

  std::vector<std::unique_ptr<EventLoop>> loops_;
  size_t listeners_ = 0;
  std::unique_ptr<WorkerPool> pool_;
  std::once_flag stop_once_;
  std::mutex pool_maintenance_mutex_;
  std::mutex listeners_mutex_;  // the loops' listen_fd against stop_accepting()

  std::atomic<bool> stop_accepting_requested_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> pool_tasks_waiting_{false};

  std::mutex log_mutex_;  // guards the two below (any thread logs)
  Clock::time_point last_capacity_log_{};
  Clock::time_point last_error_log_{};

  // Open connections over all loops, against max_connections; wait_until_empty waits for 0.
  std::atomic<size_t> open_connections_{0};
  std::mutex empty_mutex_;
  std::condition_variable empty_;

  std::atomic<size_t> buffered_bytes_{0};
  std::atomic<unsigned long long> accepted_{0};
  std::atomic<unsigned long long> evicted_{0};
  std::atomic<unsigned long long> timed_out_{0};
  std::atomic<unsigned long long> requests_{0};
  std::atomic<unsigned long long> direct_requests_{0};
  std::atomic<unsigned long long> pooled_requests_{0};
  std::atomic<unsigned long long> epoll_rearms_{0};
  std::atomic<unsigned long long> tls_buffers_released_{0};
};

}  // namespace gpu_admission::webhook::detail
