// Clients that try to knock the webhook over, all on loopback and bounded in
// time and count: silent TCP connections that never start TLS, TLS connections that stall
// half-way through a request, corrupted bodies, many keep-alive connections, and the timeouts
// and connection cap that keep them from piling up. With several event loops (each with its own
// listener, connections and timeout sweep) as well as with one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "webhook/server/server_test_support.h"

using namespace server_test;

namespace {

struct FdCloser {
  std::vector<int> fds;
  ~FdCloser() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

// `count` TCP connections that never finish a TLS handshake, kept in `silent`; every eighth one
// sends a TLS record header announcing a ClientHello that never comes.
void open_silent_connections(int port, size_t count, FdCloser& silent) {
  for (size_t i = 0; i < count; ++i) {
    const int fd = raw_connect(port);
    REQUIRE(fd >= 0);
    silent.fds.push_back(fd);
    if (i % 8 == 0) REQUIRE(::send(fd, "\x16\x03\x01\x3f\xff", 5, MSG_NOSIGNAL) == 5);
  }
}

// `count` connections, each with a request sent but for its end (alternately most of the head
// missing, or the last bytes of the body).
std::vector<std::unique_ptr<TlsClient>> stall_requests(int port, size_t count) {
  std::vector<std::unique_ptr<TlsClient>> stalled;
  for (size_t i = 0; i < count; ++i) {
    auto client = std::make_unique<TlsClient>();
    REQUIRE(client->connect(port));
    const std::string request = http_request("POST", "/validate", admission_review("stalled"));
    REQUIRE(client->send(request.substr(0, i % 2 == 0 ? 20 : request.size() - 10)));
    stalled.push_back(std::move(client));
  }
  return stalled;
}

// A corrupt review body of one of four kinds: cut in half, 20 random bytes changed, not UTF-8,
// and a request that is deeply nested lists.
std::string corrupt_body(int mode, std::mt19937& random) {
  std::string body = admission_review("corrupt");
  if (mode == 0) body.resize(body.size() / 2);
  else if (mode == 1) for (int i = 0; i < 20; ++i) body[random() % body.size()] = static_cast<char>(random());
  else if (mode == 2) body = std::string(300, '\xff');
  else body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[[[[[[[[[[]]]]]]]]]]}";
  return body;
}

}  // namespace

TEST_CASE("hostile: 512 silent TCP connections, 64 stalled requests and corrupt bodies do not slow legitimate traffic",
          "[server][hostile]") {
  const size_t limit = raise_fd_limit(8192);
  size_t silent_count = 512;
  size_t stalled_count = 64;
  if (limit < 2048) {  // every connection costs two descriptors here (client and server side)
    silent_count = (limit - 200) / 4;
    stalled_count = std::min<size_t>(64, silent_count / 8);
    WARN("descriptor limit " << limit << ": using " << silent_count << " silent and " << stalled_count
                             << " stalled connections");
  }
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  InProcessServer s(options);
  REQUIRE(s.started);
  const int port = s.port();

  FdCloser silent;
  open_silent_connections(port, silent_count, silent);
  const std::vector<std::unique_ptr<TlsClient>> stalled = stall_requests(port, stalled_count);

  std::atomic<bool> stop{false};
  std::atomic<int> corrupt_sent{0};
  std::atomic<int> corrupt_wrong{0};
  std::thread corrupter([&] {
    std::mt19937 random(42);
    TlsClient client;
    while (!stop) {
      if (!client.connected() && !client.connect(port)) continue;
      const int mode = corrupt_sent % 4;
      auto reply = client.request("POST", "/validate", corrupt_body(mode, random));
      ++corrupt_sent;
      if (!reply.ok) client.close();
      else if (reply.status == 200 && mode != 1) ++corrupt_wrong;  // mode 1 may still be valid JSON
      if (corrupt_sent % 10 == 0) client.close();  // reconnect now and then
    }
  });

  std::vector<double> latencies_ms;
  int wrong = 0;
  {
    TlsClient legit;
    REQUIRE(legit.connect(port));
    for (int i = 0; i < 400; ++i) {
      if (i % 20 == 0) REQUIRE(legit.connect(port));  // the API server opens new connections too
      const std::string uid = "legit-" + std::to_string(i);
      const auto start = std::chrono::steady_clock::now();
      auto reply = legit.request("POST", i % 2 ? "/validate" : "/mutate", admission_review(uid));
      latencies_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (!reply.ok || reply.status != 200 || reply.body.find("\"uid\":\"" + uid + "\"") == std::string::npos) ++wrong;
    }
  }
  stop = true;
  corrupter.join();

  const double p50 = percentile(latencies_ms, 0.50);
  const double p99 = percentile(latencies_ms, 0.99);
  INFO("legitimate requests: p50 " << p50 << " ms, p99 " << p99 << " ms, max " << percentile(latencies_ms, 1.0)
                                   << " ms; corrupt bodies sent: " << corrupt_sent);
  CHECK(wrong == 0);
  CHECK(p99 < 100.0 * kSanitizerSlowdown);
  CHECK(corrupt_sent > 0);
  CHECK(corrupt_wrong == 0);
  CHECK(s.server.ready());
  const auto stats = s.server.stats();
  CHECK(stats.open_connections >= silent_count + stalled_count);
  CHECK(stats.worker_threads < 64);  // the hostile sockets hold no threads
}

