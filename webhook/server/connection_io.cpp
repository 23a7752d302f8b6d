// Serving one connection: the state machine that handshakes, writes what is pending, reads,
// answers a complete request (directly or through httplib) and lingers after a refusal; with
// the socket reads and writes under it. It runs on the connection's event loop thread; only
// respond() also runs on a worker, for large requests. The loop around it is event_loop.cpp.
#include "webhook/server/connection_engine.h"

#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string>

#include "webhook/ops/error_report.h"

namespace gpu_admission::webhook::detail {
namespace {

std::string remote_of(const Connection& c) { return c.remote_ip + ":" + std::to_string(c.remote_port); }

// httplib answered a request it could not parse with an error of its own (400, 413, 414, 431):
// counted and logged like the server's other error answers. The routes' own answers (probes,
// the metrics listener's 404) are not request errors.
void report_unparsed(const Connection& c, std::string_view response, const std::string& listener, Metrics* metrics,
                     Logger* logger) {
  constexpr std::string_view kStatusLine = "HTTP/1.1 ";
  int status = 0;
  if (response.size() < kStatusLine.size() + 3 || !response.starts_with(kStatusLine)) return;
  std::from_chars(response.data() + kStatusLine.size(), response.data() + kStatusLine.size() + 3, status);
  if (status != 400 && status != 413 && status != 414 && status != 431) return;
  if (metrics != nullptr) metrics->count_http_error(status);
  report_request_error(metrics, logger, request_error_for_status(status), "the request cannot be parsed as HTTP", [&] {
    return Json{{"status", status}, {"listener", listener}, {"remote", remote_of(c)}};
  });
}

}  // namespace

void ConnectionEngine::serve(const ConnectionPtr& connection, int answered) {
  try {
    serve_turn(connection, answered);
  } catch (const std::exception& e) {
    log_throttled(LogLevel::Error, "connection error", {{"listener", config_.name}, {"error", e.what()}}, last_error_log_);
    close_connection(*connection, false);
  } catch (...) {
    close_connection(*connection, false);
  }
}

// One turn of the connection's state machine: handshake, write what is pending, read, answer a
// complete request; until it has to wait for the client (an edge brings it back), has had its
// share of the turn (it goes on the ready list), is closed or handed to a worker. Nothing here
// blocks. `answered`: requests already answered in this turn.
void ConnectionEngine::serve_turn(const ConnectionPtr& connection, int answered) {
  Connection& c = *connection;
  c.last_turn = turn_now(c);
  c.holds_tls_buffers = c.ssl != nullptr;
  while (true) {
    if (stopping_) return close_connection(c, false);
    if (c.lingering) return continue_lingering(c);
    if (!c.tls_established && !continue_handshake(c)) return;
    if (!c.output.empty() && !finish_output(c, answered)) return;

    RequestFrame frame = c.framer.scan(c.input);  // a pipelined request may be here already
    bool peer_finished = false;
    if (frame.state == RequestFrame::State::Incomplete && !read_more(c, frame, peer_finished)) return;
    if (frame.state == RequestFrame::State::Incomplete) {
      if (wait_for_rest(c, frame)) continue;  // a response was queued: write it
      return;
    }
    if (frame.state == RequestFrame::State::Complete && frame.total_bytes > config_.inline_request_bytes) {
      // A large review: decoding it would hold up this loop's other connections.
      return hand_to_worker(c, frame, peer_finished);
    }
    if (!respond(c, frame, peer_finished)) return close_connection(c, false);
    ++answered;
  }
}

// One step of the TLS handshake; true once it is established.
bool ConnectionEngine::continue_handshake(Connection& c) {
  clear_tls_errors();
  const int done = SSL_do_handshake(c.ssl);
  if (done == 1) {
    c.tls_established = true;
    loops_[c.loop]->handshaking.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  const int reason = SSL_get_error(c.ssl, done);
  clear_tls_errors();
  const auto deadline = c.accepted_at + config_.read_timeout;
  if (reason == SSL_ERROR_WANT_READ) await_input(c, deadline);
  else if (reason == SSL_ERROR_WANT_WRITE) wait_for_client(c, deadline);
  else close_connection(c, false);  // not TLS, or a failed handshake
  return false;
}

// Writes the pending response and does what was decided for after it; true when the
// connection goes on to its next request in this turn.
bool ConnectionEngine::finish_output(Connection& c, int answered) {
  using AfterOutput = Connection::AfterOutput;
  const Flush flushed = flush_output(c);
  c.blocked_on_write = flushed == Flush::WantWrite;
  switch (flushed) {
    case Flush::WantWrite: wait_for_client(c, c.output_deadline); return false;
    case Flush::WantRead: await_input(c, c.output_deadline); return false;
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
    start_lingering(c);
    return false;
  }
  if (!c.input.empty() || c.may_have_input()) {
    if (answered < kRequestsPerTurn) return true;
    // More may be here (pipelined, or read ahead by OpenSSL) and no edge would announce it:
    // the connection goes to the back of the ready list, so a client pipelining without end
    // gets one request per turn like everyone else.
    make_ready(c, turn_now(c) + config_.read_timeout);
    return false;
  }
  // The usual end of a round trip: nothing buffered, and the socket known to be empty. No
  // read(2) to find that out; the next request raises an edge.
  if (draining_) close_connection(c, true);
  else wait_for_client(c, turn_now(c) + config_.idle_timeout);
  return false;
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
// the connection waits for the rest, or was closed.
bool ConnectionEngine::wait_for_rest(Connection& c, const RequestFrame& frame) {
  using AfterOutput = Connection::AfterOutput;
  if (c.input.empty()) {
    if (draining_) close_connection(c, true);
    else await_input(c, Clock::now() + config_.idle_timeout);
    return false;
  }
  if (buffered_bytes_.load() > config_.max_buffered_bytes) {
    if (metrics_ != nullptr) metrics_->count_http_error(503);
    report_request_error(metrics_, logger_, RequestErrorKind::ServerBusy, "too many request bytes in flight",
                         [&] { return Json{{"status", 503}, {"listener", config_.name}, {"remote", remote_of(c)}}; });
    queue_output(c, canned_response(503, "server busy: too many request bytes in flight"), AfterOutput::Linger);
    return true;
  }
  if (frame.head_complete && frame.expects_continue && !c.continue_sent) {
    c.continue_sent = true;
    queue_output(c, "HTTP/1.1 100 Continue\r\n\r\n", AfterOutput::KeepServing);
    return true;
  }
  await_input(c, c.request_started_at + config_.read_timeout);
  return false;
}

// Answers the framed request into connection.output and settles what follows its writing,
// dropping the request from the input when the connection stays open. False when there is
// nothing to write (the caller closes the connection). Also runs on a worker.
bool ConnectionEngine::respond(Connection& c, const RequestFrame& frame, bool peer_finished) {
  using AfterOutput = Connection::AfterOutput;
  const AfterAnswer after = answer(c, frame, peer_finished);
  if (after == AfterAnswer::Abort) return false;
  c.output_sent = 0;
  c.output_deadline = turn_now(c) + config_.write_timeout;
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
    if (!c.input.empty()) c.request_started_at = turn_now(c);
  }
  return true;
}

// Reads until `frame` (scanned as bytes arrive) is complete or the socket has nothing more.
// Reading stops at a complete request, so a client pipelining without end is held back by TCP
// flow control instead of filling the buffer. A socket known to be empty is not read (the
// next edge says when it is not).
ConnectionEngine::ReadResult ConnectionEngine::read_request(Connection& connection, RequestFrame& frame) {
  const size_t capacity = config_.limits.max_head_bytes * 2 + config_.limits.max_body_bytes * 2;
  char chunk[16 * 1024];
  ReadResult result = ReadResult::Full;
  while (connection.input.size() < capacity) {
    const bool tls_buffered = connection.ssl != nullptr && SSL_has_pending(connection.ssl) == 1;
    if (connection.socket_drained && !connection.tls_wants_write && !tls_buffered) {
      result = ReadResult::WouldBlock;
      break;
    }
    const size_t want = std::min(sizeof chunk, capacity - connection.input.size());
    size_t n = 0;
    result = read_some(connection, chunk, want, n);
    if (result != ReadResult::Data) break;
    if (connection.input.empty()) connection.request_started_at = turn_now(connection);
    connection.input.append(chunk, n);
    frame = connection.framer.scan(connection.input);
    if (frame.state != RequestFrame::State::Incomplete) {
      result = ReadResult::Framed;
      break;
    }
    result = ReadResult::Full;
  }
  account_input(connection);
  return result;
}

// One read from the connection (through OpenSSL on TLS): Data with `n` bytes in `chunk`, or
// WouldBlock, Eof, Error. Notes what it learns about the socket's contents.
ConnectionEngine::ReadResult ConnectionEngine::read_some(Connection& connection, char* chunk, size_t want, size_t& n) {
  if (connection.ssl != nullptr) {
    clear_tls_errors();
    connection.tls_wants_write = false;
    const int got = SSL_read(connection.ssl, chunk, static_cast<int>(want));  // notes via note_bio_read
    if (got > 0) {
      n = static_cast<size_t>(got);
      return ReadResult::Data;
    }
    const int reason = SSL_get_error(connection.ssl, got);
    const int saved_errno = errno;
    clear_tls_errors();
    if (reason == SSL_ERROR_WANT_READ) return ReadResult::WouldBlock;
    if (reason == SSL_ERROR_WANT_WRITE) {
      connection.tls_wants_write = true;  // the write hit EAGAIN: an edge comes when it can go on
      return ReadResult::WouldBlock;
    }
    if (reason == SSL_ERROR_ZERO_RETURN || (reason == SSL_ERROR_SYSCALL && saved_errno == 0)) return ReadResult::Eof;
    return ReadResult::Error;
  }
  while (true) {
    const ssize_t got = ::recv(connection.fd, chunk, want, 0);
    if (got > 0) {
      n = static_cast<size_t>(got);
      connection.note_socket_read(want, n, false);
      return ReadResult::Data;
    }
    if (got == 0) {
      connection.note_socket_read(want, 0, false);
      return ReadResult::Eof;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ReadResult::Error;
    connection.note_socket_read(want, 0, true);
    return ReadResult::WouldBlock;
  }
}

void ConnectionEngine::queue_output(Connection& connection, std::string text, Connection::AfterOutput after) {
  connection.output = std::move(text);
  connection.output_sent = 0;
  connection.after_output = after;
  connection.output_deadline = Clock::now() + config_.write_timeout;
}

// Writes what the socket takes now; never waits (the caller leaves the connection waiting instead).
ConnectionEngine::Flush ConnectionEngine::flush_output(Connection& connection) {
  while (connection.output_sent < connection.output.size()) {
    const char* data = connection.output.data() + connection.output_sent;
    const size_t size = connection.output.size() - connection.output_sent;
    if (connection.ssl != nullptr) {
      clear_tls_errors();
      const int n = SSL_write(connection.ssl, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) {
        connection.output_sent += static_cast<size_t>(n);
        continue;
      }
      const int reason = SSL_get_error(connection.ssl, n);
      clear_tls_errors();
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
    report_request_error(metrics_, logger_, request_error_for_status(frame.error_status), frame.error, [&] {
      return Json{{"status", frame.error_status}, {"listener", config_.name}, {"remote", remote_of(connection)}};
    });
    connection.output = canned_response(frame.error_status, frame.error);
    return AfterAnswer::Close;
  }
  const bool too_large = frame.state == RequestFrame::State::TooLarge;
  if (!too_large && connection.input.capacity() < frame.total_bytes + DirectRequest::kBodyPadding)
    connection.input.reserve(frame.total_bytes + DirectRequest::kBodyPadding);
  std::string_view request = connection.input;
  if (!too_large) request = request.substr(0, frame.total_bytes);

  if (config_.direct_handler) {
    if (std::optional<DirectRequest> direct = direct_request(frame, request)) {
      direct->close = direct->close || peer_finished || draining_;
      direct->remote_ip = connection.remote_ip;
      direct->remote_port = connection.remote_port;
      direct->received = turn_now(connection);
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
  if (!context.error_reported) report_unparsed(connection, connection.output, config_.name, metrics_, logger_);
  if (!served || connection_closed || context.close_after_response || too_large || peer_finished || draining_)
    return AfterAnswer::Close;
  return AfterAnswer::KeepOpen;
}

void ConnectionEngine::start_lingering(Connection& c) {
  if (c.ssl != nullptr && c.tls_established) {
    clear_tls_errors();
    SSL_shutdown(c.ssl);  // close_notify after the response
    clear_tls_errors();
  }
  ::shutdown(c.fd, SHUT_WR);
  c.lingering = true;
  c.input.clear();
  c.input.shrink_to_fit();
  account_input(c);
  c.request_started_at = Clock::now();
  continue_lingering(c);
}

// Reads and drops what the client still sends, until EAGAIN (so that an edge announces more).
void ConnectionEngine::continue_lingering(Connection& c) {
  constexpr size_t kMaxDiscarded = 64u << 20;
  const auto linger_for = std::min<std::chrono::milliseconds>(config_.read_timeout, std::chrono::seconds(2));
  char sink[16 * 1024];
  while (c.lingering_discarded < kMaxDiscarded) {
    const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);  // raw bytes: nothing is decrypted any more
    if (n > 0) {
      c.lingering_discarded += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait_for_client(c, c.request_started_at + linger_for);
    break;  // EOF or error
  }
  close_connection(c, false);
}

}  // namespace gpu_admission::webhook::detail
