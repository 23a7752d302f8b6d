// Every request the server answers with an HTTP error is logged with its reason and where it came
// from, and counted by class and reason; a flood of junk is logged only at the rate limit.
#include <catch2/catch.hpp>

#include <stdio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "webhook/server/server_test_support.h"

using namespace server_test;
using gpu_admission::Json;
using gpu_admission::webhook::LogLevel;

namespace {

// A log in a temporary file: the JSON lines written so far.
struct LogFile {
  FILE* file = tmpfile();
  ~LogFile() { fclose(file); }
  int fd() const { return fileno(file); }
  std::vector<Json> lines() const {
    const off_t end = lseek(fd(), 0, SEEK_END);
    std::string text(static_cast<size_t>(end), '\0');
    REQUIRE(pread(fd(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    std::vector<Json> out;
    for (size_t start = 0; start < text.size();) {
      const size_t newline = text.find('\n', start);
      out.push_back(Json::parse(text.substr(start, newline - start)));
      start = newline == std::string::npos ? text.size() : newline + 1;
    }
    return out;
  }
  // The request error lines of kind `error`.
  std::vector<Json> errors(const std::string& error) const {
    std::vector<Json> out;
    for (const auto& line : lines())
      if (line.value("error", "") == error) out.push_back(line);
    return out;
  }
};

double metric(const gpu_admission::webhook::Metrics& metrics, const std::string& series) {
  const std::string text = "\n" + metrics.serialize();
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

std::string errors_series(const std::string& error_class, const std::string& reason) {
  return "gpu_admission_request_errors_total{class=\"" + error_class + "\",reason=\"" + reason + "\"}";
}

}  // namespace

TEST_CASE("server error logs: each HTTP error is logged with its reason, path and client", "[server][logs]") {
  LogFile log;
  HttpsServerOptions options = test_options();
  options.max_body_bytes = 4096;
  InProcessServer s(options, true, true, log.fd(), LogLevel::Info);
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));

  CHECK(client.request("POST", "/validate", admission_review("a"), "text/plain").status == 415);
  CHECK(client.request("GET", "/validate").status == 405);
  CHECK(client.request("GET", "/nowhere").status == 404);
  CHECK(client.request("POST", "/validate", "this is not json").status == 400);
  CHECK(client.request("POST", "/mutate", std::string(5000, ' ')).status == 413);

  const std::vector<Json> media = log.errors("unsupported_media_type");
  REQUIRE(media.size() == 1);
  CHECK(media[0]["level"] == "warn");
  CHECK(media[0]["class"] == "client");
  CHECK(media[0]["status"] == 415);
  CHECK(media[0]["path"] == "/validate");
  CHECK(media[0]["method"] == "POST");
  CHECK(media[0]["reason"] == "Content-Type must be application/json");
  CHECK(media[0]["remote"].get<std::string>().rfind("127.0.0.1:", 0) == 0);
  REQUIRE(log.errors("method_not_allowed").size() == 1);
  REQUIRE(log.errors("not_found").size() == 1);
  CHECK(log.errors("not_found")[0]["path"] == "/nowhere");
  const std::vector<Json> bad = log.errors("bad_request");
  REQUIRE(bad.size() == 1);
  CHECK(bad[0]["endpoint"] == "validate");  // from the admission service: not an AdmissionReview
  const std::vector<Json> large = log.errors("payload_too_large");
  REQUIRE(large.size() == 1);
  CHECK(large[0]["reason"] == "request body larger than 4096 bytes");
  CHECK(large[0]["path"] == "/mutate");

  // Framing the server cannot use: answered, closed, logged with the client's address.
  TlsClient garbage;
  REQUIRE(garbage.connect(s.port()));
  REQUIRE(garbage.send("\x01\x02\x03 nonsense\r\n\r\n"));
  CHECK(garbage.read_response().status == 400);
  CHECK(log.errors("bad_request").size() == 2);
  CHECK(log.errors("bad_request")[1]["remote"].get<std::string>().rfind("127.0.0.1:", 0) == 0);

  CHECK(metric(s.metrics, errors_series("client", "unsupported_media_type")) == 1);
  CHECK(metric(s.metrics, errors_series("client", "method_not_allowed")) == 1);
  CHECK(metric(s.metrics, errors_series("client", "not_found")) == 1);
  CHECK(metric(s.metrics, errors_series("client", "bad_request")) == 2);
  CHECK(metric(s.metrics, errors_series("client", "payload_too_large")) == 1);
  CHECK(metric(s.metrics, errors_series("server", "evaluation_error")) == 0);
}

TEST_CASE("server error logs: a flood of junk is counted in full, logged at the rate limit", "[server][logs]") {
  LogFile log;
  InProcessServer s(test_options(), true, true, log.fd(), LogLevel::Info);
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  constexpr int kFlood = 300;
  for (int i = 0; i < kFlood; ++i) REQUIRE(client.request("GET", "/scan/" + std::to_string(i)).status == 404);
  const std::vector<Json> lines = log.errors("not_found");
  CHECK(lines.size() >= static_cast<size_t>(gpu_admission::webhook::Logger::kErrorBurst));
  CHECK(lines.size() < static_cast<size_t>(kFlood) / 2);
  uint64_t reported = lines.size();
  for (const auto& line : lines) reported += line["suppressed"].get<uint64_t>();
  CHECK(reported <= static_cast<uint64_t>(kFlood));  // the lines still held back are told by the next one
  CHECK(metric(s.metrics, errors_series("client", "not_found")) == kFlood);
  // Other kinds are not held back by the flood.
  CHECK(client.request("POST", "/validate", admission_review("x"), "text/plain").status == 415);
  CHECK(log.errors("unsupported_media_type").size() == 1);
}
