// Large requests and the hand-back: a request over inline_request_bytes is answered
// by a worker while its event loop ignores the connection; the worker hands it back to the loop
// that owns it, which resumes it as if ready, because the edges that came meanwhile were not
// looked at. Requests the client sent while the worker held the connection are answered.
// Engine-level (plain HTTP, a direct handler that a test can hold) and through the TLS server.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "webhook/server/connection_engine.h"
#include "webhook/server/server_test_support.h"

using namespace server_test;
using namespace gpu_admission::webhook;

namespace {

// A connection engine on 127.0.0.1 whose direct handler answers "PATH:BODY-SIZE" and holds
// requests to /slow until release().
struct HeldEngine {
  explicit HeldEngine(size_t event_loops) {
    detail::EngineConfig config;
    config.name = "test";
    config.event_loops = event_loops;
    config.inline_request_bytes = 1024;
    config.core_threads = 1;
    config.max_threads = 1;
    config.direct_handler = [this](const detail::DirectRequest& request, std::string& response) {
      if (request.path == "/slow") {
        std::unique_lock lock(mutex);
        ++held;
        changed.notify_all();
        changed.wait_for(lock, std::chrono::seconds(10), [&] { return released; });
      }
      detail::write_http_response(200, "text/plain", std::string(request.path) + ":" + std::to_string(request.body.size()),
                                  request.close, std::chrono::seconds(60), response);
      return true;
    };
    std::vector<int> listeners = detail::open_listeners(ListenAddress{"127.0.0.1", 0}, event_loops, port, error);
    engine = std::make_unique<detail::ConnectionEngine>(std::move(config), router, nullptr, nullptr);
    started = !listeners.empty() && engine->start(std::move(listeners), error);
  }
  ~HeldEngine() {
    release();
    engine->stop();
  }
  bool wait_held(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(5), [&] { return held >= count; });
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    changed.notify_all();
  }

  detail::RequestRouter router;
  std::unique_ptr<detail::ConnectionEngine> engine;
  int port = 0;
  bool started = false;
  std::string error;
  std::mutex mutex;
  std::condition_variable changed;
  int held = 0;
  bool released = false;
};

std::string post(const std::string& path, size_t body_size) {
  return http_request("POST", path, std::string(body_size, 'b'), "text/plain");
}

}  // namespace

TEST_CASE("server hand-back: requests sent while a worker held the connection are answered after it", "[server][handback]") {
  const size_t loops = GENERATE(size_t{1}, size_t{2});
  INFO(loops << " event loop(s)");
  HeldEngine held(loops);
  REQUIRE(held.started);
  RawClient client;
  REQUIRE(client.connect(held.port));

  REQUIRE(client.send(post("/slow", 4000)));  // over inline_request_bytes: to the worker
  REQUIRE(held.wait_held(1));
  // The loop read the whole large request before handing it over; these arrive while the worker
  // holds the connection, each one an edge the loop does not look at.
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client.send(post("/next", 10 + i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  held.release();

  CHECK(client.read_response().body == "/slow:4000");
  for (int i = 0; i < 3; ++i) CHECK(client.read_response().body == "/next:" + std::to_string(10 + i));
  // The connection goes on as usual afterwards, large requests included.
  REQUIRE(client.send(post("/after", 5)));
  CHECK(client.read_response().body == "/after:5");
  REQUIRE(client.send(post("/slow", 3000) + post("/tail", 7)));
  CHECK(client.read_response().body == "/slow:3000");
  CHECK(client.read_response().body == "/tail:7");
  const auto stats = held.engine->stats();
  CHECK(stats.pooled_requests == 2);
  CHECK(stats.requests == 7);
  CHECK(stats.open_connections == 1);
}

TEST_CASE("server hand-back: while a worker holds a connection, the loop serves its other connections",
          "[server][handback]") {
  HeldEngine held(1);
  REQUIRE(held.started);
  RawClient slow;
  REQUIRE(slow.connect(held.port));
  REQUIRE(slow.send(post("/slow", 2000)));
  REQUIRE(held.wait_held(1));
  RawClient quick;
  REQUIRE(quick.connect(held.port));
  for (int i = 0; i < 20; ++i) {
    REQUIRE(quick.send(post("/quick", static_cast<size_t>(i))));
    CHECK(quick.read_response().body == "/quick:" + std::to_string(i));
  }
  held.release();
  CHECK(slow.read_response().body == "/slow:2000");
}

TEST_CASE("server hand-back: over TLS, a large review and the requests pipelined behind it are all answered",
          "[server][handback]") {
  HttpsServerOptions options = test_options();
  options.inline_request_bytes = 4096;
  options.event_loops = 2;
  InProcessServer s(options);
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  std::string large = admission_review("large");
  large.insert(large.size() - 1, ",\"padding\":\"" + std::string(20000, 'x') + "\"");
  for (int round = 0; round < 3; ++round) {
    const std::string r = std::to_string(round);
    std::string burst = http_request("POST", "/validate", large);
    for (int i = 0; i < 3; ++i) burst += http_request("POST", "/mutate", admission_review("small-" + r + "-" + std::to_string(i)));
    REQUIRE(client.send(burst));
    auto first = client.read_response();
    CHECK(first.body.find("\"uid\":\"large\"") != std::string::npos);
    for (int i = 0; i < 3; ++i)
      CHECK(client.read_response().body.find("\"uid\":\"small-" + r + "-" + std::to_string(i) + "\"") != std::string::npos);
  }
  CHECK(s.server.stats().pooled_requests == 3);
  CHECK(s.server.stats().requests == 12);
}
