// Requests answered with an error are logged with their reason, rate limited per kind of error:
// the token bucket's arithmetic on a clock of its own, then the Logger's lines (a flood of one
// kind is cut to the burst, the next line that gets through says how many were held back, other
// kinds are not held back by it) and the table of kinds by HTTP status.
#include <catch2/catch.hpp>

#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "webhook/ops/logger.h"
#include "webhook/ops/request_errors.h"
#include "webhook/ops/token_bucket.h"

using namespace gpu_admission::webhook;
using nlohmann::json;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

// A Logger writing into a temporary file, and the lines it wrote.
struct LogFile {
  FILE* file = tmpfile();
  Logger logger{LogLevel::Info, fileno(file)};
  ~LogFile() { fclose(file); }
  std::vector<json> lines() const {
    std::vector<json> out;
    const off_t end = lseek(fileno(file), 0, SEEK_END);
    std::string text(static_cast<size_t>(end), '\0');
    REQUIRE(pread(fileno(file), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    size_t start = 0;
    while (start < text.size()) {
      const size_t newline = text.find('\n', start);
      REQUIRE(newline != std::string::npos);  // every line is whole
      out.push_back(json::parse(text.substr(start, newline - start)));
      start = newline + 1;
    }
    return out;
  }
};

}  // namespace

TEST_CASE("token bucket: a burst at once, then the rate", "[logger][ratelimit]") {
  TokenBucket bucket(5, 10);  // 5 per second, 10 at once
  const int64_t t0 = 1000 * kSecond;
  int taken = 0;
  for (int i = 0; i < 100; ++i) taken += bucket.take(t0) ? 1 : 0;
  CHECK(taken == 10);
  CHECK_FALSE(bucket.take(t0 + kSecond / 10));  // less than one interval (200 ms) later
  CHECK(bucket.take(t0 + kSecond / 5));          // one interval: one token
  CHECK_FALSE(bucket.take(t0 + kSecond / 5));
  // A long quiet spell refills the bucket to its burst, never beyond.
  taken = 0;
  for (int i = 0; i < 100; ++i) taken += bucket.take(t0 + 3600 * kSecond) ? 1 : 0;
  CHECK(taken == 10);
  // Over ten seconds of steady calls: the burst plus the rate, about.
  TokenBucket steady(5, 10);
  taken = 0;
  for (int64_t t = 0; t < 10 * kSecond; t += kSecond / 1000) taken += steady.take(t0 + t) ? 1 : 0;
  CHECK(taken >= 59);
  CHECK(taken <= 61);
}

TEST_CASE("request error lines: a flood is cut to the burst, the next line counts what was held back",
          "[logger][ratelimit]") {
  LogFile log;
  log.logger.set_request_error_rate(10, 3);  // 3 at once, one per 100 ms after
  int formatted = 0;
  for (int i = 0; i < 500; ++i)
    log.logger.request_error(RequestErrorKind::PayloadTooLarge, "request body larger than 1024 bytes", [&] {
      ++formatted;
      return gpu_admission::Json{{"status", 413}, {"path", "/validate"}};
    });
  // The fields of a line held back are never formatted.
  CHECK(formatted <= 4);
  std::vector<json> lines = log.lines();
  REQUIRE(!lines.empty());
  CHECK(lines.size() <= 4);  // the burst, plus one if the flood outlasted 100 ms
  const json& first = lines.front();
  CHECK(first["level"] == "warn");
  CHECK(first["msg"] == "request refused: body too large");
  CHECK(first["error"] == "payload_too_large");
  CHECK(first["class"] == "client");
  CHECK(first["reason"] == "request body larger than 1024 bytes");
  CHECK(first["status"] == 413);
  CHECK(first["path"] == "/validate");
  CHECK(first["suppressed"] == 0);

  // Another kind has a bucket of its own, and server errors are errors.
  log.logger.request_error(RequestErrorKind::EvaluationError, "internal error: boom");
  lines = log.lines();
  CHECK(lines.back()["error"] == "evaluation_error");
  CHECK(lines.back()["level"] == "error");
  CHECK(lines.back()["class"] == "server");

  // Once the bucket has refilled, the next line of the flooded kind says how many were dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const size_t before = log.lines().size();
  log.logger.request_error(RequestErrorKind::PayloadTooLarge, "again");
  lines = log.lines();
  REQUIRE(lines.size() == before + 1);
  uint64_t written_before = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) written_before += lines[i]["error"] == "payload_too_large" ? 1 : 0;
  uint64_t suppressed_reported = 0;
  for (const auto& line : lines)
    if (line["error"] == "payload_too_large") suppressed_reported += line["suppressed"].get<uint64_t>();
  CHECK(written_before + suppressed_reported == 500);
  CHECK(lines.back()["suppressed"].get<uint64_t>() > 0);
  CHECK(lines.back()["reason"] == "again");
}

TEST_CASE("request error lines: a level turned off writes and counts nothing", "[logger][ratelimit]") {
  LogFile log;
  log.logger.set_level(LogLevel::Error);
  for (int i = 0; i < 50; ++i) log.logger.request_error(RequestErrorKind::BadRequest, "not JSON");
  CHECK(log.lines().empty());
  log.logger.set_level(LogLevel::Info);
  log.logger.request_error(RequestErrorKind::BadRequest, "not JSON");
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0]["suppressed"] == 0);
}

TEST_CASE("request error kinds: by HTTP status, each with its class", "[logger][ratelimit]") {
  struct Case {
    int status;
    std::string_view reason;
    std::string_view error_class;
  };
  for (const Case& c : {Case{400, "bad_request", "client"}, Case{404, "not_found", "client"},
                        Case{405, "method_not_allowed", "client"}, Case{413, "payload_too_large", "client"},
                        Case{415, "unsupported_media_type", "client"}, Case{431, "headers_too_large", "client"},
                        Case{418, "client_error", "client"}, Case{503, "server_busy", "server"},
                        Case{500, "evaluation_error", "server"}}) {
    INFO(c.status);
    const RequestErrorInfo& info = info_of(request_error_for_status(c.status));
    CHECK(info.reason == c.reason);
    CHECK(info.error_class == c.error_class);
  }
  CHECK(info_of(RequestErrorKind::UnreadableObject).error_class == "client");
  // Names are unique: they are label values and log fields.
  for (size_t i = 0; i < kRequestErrorCount; ++i)
    for (size_t j = i + 1; j < kRequestErrorCount; ++j) CHECK(kRequestErrors[i].reason != kRequestErrors[j].reason);
}
