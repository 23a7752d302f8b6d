// The direct path's request recognition and response writing; see direct_path.h.
#include "webhook/server/direct_path.h"

#include <algorithm>

namespace gpu_admission::webhook::detail {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 415: return "Unsupported Media Type";
    case 500: return "Internal Server Error";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::optional<DirectRequest> direct_request(const RequestFrame& frame, std::string_view request) {
  if (frame.state != RequestFrame::State::Complete || frame.chunked || frame.expects_continue || !frame.http_1_1 ||
      frame.content_type_headers != 1 || frame.connection == RequestFrame::ConnectionHeader::Other ||
      frame.method.in(request) != "POST")
    return std::nullopt;
  DirectRequest direct;
  const std::string_view target = frame.target.in(request);
  direct.path = target.substr(0, target.find('?'));
  direct.content_type = frame.content_type.in(request);
  direct.body = request.substr(frame.head_bytes, frame.total_bytes - frame.head_bytes);
  direct.close = frame.connection == RequestFrame::ConnectionHeader::Close;
  return direct;
}

void write_http_response(int status, std::string_view content_type, std::string_view body, bool close,
                         std::chrono::milliseconds keep_alive_timeout, std::string& out) {
  out.clear();
  out.reserve(body.size() + 160);
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\n";
  if (!close) {
    out += "Keep-Alive: timeout=";
    out += std::to_string(std::max<long long>(1, keep_alive_timeout.count() / 1000));
    out += ", max=1000000\r\n";
  }
  out += "\r\n";
  out += body;
}

std::string canned_response(int status, std::string_view reason) {
  std::string response;
  write_http_response(status, "text/plain", std::string(reason) + "\n", true, {}, response);
  return response;
}

}  // namespace gpu_admission::webhook::detail
