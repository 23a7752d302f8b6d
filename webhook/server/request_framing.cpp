// Incremental HTTP/1.1 request framing (see request_framing.h).
#include "webhook/server/request_framing.h"

#include <algorithm>

namespace gpu_admission::webhook {

namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr size_t kMaxChunkLineBytes = 1024;

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Decimal digits only, no sign, no overflow.
bool parse_decimal(std::string_view text, size_t& value) {
  if (text.empty() || text.size() > 18) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<size_t>(c - '0');
  }
  return true;
}

bool parse_hex(std::string_view text, size_t& value) {
  if (text.empty() || text.size() > 15) return false;
  value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return false;
    value = value * 16 + static_cast<size_t>(digit);
  }
  return true;
}

}  // namespace

void RequestFramer::reset() {
  frame_ = RequestFrame{};
  head_search_from_ = 0;
  body_kind_ = BodyKind::None;
  content_length_ = 0;
  chunk_state_ = ChunkState::Size;
  chunk_cursor_ = 0;
  chunk_remaining_ = 0;
  chunked_body_bytes_ = 0;
}

void RequestFramer::fail(int status, std::string reason) {
  frame_.state = RequestFrame::State::Invalid;
  frame_.error_status = status;
  frame_.error = std::move(reason);
}

void RequestFramer::describe_request_line(std::string_view line) {
  const size_t first_space = line.find(' ');
  if (first_space == std::string_view::npos) return;
  const size_t second_space = line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos) return;
  frame_.method = {0, first_space};
  frame_.target = {first_space + 1, second_space - first_space - 1};
  frame_.http_1_1 = line.substr(second_space + 1) == "HTTP/1.1";
}

void RequestFramer::parse_head(std::string_view head) {
  // `head` excludes the final blank line. The request line is httplib's to judge; only its
  // parts are noted here.
  size_t line_start = head.find(kCrlf);
  describe_request_line(head.substr(0, line_start));
  bool have_length = false;
  bool have_transfer_encoding = false;
  while (line_start != std::string_view::npos) {
    line_start += kCrlf.size();
    size_t line_end = head.find(kCrlf, line_start);
    std::string_view line = head.substr(line_start, line_end == std::string_view::npos ? std::string_view::npos
                                                                                     : line_end - line_start);
    line_start = line_end;
    if (line.empty()) continue;
    if (line.front() == ' ' || line.front() == '\t') return fail(400, "obsolete header line folding");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header line");
    const std::string_view name = line.substr(0, colon);
    if (name.back() == ' ' || name.back() == '\t') return fail(400, "whitespace before a header colon");
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      size_t length = 0;
      if (!parse_decimal(value, length)) return fail(400, "invalid Content-Length");
      if (have_length && length != content_length_) return fail(400, "conflicting Content-Length headers");
      have_length = true;
      content_length_ = length;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (have_transfer_encoding || !iequals(value, "chunked"))
        return fail(400, "unsupported Transfer-Encoding (only chunked)");
      have_transfer_encoding = true;
    } else if (iequals(name, "Expect")) {
      frame_.expects_continue = iequals(value, "100-continue");
    } else if (iequals(name, "Content-Type")) {
      ++frame_.content_type_headers;
      frame_.content_type = {static_cast<size_t>(value.data() - head.data()), value.size()};
    } else if (iequals(name, "Connection")) {
      using Connection = RequestFrame::ConnectionHeader;
      const Connection token = iequals(value, "close")        ? Connection::Close
                               : iequals(value, "keep-alive") ? Connection::KeepAlive
                                                              : Connection::Other;
      frame_.connection = frame_.connection == Connection::Absent ? token : Connection::Other;
    }
  }
  if (have_length && have_transfer_encoding) return fail(400, "both Content-Length and Transfer-Encoding");
  body_kind_ = have_transfer_encoding ? BodyKind::Chunked : have_length ? BodyKind::Length : BodyKind::None;
  frame_.chunked = have_transfer_encoding;
}

