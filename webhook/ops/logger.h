// JSON-lines logging on stderr: one object per line with time, level, msg and fields.
// Thread-safe; a line is written with one write() so lines never interleave.
#pragma once

#include <atomic>
#include <optional>
#include <string_view>

#include "policy/base/json.h"

namespace gpu_admission::webhook {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

std::optional<LogLevel> parse_log_level(std::string_view text);  // debug|info|warn|error

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::Info, int fd = 2) : level_(static_cast<int>(level)), fd_(fd) {}
  void set_level(LogLevel level) { level_ = static_cast<int>(level); }
  bool enabled(LogLevel level) const { return static_cast<int>(level) >= level_.load(std::memory_order_relaxed); }
  // Writes {"time":"2026-11-21T05:00:00.123Z","level":"info","msg":msg, ...fields}.
  void log(LogLevel level, std::string_view msg, const Json& fields = Json::object());
  void debug(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Debug, msg, fields); }
  void info(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Info, msg, fields); }
  void warn(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Warn, msg, fields); }
  void error(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::Error, msg, fields); }

 private:
  std::atomic<int> level_;
  int fd_;
};

}  // namespace gpu_admission::webhook
