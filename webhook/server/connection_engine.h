// The connection engine (internal to webhook/server/): one per listener (TLS main, plain
// metrics). Accepts connections, runs the epoll event loops and the worker pool for large
// requests, and drives each connection's non-blocking state machine (handshake, read, answer,
// write, linger), with its timeouts, the connection cap and graceful shutdown.
//
// connection_engine.cpp: lifecycle, event loops, accepting, registry, timeouts and parking.
// connection_io.cpp: serving one connection (the state machine, reading, answering, writing).
#pragma once

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
#include <unordered_map>
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

  bool start(int listen_fd, std::string& error);
  void stop_accepting();            // close the listener; new connections are refused
  void begin_draining();            // close idle connections, close the others after their response
  bool wait_until_empty(Clock::time_point deadline);
  void stop();                      // cut every connection and join all threads

  HttpsServer::Stats stats() const;

 private:
  enum class ReadResult { Framed, WouldBlock, Eof, Error, Full };
  enum class Flush { Done, WantWrite, WantRead, Failed };
  enum class AfterAnswer { KeepOpen, Close, Abort };
  using ConnectionPtr = std::shared_ptr<Connection>;
  static constexpr uint64_t kWakeTag = 0;
  static constexpr uint64_t kListenTag = 1;

  // connection_engine.cpp: the loops, accepting, the registry, timeouts and parking.
  void loop_main();
  void housekeeping();
  void accept_connections();
  ConnectionPtr new_connection(int fd, const sockaddr_storage& peer);
  void register_and_park(const ConnectionPtr& connection);
  void arm_listener_locked(bool armed);
  bool make_room_for_one_more();
  void dispatch(uint64_t id);
  void sweep(Clock::time_point now, bool stopping);
  void park(const ConnectionPtr& connection, uint32_t events, Clock::time_point deadline);
  void close_connection(Connection& connection, bool graceful);
  void remove_from_registry(Connection& connection);
  void account_input(Connection& connection);
  std::vector<ConnectionPtr> snapshot() const;
  void wake();
  void log_throttled(LogLevel level, const char* message, const Json& fields, Clock::time_point& last);

  // connection_io.cpp: serving one connection. The bool steps of serve_rounds return false
  // when they parked, closed or handed off the connection (the round ends there).
  void serve(const ConnectionPtr& connection, bool on_worker);
  void serve_rounds(const ConnectionPtr& connection, bool on_worker);
  bool continue_handshake(const ConnectionPtr& connection);
  bool finish_output(const ConnectionPtr& connection, int round);
  bool read_more(Connection& connection, RequestFrame& frame, bool& peer_finished);
  bool wait_for_rest(const ConnectionPtr& connection, const RequestFrame& frame);
  bool respond(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void start_lingering(const ConnectionPtr& connection);
  void continue_lingering(const ConnectionPtr& connection);
  ReadResult read_request(Connection& connection, RequestFrame& frame);
  AfterAnswer answer(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void queue_output(Connection& connection, std::string text, Connection::AfterOutput after);
  Flush flush_output(Connection& connection);

  const EngineConfig config_;
  RequestRouter& router_;
  Logger* logger_;
  Metrics* metrics_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<std::thread> loop_threads_;
  std::unique_ptr<WorkerPool> pool_;
  std::once_flag stop_once_;

  std::atomic<bool> stop_accepting_requested_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> loops_exit_{false};
  std::atomic<bool> sweep_requested_{false};
  std::atomic<bool> pool_tasks_waiting_{false};
  std::atomic<uint64_t> next_id_{kListenTag + 1};

  // Listener and timer state: whichever loop thread does the housekeeping or the accepting.
  std::mutex housekeeping_mutex_;
  bool listening_ = true;
  Clock::time_point accept_paused_until_{};
  Clock::time_point next_sweep_{};
  Clock::time_point stop_deadline_ = Clock::time_point::max();

  std::mutex log_mutex_;  // guards the two below (any thread logs)
  Clock::time_point last_capacity_log_{};
  Clock::time_point last_error_log_{};

  mutable std::mutex registry_mutex_;
  std::condition_variable registry_empty_;
  std::unordered_map<uint64_t, ConnectionPtr> connections_;

  std::atomic<size_t> buffered_bytes_{0};
  std::atomic<unsigned long long> accepted_{0};
  std::atomic<unsigned long long> evicted_{0};
  std::atomic<unsigned long long> timed_out_{0};
  std::atomic<unsigned long long> requests_{0};
  std::atomic<unsigned long long> direct_requests_{0};
  std::atomic<unsigned long long> pooled_requests_{0};
};

}  // namespace gpu_admission::webhook::detail