void RequestFramer::scan_chunks(std::string_view buffer) {
  const size_t raw_body_limit = limits_.max_body_bytes * 2 + limits_.max_head_bytes;
  while (true) {
    if (chunk_cursor_ - frame_.head_bytes > raw_body_limit) {
      frame_.state = RequestFrame::State::TooLarge;
      return;
    }
    switch (chunk_state_) {
      case ChunkState::Size: {
        const size_t line_end = buffer.find(kCrlf, chunk_cursor_);
        if (line_end == std::string_view::npos) {
          if (buffer.size() - chunk_cursor_ > kMaxChunkLineBytes) return fail(400, "chunk size line too long");
          return;
        }
        std::string_view line = buffer.substr(chunk_cursor_, line_end - chunk_cursor_);
        line = trim(line.substr(0, line.find(';')));  // chunk extensions are ignored
        size_t size = 0;
        if (!parse_hex(line, size)) return fail(400, "invalid chunk size");
        chunk_cursor_ = line_end + kCrlf.size();
        if (size == 0) {
          chunk_state_ = ChunkState::Trailer;
          break;
        }
        chunked_body_bytes_ += size;
        if (chunked_body_bytes_ > limits_.max_body_bytes) {
          frame_.state = RequestFrame::State::TooLarge;
          return;
        }
        chunk_remaining_ = size;
        chunk_state_ = ChunkState::Data;
        break;
      }
      case ChunkState::Data: {
        const size_t available = std::min(buffer.size() - chunk_cursor_, chunk_remaining_);
        chunk_cursor_ += available;
        chunk_remaining_ -= available;
        if (chunk_remaining_ > 0) return;
        chunk_state_ = ChunkState::DataEnd;
        break;
      }
      case ChunkState::DataEnd: {
        if (buffer.size() - chunk_cursor_ < kCrlf.size()) return;
        if (buffer.substr(chunk_cursor_, kCrlf.size()) != kCrlf) return fail(400, "chunk data not followed by CRLF");
        chunk_cursor_ += kCrlf.size();
        chunk_state_ = ChunkState::Size;
        break;
      }
      case ChunkState::Trailer: {
        const size_t line_end = buffer.find(kCrlf, chunk_cursor_);
        if (line_end == std::string_view::npos) {
          if (buffer.size() - chunk_cursor_ > limits_.max_head_bytes) return fail(431, "trailer too large");
          return;
        }
        const bool last = line_end == chunk_cursor_;
        chunk_cursor_ = line_end + kCrlf.size();
        if (last) {
          frame_.state = RequestFrame::State::Complete;
          frame_.total_bytes = chunk_cursor_;
          return;
        }
        break;
      }
    }
  }
}

RequestFrame RequestFramer::scan(std::string_view buffer) {
  if (frame_.state != RequestFrame::State::Incomplete) return frame_;

  if (!frame_.head_complete) {
    const size_t from = head_search_from_;
    const size_t blank_line = buffer.find("\r\n\r\n", from);
    if (blank_line == std::string_view::npos) {
      if (buffer.size() > limits_.max_head_bytes) {
        fail(431, "request head too large");
        return frame_;
      }
      head_search_from_ = buffer.size() >= 3 ? buffer.size() - 3 : 0;
      return frame_;
    }
    frame_.head_bytes = blank_line + 4;
    if (frame_.head_bytes > limits_.max_head_bytes) {
      fail(431, "request head too large");
      return frame_;
    }
    frame_.head_complete = true;
    parse_head(buffer.substr(0, blank_line));
    if (frame_.state == RequestFrame::State::Invalid) return frame_;
    chunk_cursor_ = frame_.head_bytes;
  }

  switch (body_kind_) {
    case BodyKind::None:
      frame_.state = RequestFrame::State::Complete;
      frame_.total_bytes = frame_.head_bytes;
      break;
    case BodyKind::Length:
      if (content_length_ > limits_.max_body_bytes) {
        frame_.state = RequestFrame::State::TooLarge;
      } else if (buffer.size() - frame_.head_bytes >= content_length_) {
        frame_.state = RequestFrame::State::Complete;
        frame_.total_bytes = frame_.head_bytes + content_length_;
      }
      break;
    case BodyKind::Chunked:
      scan_chunks(buffer);
      break;
  }
  return frame_;
}

}  // namespace gpu_admission::webhook
