// Serving one connection: the state machine that handshakes, writes what is pending, reads,
// answers every complete request (directly or through httplib) and lingers after a refusal;
// with the socket reads and writes under it. The engine around it is connection_engine.cpp.
#include "webhook/server/connection_engine.h"

#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

namespace gpu_admission::webhook::detail {

void ConnectionEngine::serve(const ConnectionPtr& connection, bool on_worker) {
  try {
    serve_rounds(connection, on_worker);
  } catch (const std::exception& e) {
    log_throttled(LogLevel::Error, "connection error", {{"listener", config_.name}, {"error", e.what()}}, last_error_log_);
    close_connection(*connection, false);
  } catch (...) {
    close_connection(*connection, false);
  }
}

// The connection's state machine, run until it has to wait for the client: handshake, write
// what is pending, read, answer every complete request. Nothing here blocks; waiting is always
// parking in epoll with a deadline.
void ConnectionEngine::serve_rounds(const ConnectionPtr& connection, bool on_worker) {
  Connection& c = *connection;
  for (int round = 0;; ++round) {
    if (stopping_) return close_connection(c, false);
    if (c.lingering) return continue_lingering(connection);
    if (!c.tls_established && !continue_handshake(connection)) return;
    if (!c.output.empty() && !finish_output(connection, round)) return;

    RequestFrame frame = c.framer.scan(c.input);  // a pipelined request may be here already
    bool peer_finished = false;
    if (frame.state == RequestFrame::State::Incomplete && !read_more(c, frame, peer_finished)) return;
    if (frame.state == RequestFrame::State::Incomplete) {
      if (wait_for_rest(connection, frame)) continue;  // a response was queued: write it
      return;
    }
    if (frame.state == RequestFrame::State::Complete && frame.total_bytes > config_.inline_request_bytes && !on_worker) {
      // A large review: decoding it would hold up this loop's other connections.
      ++pooled_requests_;
      if (!pool_->submit([this, connection] { serve(connection, true); })) close_connection(c, false);
      return;
    }
    if (!respond(c, frame, peer_finished)) return;
  }
}

// One step of the TLS handshake; true once it is established.
bool ConnectionEngine::continue_handshake(const ConnectionPtr& connection) {
  Connection& c = *connection;
  ERR_clear_error();
  const int done = SSL_do_handshake(c.ssl);
  if (done == 1) {
    c.tls_established = true;
    return true;
  }
  const int reason = SSL_get_error(c.ssl, done);
  ERR_clear_error();
  const auto deadline = c.accepted_at + config_.read_timeout;
  if (reason == SSL_ERROR_WANT_READ) park(connection, EPOLLIN, deadline);
  else if (reason == SSL_ERROR_WANT_WRITE) park(connection, EPOLLOUT, deadline);
  else close_connection(c, false);  // not TLS, or a failed handshake
  return false;
}

// Writes the pending response and does what was decided for after it; true when the
// connection goes on to its next request in this round.
bool ConnectionEngine::finish_output(const ConnectionPtr& connection, int round) {
  using AfterOutput = Connection::AfterOutput;
  Connection& c = *connection;
  switch (flush_output(c)) {
    case Flush::WantWrite: park(connection, EPOLLOUT, c.output_deadline); return false;
    case Flush::WantRead: park(connection, EPOLLIN, c.output_deadline); return false;
    case Flush::Failed: close_connection(c, false); return false;
    case Flush::Done: break;
  }
  c.output.clear();
  if (c.output.capacity() > 64 * 1024) c.output.shrink_to_fit();
  c.output_sent = 0;
  if (c.after_output == AfterOutput::Close) {
    close_connection(c, true);
    return false;
  }
  if (c.after_output == AfterOutput::Linger) {
    start_lingering(connection);
    return false;
  }
  if (round >= 32) {
    // A client pipelining many requests yields the thread now and then: parked for
    // writability, it is handed out again at once, behind the connections already waiting.
    park(connection, EPOLLIN | EPOLLOUT, Clock::now() + config_.read_timeout);
    return false;
  }
  if (c.input.empty() && (c.ssl == nullptr || SSL_has_pending(c.ssl) == 0)) {
    // The usual end of a round trip: nothing buffered, and a read now would almost always
    // find nothing either. Waiting in epoll costs no read(2); a request that did arrive
    // meanwhile makes the connection ready at once.
    if (draining_) close_connection(c, true);
    else park(connection, EPOLLIN, Clock::now() + config_.idle_timeout);
    return false;
  }
  return true;
}

// Reads more of an incomplete request into `frame`; a request that cannot fit in the buffer
// becomes TooLarge. False when the connection was closed (a read error, or the client ended
// the connection mid-request).
bool ConnectionEngine::read_more(Connection& connection, RequestFrame& frame, bool& peer_finished) {
  const ReadResult read = read_request(connection, frame);
  if (read == ReadResult::Error) {
    close_connection(connection, false);
    return false;
  }
  peer_finished = read == ReadResult::Eof;
  if (frame.state == RequestFrame::State::Incomplete) {
    if (read == ReadResult::Full) {
      frame.state = RequestFrame::State::TooLarge;
    } else if (peer_finished) {
      close_connection(connection, false);
      return false;
    }
  }
  return true;
}

// The request is still incomplete after reading what the socket had. True when a response was
// queued instead of waiting (refused for lack of buffer space, or "100 Continue"); false when
// the connection was parked for the rest, or closed.
bool ConnectionEngine::wait_for_rest(const ConnectionPtr& connection, const RequestFrame& frame) {
  using AfterOutput = Connection::AfterOutput;
  Connection& c = *connection;
  if (c.input.empty()) {
    if (draining_) close_connection(c, true);
    else park(connection, EPOLLIN, Clock::now() + config_.idle_timeout);
    return false;
  }
  if (buffered_bytes_.load() > config_.max_buffered_bytes) {
    if (metrics_ != nullptr) metrics_->count_http_error(503);
    queue_output(c, canned_response(503, "server busy: too many request bytes in flight"), AfterOutput::Linger);
    return true;
  }
  if (frame.head_complete && frame.expects_continue && !c.continue_sent) {
    c.continue_sent = true;
    queue_output(c, "HTTP/1.1 100 Continue\r\n\r\n", AfterOutput::KeepServing);
    return true;
  }
  park(connection, EPOLLIN, c.request_started_at + config_.read_timeout);
  return false;
}

// Answers the framed request into connection.output and settles what follows its writing,
// dropping the request from the input when the connection stays open. False when the
// connection was closed instead (nothing to write).
bool ConnectionEngine::respond(Connection& c, const RequestFrame& frame, bool peer_finished) {
  using AfterOutput = Connection::AfterOutput;
  const AfterAnswer after = answer(c, frame, peer_finished);
  if (after == AfterAnswer::Abort) {
    close_connection(c, false);
    return false;
  }
  c.output_sent = 0;
  c.output_deadline = Clock::now() + config_.write_timeout;
  if (frame.state != RequestFrame::State::Complete && !peer_finished) {
    // The client may still be sending the body we refused: linger so it reads the answer.
    c.after_output = AfterOutput::Linger;
  } else if (after == AfterAnswer::Close) {
    c.after_output = AfterOutput::Close;
  } else {
    c.after_output = AfterOutput::KeepServing;
    c.input.erase(0, frame.total_bytes);
    if (c.input.capacity() > 64 * 1024 && c.input.size() < 16 * 1024) c.input.shrink_to_fit();
    account_input(c);
    c.framer.reset();
    c.continue_sent = false;
    if (!c.input.empty()) c.request_started_at = Clock::now();
  }
  return true;
}

// Reads until `frame` (scanned as bytes arrive) is complete or the socket has nothing more.
// Reading stops at a complete request, so a client pipelining without end is held back by TCP
// flow control instead of filling the buffer.
ConnectionEngine::ReadResult ConnectionEngine::read_request(Connection& connection, RequestFrame& frame) {
  const size_t capacity = config_.limits.max_head_bytes * 2 + config_.limits.max_body_bytes * 2;
  char chunk[16 * 1024];
  ReadResult result = ReadResult::Full;
  while (connection.input.size() < capacity) {
    const size_t want = std::min(sizeof chunk, capacity - connection.input.size());
    ssize_t n;
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int got = SSL_read(connection.ssl, chunk, static_cast<int>(want));
      if (got > 0) {
        n = got;
      } else {
        const int reason = SSL_get_error(connection.ssl, got);
        if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE) result = ReadResult::WouldBlock;
        else if (reason == SSL_ERROR_ZERO_RETURN || (reason == SSL_ERROR_SYSCALL && errno == 0)) result = ReadResult::Eof;
        else result = ReadResult::Error;
        ERR_clear_error();
        break;
      }
    } else {
      n = ::recv(connection.fd, chunk, want, 0);
      if (n == 0) {
        result = ReadResult::Eof;
        break;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        result = (errno == EAGAIN || errno == EWOULDBLOCK) ? ReadResult::WouldBlock : ReadResult::Error;
        break;
      }
    }
    if (connection.input.empty()) connection.request_started_at = Clock::now();
    connection.input.append(chunk, static_cast<size_t>(n));
    frame = connection.framer.scan(connection.input);
    if (frame.state != RequestFrame::State::Incomplete) {
      result = ReadResult::Framed;
      break;
    }
  }
  account_input(connection);
  return result;
}

