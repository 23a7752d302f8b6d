// JSON-lines logger (see logger.h): each call formats one object
// {"time","level","msg",...fields} and writes it with a single write() so concurrent lines never
// interleave. Request errors pass a token bucket of their kind first. Logging never throws: any failure (bad UTF-8 is replaced, allocation failure,
// a closed fd) drops the line.
#include "webhook/ops/logger.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace gpu_admission::webhook {

namespace {

constexpr std::string_view kLevelNames[] = {"debug", "info", "warn", "error"};

// RFC 3339 UTC with milliseconds: 2026-11-21T05:00:00.123Z
std::string utc_timestamp_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis % 1000));
  return text;
}

// Client errors are the caller's to fix (warn); server errors are the webhook's (error).
LogLevel level_of(RequestErrorKind kind) { return info_of(kind).error_class == "server" ? LogLevel::Error : LogLevel::Warn; }

bool is_reserved_key(std::string_view key) { return key == "time" || key == "level" || key == "msg"; }

void write_all(int fd, const std::string& line) {
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere to report a failing log stream
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "info") return LogLevel::Info;
  if (lower == "warn" || lower == "warning") return LogLevel::Warn;
  if (lower == "error") return LogLevel::Error;
  return std::nullopt;
}

void Logger::set_request_error_rate(double per_second, int burst) {
  for (auto& bucket : error_buckets_) bucket.configure(per_second, burst);
}

bool Logger::admit(RequestErrorKind kind, uint64_t& suppressed) noexcept {
  const size_t k = static_cast<size_t>(kind);
  if (k >= kRequestErrorCount || !enabled(level_of(kind))) return false;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  if (!error_buckets_[k].take(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())) {
    suppressed_[k].fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  suppressed = suppressed_[k].exchange(0, std::memory_order_relaxed);
  return true;
}

void Logger::write_request_error(RequestErrorKind kind, std::string_view reason, uint64_t suppressed, const Json& fields) {
  const RequestErrorInfo& info = info_of(kind);
  Json line = {{"error", info.reason}, {"class", info.error_class}, {"reason", reason}, {"suppressed", suppressed}};
  if (fields.is_object())
    for (const auto& [key, value] : fields.items()) line[key] = value;
  log(level_of(kind), info.message, line);
}

void Logger::log(LogLevel level, std::string_view msg, const Json& fields) {
  if (!enabled(level)) return;
  try {
    Json line = Json::object();
    line["time"] = utc_timestamp_now();
    line["level"] = kLevelNames[static_cast<int>(level)];
    line["msg"] = std::string(msg);
    if (fields.is_object()) {
      for (const auto& [key, value] : fields.items()) {
        // A field may not overwrite the envelope; keep it visible under another name.
        line[is_reserved_key(key) ? "field_" + key : key] = value;
      }
    } else if (!fields.is_null()) {
      line["fields"] = fields;
    }
    std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace);
    text.push_back('\n');
    write_all(fd_, text);
  } catch (...) {
    // Dropped: logging must never take the caller down.
  }
}

}  // namespace gpu_admission::webhook
