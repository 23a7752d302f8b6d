// The direct path (internal to webhook/server/): the plain admission POSTs that make up nearly
// all of the traffic are recognised from their RequestFrame and answered without httplib's
// parser, with response bytes laid out exactly as httplib writes them; and the canned responses
// the engine writes itself for requests httplib never sees.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "webhook/server/request_framing.h"

namespace gpu_admission::webhook::detail {

// "OK", "Bad Request", ... for the statuses the server answers with; "Error" for others.
std::string_view reason_phrase(int status);

// A POST with a Content-Length body, exactly one Content-Type header, no Expect, and at most
// one Connection header of "close" or "keep-alive", over HTTP/1.1: the shape of every request
// the API server sends. Anything else is parsed by httplib.
struct DirectRequest {
  // The body is followed by at least this many readable bytes in the connection's buffer, so a
  // decoder that reads ahead (simdjson) can read it where it lies.
  static constexpr size_t kBodyPadding = 64;
  std::string_view path;  // the target without its query ("?timeout=10s")
  std::string_view content_type;
  std::string_view body;
  bool close = false;  // answer with "Connection: close" and close
  std::string_view remote_ip;
  int remote_port = 0;
  // When the engine took the request up: its loop's turn clock (no clock read per request).
  std::chrono::steady_clock::time_point received{};
};

// The request framed by `frame` in `request`, if it has the shape above (remote_ip and
// remote_port are left for the caller).
std::optional<DirectRequest> direct_request(const RequestFrame& frame, std::string_view request);

// The response bytes, laid out the way httplib writes them (headers in its order), so that a
// client cannot tell which path answered.
void write_http_response(int status, std::string_view content_type, std::string_view body, bool close,
                         std::chrono::milliseconds keep_alive_timeout, std::string& out);

// A response written by the engine itself, for requests httplib never sees.
std::string canned_response(int status, std::string_view reason);

}  // namespace gpu_admission::webhook::detail
