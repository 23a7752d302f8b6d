// One client connection and the pieces that hand its requests to httplib (internal to
// webhook/server/): the Connection state, RequestRouter (httplib::Server used only as request
// parser, router and response writer, driven request by request through its protected
// process_request()), BufferedStream (a complete request in memory in, the response in memory
// out) and the RequestContext the routes read.
//
// Threads and ownership: a connection belongs to the event loop that accepted it and is only
// touched by that loop's thread, with one exception: while a worker answers a large request
// (the loop then ignores the connection's events), the worker owns it until it hands it back
// through the loop's queue. The pool's queue and the hand-back queue carry the happens-before
// edges; nothing here is locked. Epoll events carry the connection's slot in its loop (index
// and generation), so an event for a connection closed meanwhile finds nothing.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "webhook/server/listen_socket.h"
#include "webhook/server/request_framing.h"

namespace gpu_admission::webhook::detail {

// Empties OpenSSL's per-thread error queue around each call, so SSL_get_error judges that call
// alone. The queue is nearly always empty already, and peeking at it costs less than clearing.
inline void clear_tls_errors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

using Clock = std::chrono::steady_clock;

// What the engine tells the routes about the request being answered (and they tell it back).
struct RequestContext {
  bool body_too_large = false;    // the body exceeds the limit and was not received
  bool close_after_response = false;
  bool error_reported = false;  // an error answer already counted and logged (else the engine does)
};
// Set by the engine around each request it hands to httplib, on the thread answering it.
inline thread_local constinit RequestContext* current_request = nullptr;

class RequestRouter : public httplib::Server {
 public:
  // One request from `stream`; false when nothing usable could be read or written.
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

// An accepted socket, its TLS session, and the request and response in progress on it.
struct Connection {
  ~Connection() {
    if (ssl != nullptr) SSL_free(ssl);
    close_fd(fd);
  }

  // Where it lives: its event loop, and its slot there (the slot's generation tells a stale
  // epoll event from a live one).
  uint32_t loop = 0;
  uint32_t slot = 0;
  uint32_t generation = 0;
  int fd = -1;
  SSL* ssl = nullptr;  // nullptr on the plain-HTTP listener
  std::string remote_ip;
  int remote_port = 0;
  std::string local_ip;
  int local_port = 0;
  bool closed = false;
  Clock::time_point deadline;  // while it waits for the client: when it times out
  // The start of its last turn, and whether OpenSSL may hold record buffers for it since (the
  // sweep frees them once the connection has idled for EngineConfig::tls_buffers_idle).
  Clock::time_point last_turn;
  bool holds_tls_buffers = false;

  // What the socket may still hold (the connection is in epoll edge-triggered, so a byte that
  // was there at the last event but not read gives no new event). `socket_drained`: the last
  // read from the socket found it empty (EAGAIN, or fewer bytes than asked for) and no
  // readable event came since. `peer_hup`: the client shut its side (EPOLLRDHUP), so a short
  // read may have left the end of the stream unread. `trust_short_reads`: false after a worker
  // held the connection (its events were not looked at), until a read sees EAGAIN.
  bool socket_drained = false;
  bool peer_hup = false;
  bool trust_short_reads = true;
  bool tls_wants_write = false;  // OpenSSL must write before it can read on (a post-handshake message)
  bool blocked_on_write = false;  // the response hit EAGAIN: only room to write (or an error) helps
  bool worker_failed = false;  // set by the worker: close instead of writing

  // Records a read from the socket: `got` of `asked` bytes, or EAGAIN (`would_block`). A
  // short read empties a TCP socket's receive queue, so bytes arriving later raise a new
  // event; an end of stream already queued behind the bytes does not, hence `peer_hup`.
  void note_socket_read(size_t asked, size_t got, bool would_block) {
    if (would_block) {
      socket_drained = true;
      trust_short_reads = true;
    } else {
      socket_drained = got > 0 && got < asked && trust_short_reads && !peer_hup;
    }
  }
  // Whether bytes not read yet may wait in the socket or in OpenSSL's buffer (complete records
  // read ahead).
  bool may_have_input() const { return !socket_drained || (ssl != nullptr && SSL_has_pending(ssl) == 1); }

  // Owned by whoever serves the connection.
  Clock::time_point accepted_at;
  bool tls_established = false;
  std::string input;  // received, not yet answered bytes
  size_t accounted_bytes = 0;
  RequestFramer framer;
  bool continue_sent = false;
  Clock::time_point request_started_at;
  unsigned long long requests = 0;
  // A response not yet completely written: output[output_sent..], then `after_output`.
  enum class AfterOutput { KeepServing, Close, Linger };
  std::string output;
  size_t output_sent = 0;
  AfterOutput after_output = AfterOutput::KeepServing;
  Clock::time_point output_deadline;
  // After refusing a request whose body is still arriving: the response is out, the write side
  // is shut, and what the client still sends is read and dropped until it stops or a short
  // deadline passes, so that closing does not reset the connection before the client read the
  // response (a "lingering close").
  bool lingering = false;
  size_t lingering_discarded = 0;
};

// One complete request in memory in, the response collected in memory out.
class BufferedStream final : public httplib::Stream {
 public:
  BufferedStream(std::string_view request, const Connection& connection) : request_(request), connection_(connection) {}

  bool is_readable() const override { return position_ < request_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - position_);
    std::memcpy(ptr, request_.data() + position_, n);
    position_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // httplib answers "Expect: 100-continue" with an interim response before reading the body;
    // the engine already did that (or the body is here), so it is dropped.
    if (output_.empty() && std::string_view(ptr, size).starts_with("HTTP/1.1 100 ")) return static_cast<ssize_t>(size);
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = connection_.remote_ip;
    port = connection_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = connection_.local_ip;
    port = connection_.local_port;
  }
  socket_t socket() const override { return connection_.fd; }

  std::string& output() { return output_; }

 private:
  std::string_view request_;
  size_t position_ = 0;
  std::string output_;
  const Connection& connection_;
};

}  // namespace gpu_admission::webhook::detail