void ConnectionEngine::queue_output(Connection& connection, std::string text, Connection::AfterOutput after) {
  connection.output = std::move(text);
  connection.output_sent = 0;
  connection.after_output = after;
  connection.output_deadline = Clock::now() + config_.write_timeout;
}

// Writes what the socket takes now; never waits (the caller parks the connection instead).
ConnectionEngine::Flush ConnectionEngine::flush_output(Connection& connection) {
  while (connection.output_sent < connection.output.size()) {
    const char* data = connection.output.data() + connection.output_sent;
    const size_t size = connection.output.size() - connection.output_sent;
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(connection.ssl, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) {
        connection.output_sent += static_cast<size_t>(n);
        continue;
      }
      const int reason = SSL_get_error(connection.ssl, n);
      ERR_clear_error();
      if (reason == SSL_ERROR_WANT_WRITE) return Flush::WantWrite;
      if (reason == SSL_ERROR_WANT_READ) return Flush::WantRead;
      return Flush::Failed;
    }
    const ssize_t n = ::send(connection.fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Flush::WantWrite : Flush::Failed;
    }
    connection.output_sent += static_cast<size_t>(n);
  }
  return Flush::Done;
}

// Answers one request (complete, too large or unusable) into connection.output; says what
// becomes of the connection once that is written.
ConnectionEngine::AfterAnswer ConnectionEngine::answer(Connection& connection, const RequestFrame& frame,
                                                       bool peer_finished) {
  if (frame.state == RequestFrame::State::Invalid) {
    if (metrics_ != nullptr) metrics_->count_http_error(frame.error_status);
    connection.output = canned_response(frame.error_status, frame.error);
    return AfterAnswer::Close;
  }
  const bool too_large = frame.state == RequestFrame::State::TooLarge;
  std::string_view request = connection.input;
  if (!too_large) request = request.substr(0, frame.total_bytes);

  if (config_.direct_handler) {
    if (std::optional<DirectRequest> direct = direct_request(frame, request)) {
      direct->close = direct->close || peer_finished || draining_;
      direct->remote_ip = connection.remote_ip;
      direct->remote_port = connection.remote_port;
      if (config_.direct_handler(*direct, connection.output)) {
        ++requests_;
        ++direct_requests_;
        ++connection.requests;
        return direct->close ? AfterAnswer::Close : AfterAnswer::KeepOpen;
      }
    }
  }

  RequestContext context;
  context.body_too_large = too_large;
  current_request = &context;
  BufferedStream stream(request, connection);
  bool connection_closed = false;
  bool served = false;
  try {
    served = router_.serve(stream, too_large || peer_finished || draining_, connection_closed);
  } catch (...) {
    served = false;  // httplib catches handler exceptions itself; this is a last resort
  }
  current_request = nullptr;
  ++requests_;
  ++connection.requests;
  connection.output = std::move(stream.output());
  if (connection.output.empty()) return AfterAnswer::Abort;
  if (!served || connection_closed || context.close_after_response || too_large || peer_finished || draining_)
    return AfterAnswer::Close;
  return AfterAnswer::KeepOpen;
}

void ConnectionEngine::start_lingering(const ConnectionPtr& connection) {
  Connection& c = *connection;
  if (c.ssl != nullptr && c.tls_established) {
    ERR_clear_error();
    SSL_shutdown(c.ssl);  // close_notify after the response
    ERR_clear_error();
  }
  ::shutdown(c.fd, SHUT_WR);
  c.lingering = true;
  c.input.clear();
  c.input.shrink_to_fit();
  account_input(c);
  c.request_started_at = Clock::now();
  continue_lingering(connection);
}

void ConnectionEngine::continue_lingering(const ConnectionPtr& connection) {
  constexpr size_t kMaxDiscarded = 64u << 20;
  const auto linger_for = std::min<std::chrono::milliseconds>(config_.read_timeout, std::chrono::seconds(2));
  Connection& c = *connection;
  char sink[16 * 1024];
  while (c.lingering_discarded < kMaxDiscarded) {
    const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);  // raw bytes: nothing is decrypted any more
    if (n > 0) {
      c.lingering_discarded += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return park(connection, EPOLLIN, c.request_started_at + linger_for);
    break;  // EOF or error
  }
  close_connection(c, false);
}

}  // namespace gpu_admission::webhook::detail
