// The event loops' ready list: connections are edge-triggered, so a connection that
// stopped after one complete request while more bytes wait (in the socket or in OpenSSL's
// buffer) gets no new event and must be served from the ready list, round robin: requests left
// in the socket are answered without the client sending anything more, and a client pipelining
// without pause gets one request per turn, so it does not starve other connections or new ones.
#include <catch2/catch.hpp>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "webhook/server/server_test_support.h"

using namespace server_test;

namespace {

// A GET /healthz of exactly `size` bytes (padded with headers of at most 6000 bytes, under
// httplib's line limit), for reads that end exactly where the request does.
std::string padded_get(size_t size) {
  std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  const std::string name = "X-Pad: ";
  while (request.size() + 2 < size) {
    const size_t line = std::min<size_t>(6000, size - 2 - request.size());
    request += name + std::string(line - name.size() - 2, 'p') + "\r\n";
  }
  return request + "\r\n";
}

size_t count_of(const std::string& text, std::string_view what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

// A TLS client that pipelines GET /healthz without pause until `stop`, reading the responses
// as they come (non-blocking, one thread, so that it never stops the server from writing).
// Returns how many responses it got.
size_t pipeline_until(int port, const std::atomic<bool>& stop, std::atomic<size_t>& responses) {
  TlsClient client;
  if (!client.connect(port)) return 0;
  SSL* ssl = client.ssl();
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  ::fcntl(client.fd(), F_SETFL, ::fcntl(client.fd(), F_GETFL) | O_NONBLOCK);
  std::string batch;
  for (int i = 0; i < 64; ++i) batch += http_request("GET", "/healthz");
  size_t offset = 0;
  std::string received;
  char chunk[16384];
  while (!stop) {
    pollfd waiting{client.fd(), POLLIN | POLLOUT, 0};
    ::poll(&waiting, 1, 10);
    int n;
    while ((n = SSL_read(ssl, chunk, sizeof chunk)) > 0) received.append(chunk, static_cast<size_t>(n));
    if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ) break;
    const size_t complete = received.rfind("ok\n");
    if (complete != std::string::npos) {
      responses += count_of(received.substr(0, complete + 3), "HTTP/1.1 200");
      received.erase(0, complete + 3);
    }
    while ((n = SSL_write(ssl, batch.data() + offset, static_cast<int>(batch.size() - offset))) > 0)
      offset = (offset + static_cast<size_t>(n)) % batch.size();
    if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_WRITE) break;
  }
  ERR_clear_error();
  return responses;
}

}  // namespace

TEST_CASE("server ready list: requests left in the socket after a complete one are answered without new bytes",
          "[server][ready]") {
  InProcessServer s;
  REQUIRE(s.started);
  // Exactly two 16 KiB reads' worth, then three more requests in the same write: after the
  // first request the socket still holds the others, and no edge will announce them.
  REQUIRE(padded_get(32 * 1024).size() == 32 * 1024);
  const std::string pipelined = padded_get(32 * 1024) + http_request("GET", "/healthz") +
                                http_request("GET", "/metrics") + http_request("GET", "/healthz");
  SECTION("plain HTTP (the metrics port)") {
    RawClient client;
    REQUIRE(client.connect(s.server.metrics_port()));
    REQUIRE(client.send(pipelined));
    CHECK(client.read_response().status == 200);
    CHECK(client.read_response().body == "ok\n");
    CHECK(client.read_response().body.find("gpu_admission") != std::string::npos);
    CHECK(client.read_response().body == "ok\n");
  }
  SECTION("TLS (records read ahead into OpenSSL's buffer)") {
    TlsClient client;
    REQUIRE(client.connect(s.port()));
    REQUIRE(client.send(pipelined));
    CHECK(client.read_response().status == 200);
    CHECK(client.read_response().body == "ok\n");
    CHECK(client.read_response().status == 404);
    CHECK(client.read_response().body == "ok\n");
  }
}

TEST_CASE("server ready list: a client pipelining without pause does not starve other connections", "[server][ready]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 1;  // the hog and the others on one loop
  InProcessServer s(options);
  REQUIRE(s.started);
  const int port = s.port();
  TlsClient other;
  REQUIRE(other.connect(port));

  std::atomic<bool> stop{false};
  std::atomic<size_t> hog_responses{0};
  std::thread hog([&] { pipeline_until(port, stop, hog_responses); });
  REQUIRE(wait_until([&] { return hog_responses > 100; }, std::chrono::seconds(5)));

  // While the hog keeps its connection full, the other client's requests and a new connection
  // are served in bounded time (a starved loop would hold them until the hog stops).
  std::vector<double> latencies_ms;
  int wrong = 0;
  const auto window_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (std::chrono::steady_clock::now() < window_end) {
    const std::string uid = "other-" + std::to_string(latencies_ms.size());
    const auto start = std::chrono::steady_clock::now();
    auto reply = other.request("POST", "/validate", admission_review(uid));
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!reply.ok || reply.body.find("\"uid\":\"" + uid + "\"") == std::string::npos) ++wrong;
  }
  const auto start = std::chrono::steady_clock::now();
  TlsClient newcomer;
  const bool newcomer_served = newcomer.connect(port) && newcomer.request("GET", "/healthz").status == 200;
  const double newcomer_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const size_t hog_during = hog_responses;
  stop = true;
  hog.join();

  std::sort(latencies_ms.begin(), latencies_ms.end());
  INFO("other client: " << latencies_ms.size() << " requests, median " << latencies_ms[latencies_ms.size() / 2]
                        << " ms, max " << latencies_ms.back() << " ms; newcomer " << newcomer_ms
                        << " ms; hog responses " << hog_during);
  CHECK(wrong == 0);
  CHECK(latencies_ms.size() >= 20);
  CHECK(latencies_ms.back() < 250.0 * kSanitizerSlowdown);
  CHECK(newcomer_served);
  CHECK(newcomer_ms < 250.0 * kSanitizerSlowdown);
  CHECK(hog_during > 1000 / static_cast<size_t>(kSanitizerSlowdown));  // it really kept pipelining
}
