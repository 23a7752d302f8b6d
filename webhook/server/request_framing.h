// HTTP/1.1 request framing for the connection engine (connection_engine.h): decides from the
// bytes received so far whether a whole request (head and body) has arrived, without blocking
// and without copying. The server only answers a request once it is complete, so a client that
// stalls half-way through a request holds a socket, never a thread.
//
// Only framing is decided here (RFC 9112 section 6): where the head ends, Content-Length or
// chunked Transfer-Encoding, and the limits; and where the request line, Content-Type and
// Connection are, for the direct path. Parsing anything else is left to httplib.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

struct FramingLimits {
  size_t max_head_bytes = 64 * 1024;        // request line and headers
  size_t max_body_bytes = 8 * 1024 * 1024;  // decoded body
};

// Where a part of the request head lies in the connection's buffer. Offsets, not views: they
// stay valid while the buffer grows.
struct HeadSpan {
  size_t offset = 0;
  size_t size = 0;
  std::string_view in(std::string_view buffer) const { return buffer.substr(offset, size); }
};

struct RequestFrame {
  enum class State {
    Incomplete,  // more bytes are needed
    Complete,    // `total_bytes` bytes form one request
    TooLarge,    // head complete, the body exceeds max_body_bytes: answer 413 and close
    Invalid,     // unusable framing: answer `error_status` and close
  };
  State state = State::Incomplete;
  size_t head_bytes = 0;         // once the head is complete: its size including the blank line
  size_t total_bytes = 0;        // Complete: head and body
  bool head_complete = false;
  bool expects_continue = false; // "Expect: 100-continue" was sent
  int error_status = 0;          // Invalid: 400 or 431
  std::string error;             // Invalid: a short reason

  // Once the head is complete, what the engine needs to answer a plain admission request
  // itself (see EngineConfig::direct_handler): the request line's parts and two headers.
  enum class ConnectionHeader { Absent, KeepAlive, Close, Other };
  HeadSpan method;
  HeadSpan target;
  bool http_1_1 = false;          // the request line ends in exactly "HTTP/1.1"
  bool chunked = false;
  HeadSpan content_type;          // the last Content-Type header's value
  unsigned content_type_headers = 0;
  ConnectionHeader connection = ConnectionHeader::Absent;
};

// Incremental scanner over one connection's receive buffer. `scan` is called with the whole
// buffer each time more bytes arrived (the buffer only grows at the end); work already done is
// not repeated, so a client sending one byte at a time costs linear time. `reset` after the
// request's bytes were removed from the front of the buffer.
class RequestFramer {
 public:
  explicit RequestFramer(FramingLimits limits = {}) : limits_(limits) {}

  RequestFrame scan(std::string_view buffer);
  void reset();
  const FramingLimits& limits() const { return limits_; }

 private:
  enum class BodyKind { None, Length, Chunked };
  enum class ChunkState { Size, Data, DataEnd, Trailer };

  void describe_request_line(std::string_view line);
  void parse_head(std::string_view head);
  void scan_chunks(std::string_view buffer);
  void fail(int status, std::string reason);

  FramingLimits limits_;
  RequestFrame frame_;
  size_t head_search_from_ = 0;  // where to resume looking for the blank line
  BodyKind body_kind_ = BodyKind::None;
  size_t content_length_ = 0;
  // Chunked body progress.
  ChunkState chunk_state_ = ChunkState::Size;
  size_t chunk_cursor_ = 0;     // offset in the buffer of the next unparsed byte
  size_t chunk_remaining_ = 0;  // data bytes left in the current chunk
  size_t chunked_body_bytes_ = 0;
};

}  // namespace gpu_admission::webhook