TEST_CASE("hostile: clients that pipeline requests and never read the responses do not block others",
          "[server][hostile]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  options.worker_threads = 4;
  options.write_timeout = std::chrono::seconds(2);
  InProcessServer s(options);
  REQUIRE(s.started);
  const int port = s.port();

  // More than there are event loops and workers; each fills its socket buffers with responses
  // it never reads (small receive windows make that quick). Writes never block: each hog is
  // parked until its socket drains or its write timeout passes, and holds no thread meanwhile.
  std::vector<std::thread> hogs;
  std::atomic<int> hogs_connected{0};
  for (int i = 0; i < 8; ++i) {
    hogs.emplace_back([&] {
      TlsClient hog;
      if (!hog.connect(port, std::chrono::milliseconds(1500))) return;
      ++hogs_connected;
      std::string batch;
      for (int r = 0; r < 500; ++r) batch += http_request("GET", "/healthz");
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (std::chrono::steady_clock::now() < until && hog.send(batch)) {
      }
    });
  }
  REQUIRE(wait_until([&] { return hogs_connected == 8; }, std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the hogs fill their buffers

  std::vector<double> latencies_ms;
  int wrong = 0;
  TlsClient legit;
  REQUIRE(legit.connect(port));
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto reply = legit.request("POST", "/validate", admission_review("l" + std::to_string(i)));
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (reply.status != 200) ++wrong;
  }
  const auto stats = s.server.stats();
  for (auto& hog : hogs) hog.join();
  INFO("p50 " << percentile(latencies_ms, 0.5) << " ms, p99 " << percentile(latencies_ms, 0.99)
              << " ms; worker threads " << stats.worker_threads << ", peak " << stats.peak_worker_threads);
  CHECK(wrong == 0);
  CHECK(percentile(latencies_ms, 0.99) < 100.0 * kSanitizerSlowdown);
  CHECK(stats.peak_worker_threads == 4);  // no thread was needed for the hogs
}

TEST_CASE("hostile: 256 concurrent keep-alive connections are all served", "[server][hostile]") {
  raise_fd_limit(4096);
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  InProcessServer s(options);
  REQUIRE(s.started);
  std::vector<std::unique_ptr<TlsClient>> clients;
  for (int i = 0; i < 256; ++i) {
    auto client = std::make_unique<TlsClient>();
    REQUIRE(client->connect(s.port()));
    clients.push_back(std::move(client));
  }
  for (int round = 0; round < 2; ++round) {
    int ok = 0;
    for (size_t i = 0; i < clients.size(); ++i) {
      const std::string uid = "c" + std::to_string(i) + "-" + std::to_string(round);
      auto reply = clients[i]->request("POST", "/validate", admission_review(uid));
      if (reply.ok && reply.status == 200 && reply.body.find(uid) != std::string::npos) ++ok;
    }
    CHECK(ok == 256);
  }
  CHECK(s.server.stats().accepted == 256);
  CHECK(s.server.stats().open_connections == 256);
}

TEST_CASE("hostile: handshake, request and idle timeouts close sockets", "[server][hostile]") {
  HttpsServerOptions options = test_options();
  options.event_loops = GENERATE(size_t{1}, size_t{2});
  INFO(options.event_loops << " event loop(s)");
  options.read_timeout = std::chrono::milliseconds(300);
  options.idle_timeout = std::chrono::milliseconds(300);
  InProcessServer s(options);
  REQUIRE(s.started);

  FdCloser silent;
  silent.fds.push_back(raw_connect(s.port()));
  REQUIRE(silent.fds.back() >= 0);
  TlsClient half;
  REQUIRE(half.connect(s.port()));
  REQUIRE(half.send("POST /validate HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"));
  TlsClient idle;
  REQUIRE(idle.connect(s.port()));
  REQUIRE(idle.request("GET", "/healthz").status == 200);

  char byte;
  const auto start = std::chrono::steady_clock::now();
  CHECK(::recv(silent.fds.back(), &byte, 1, 0) <= 0);  // closed by the server (socket timeout is 5 s)
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK(half.closed_by_peer(std::chrono::seconds(3)));
  CHECK(idle.closed_by_peer(std::chrono::seconds(3)));
  CHECK(wait_until([&] { return s.server.stats().open_connections == 0; }, std::chrono::seconds(3)));
  CHECK(s.server.stats().timed_out >= 3);
}

TEST_CASE("hostile: at the connection cap, silent connections make room for real clients", "[server][hostile]") {
  HttpsServerOptions options = test_options();
  options.event_loops = GENERATE(size_t{1}, size_t{2});
  INFO(options.event_loops << " event loop(s)");
  options.max_connections = 32;
  InProcessServer s(options);
  REQUIRE(s.started);
  TlsClient kept;  // an established keep-alive connection is not evicted for silent ones
  REQUIRE(kept.connect(s.port()));
  REQUIRE(kept.request("GET", "/healthz").status == 200);
  FdCloser silent;
  for (int i = 0; i < 64; ++i) silent.fds.push_back(raw_connect(s.port()));
  CHECK(wait_until([&] { return s.server.stats().accepted >= 65; }, std::chrono::seconds(3)));
  const auto at_cap = s.server.stats();
  INFO("accepted " << at_cap.accepted << ", evicted " << at_cap.evicted << ", open " << at_cap.open_connections
                   << ", per loop " << at_cap.accepted_per_loop.front() << "/" << at_cap.accepted_per_loop.back());
  CHECK(s.server.stats().open_connections <= 32);
  TlsClient fresh;
  REQUIRE(fresh.connect(s.port()));
  CHECK(fresh.request("POST", "/validate", admission_review("fresh")).status == 200);
  CHECK(kept.request("GET", "/healthz").status == 200);
  CHECK(s.server.stats().evicted >= 33);
}
