// JSON-lines logging on stderr: one object per line with time, level, msg and fields.
// Thread-safe; a line is written with one write() so lines never interleave.
// Lines that outside input causes (requests answered with an error, request_errors.h) are rate
// limited per kind of error, so that a flood of junk cannot flood the log.
#pragma once

#include <array>
#include <atomic>
#include <optional>
#include <string_view>

#include "policy/base/json.h"
#include "webhook/ops/request_errors.h"
#include "webhook/ops/token_bucket.h"

namespace gpu_admission::webhook {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

std::optional<LogLevel> parse_log_level(std::string_view text);  // debug|info|warn|error

class Logger {
 public:
  // Lines of one kind of request error: at most kErrorBurst at once, kErrorsPerSecond after that.
  static constexpr double kErrorsPerSecond = 5;
  static constexpr int kErrorBurst = 10;

  explicit Logger(LogLevel level = LogLevel::Info, int fd = 2) : level_(static_cast<int>(level)), fd_(fd) {
    set_request_error_rate(kErrorsPerSecond, kErrorBurst);
  }
  void set_level(LogLevel level) { level_ = static_cast<int>(level); }
  bool enabled(LogLevel level) const { return static_cast<int>(level) >= level_.load(std::memory_order_relaxed); }
  // Writes {"time":"2026-11-21T05:00:00.123Z","level":"info","msg":msg, ...fields}.
  void log(LogLevel level, std::string_view msg, const Json& fields = Json::object());
  void debug(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Debug, msg, fields); }
  void info(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Info, msg, fields); }
  void warn(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Warn, msg, fields); }
  void error(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Error, msg, fields); }

  // A request answered with an error: {"msg": the kind's message, "error": its reason name,
  // "class", "reason": `reason`, "suppressed": lines of this kind held back since the last one
  // written, ...fields()}, at warn (client errors) or error (server errors). Rate limited per
  // kind; `fields` (returning a Json object) is called only for a line that is written, so
  // refusing a flood formats nothing.
  template <typename Fields>
  void request_error(RequestErrorKind kind, std::string_view reason, Fields&& fields) noexcept {
    uint64_t suppressed = 0;
    if (!admit(kind, suppressed)) return;
    try {
      write_request_error(kind, reason, suppressed, fields());
    } catch (...) {
    }
  }
  void request_error(RequestErrorKind kind, std::string_view reason) noexcept {
    request_error(kind, reason, [] { return Json::object(); });
  }
  // The rate limit of request_error lines, per kind.
  void set_request_error_rate(double per_second, int burst);

 private:
  bool admit(RequestErrorKind kind, uint64_t& suppressed) noexcept;
  void write_request_error(RequestErrorKind kind, std::string_view reason, uint64_t suppressed, const Json& fields);

  std::atomic<int> level_;
  int fd_;
  std::array<TokenBucket, kRequestErrorCount> error_buckets_{};
  std::array<std::atomic<uint64_t>, kRequestErrorCount> suppressed_{};
};

}  // namespace gpu_admission::webhook
