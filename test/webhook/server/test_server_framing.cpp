// Request framing (webhook/server/request_framing.h) and the elastic worker pool (webhook/server/worker_pool.h),
// the two pieces under the connection engine.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "webhook/server/request_framing.h"
#include "webhook/server/worker_pool.h"

using gpu_admission::webhook::FramingLimits;
using gpu_admission::webhook::RequestFrame;
using gpu_admission::webhook::RequestFramer;
using gpu_admission::webhook::WorkerPool;
using State = RequestFrame::State;

namespace {

// Feeds `text` one byte at a time, as a slow client would; returns the first non-incomplete
// frame and the number of bytes it took.
std::pair<RequestFrame, size_t> feed_bytewise(RequestFramer& framer, const std::string& text) {
  for (size_t n = 1; n <= text.size(); ++n) {
    RequestFrame frame = framer.scan(std::string_view(text).substr(0, n));
    if (frame.state != State::Incomplete) return {frame, n};
  }
  return {framer.scan(text), text.size()};
}

}  // namespace

TEST_CASE("framing: requests without a body end at the blank line", "[server][framing]") {
  RequestFramer framer;
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  CHECK(framer.scan(request.substr(0, 20)).state == State::Incomplete);
  const RequestFrame frame = framer.scan(request + "GET /next");
  CHECK(frame.state == State::Complete);
  CHECK(frame.total_bytes == request.size());
}

TEST_CASE("framing: Content-Length bodies, fed all at once or byte by byte", "[server][framing]") {
  const std::string request = "POST /validate HTTP/1.1\r\ncontent-length: 5\r\nContent-Type: application/json\r\n\r\n{\"a\"}";
  RequestFramer whole;
  CHECK(whole.scan(request.substr(0, request.size() - 1)).state == State::Incomplete);
  const RequestFrame frame = whole.scan(request);
  CHECK(frame.state == State::Complete);
  CHECK(frame.total_bytes == request.size());
  RequestFramer slow;
  auto [bytewise, used] = feed_bytewise(slow, request);
  CHECK(bytewise.state == State::Complete);
  CHECK(used == request.size());
}

TEST_CASE("framing: chunked bodies with extensions and trailers", "[server][framing]") {
  const std::string request =
      "POST /validate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;name=value\r\nabcd\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
  RequestFramer framer;
  auto [frame, used] = feed_bytewise(framer, request);
  CHECK(frame.state == State::Complete);
  CHECK(frame.total_bytes == request.size());
  CHECK(used == request.size());
}

TEST_CASE("framing: bodies over the limit are refused once the head is in", "[server][framing]") {
  FramingLimits limits;
  limits.max_body_bytes = 10;
  SECTION("by Content-Length") {
    RequestFramer framer(limits);
    const RequestFrame frame = framer.scan("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n");
    CHECK(frame.state == State::TooLarge);
    CHECK(frame.head_complete);
  }
  SECTION("by chunks adding up") {
    RequestFramer framer(limits);
    CHECK(framer.scan("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n").state ==
          State::TooLarge);
  }
  SECTION("an endless head") {
    limits.max_head_bytes = 100;
    RequestFramer framer(limits);
    const RequestFrame frame = framer.scan("GET / HTTP/1.1\r\nX: " + std::string(200, 'a'));
    CHECK(frame.state == State::Invalid);
    CHECK(frame.error_status == 431);
  }
}

TEST_CASE("framing: ambiguous or broken framing is invalid (no request smuggling)", "[server][framing]") {
  for (const std::string head : {
           "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
           "POST / HTTP/1.1\r\nX: a\r\n continued\r\n\r\n",
           "POST / HTTP/1.1\r\nno colon here\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
       }) {
    INFO(head);
    RequestFramer framer;
    const RequestFrame frame = framer.scan(head);
    CHECK(frame.state == State::Invalid);
    CHECK(frame.error_status == 400);
  }
  RequestFramer same_twice;
  CHECK(same_twice.scan("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab").state == State::Complete);
}

TEST_CASE("framing: Expect: 100-continue is noticed, reset() starts the next request", "[server][framing]") {
  RequestFramer framer;
  RequestFrame frame = framer.scan("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
  CHECK(frame.state == State::Incomplete);
  CHECK(frame.head_complete);
  CHECK(frame.expects_continue);
  framer.reset();
  frame = framer.scan("GET / HTTP/1.1\r\n\r\n");
  CHECK(frame.state == State::Complete);
  CHECK_FALSE(frame.expects_continue);
}

TEST_CASE("worker pool: grows past its core threads when they are stuck on long tasks, then shrinks", "[server][pool]") {
  WorkerPool pool(2, 16, std::chrono::milliseconds(200), std::chrono::milliseconds(10));
  std::atomic<int> running{0};
  std::atomic<bool> release{false};
  for (int i = 0; i < 10; ++i)
    REQUIRE(pool.submit([&] {
      ++running;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!release && std::chrono::steady_clock::now() < deadline) {
        // A long task uses CPU (like decoding a huge review); a waiting one would not count.
      }
    }));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (running < 10 && std::chrono::steady_clock::now() < deadline) {
    pool.maintain();  // the connection engine's event loop does this on every turn
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(running == 10);  // ten long tasks run at once although only two threads are core
  CHECK(pool.stats().threads >= 10);
  release = true;
  const auto shrink_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pool.stats().threads > 2 && std::chrono::steady_clock::now() < shrink_deadline) {
    pool.maintain();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(pool.stats().threads == 2);
  CHECK(pool.stats().peak_threads >= 10);
}

TEST_CASE("worker pool: a burst of short tasks does not start threads", "[server][pool]") {
  WorkerPool pool(2, 64, std::chrono::seconds(30), std::chrono::milliseconds(50));
  std::atomic<int> done{0};
  for (int i = 0; i < 5000; ++i) pool.submit([&] { ++done; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (done < 5000 && std::chrono::steady_clock::now() < deadline) {
    pool.maintain();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(done == 5000);
  CHECK(pool.stats().peak_threads == 2);
}

TEST_CASE("worker pool: exceptions stay in the pool, shutdown runs what was queued", "[server][pool]") {
  std::atomic<int> done{0};
  {
    WorkerPool pool(1, 1);
    pool.submit([] { throw std::runtime_error("boom"); });
    for (int i = 0; i < 100; ++i) pool.submit([&] { ++done; });
    pool.shutdown();
    CHECK(pool.stats().task_exceptions == 1);
    CHECK_FALSE(pool.submit([] {}));
  }
  CHECK(done == 100);
}

TEST_CASE("framing: notes the request line, Content-Type and Connection for the direct path", "[server][framing]") {
  using Connection = RequestFrame::ConnectionHeader;
  RequestFramer framer;
  const std::string request =
      "POST /validate?timeout=10s HTTP/1.1\r\nHost: x\r\ncontent-type:  application/json \r\n"
      "Connection: close\r\nContent-Length: 2\r\n\r\n{}";
  auto frame = framer.scan(request);
  REQUIRE(frame.state == State::Complete);
  CHECK(frame.method.in(request) == "POST");
  CHECK(frame.target.in(request) == "/validate?timeout=10s");
  CHECK(frame.http_1_1);
  CHECK_FALSE(frame.chunked);
  CHECK(frame.content_type.in(request) == "application/json");
  CHECK(frame.content_type_headers == 1);
  CHECK(frame.connection == Connection::Close);

  framer.reset();
  const std::string other =
      "POST /mutate HTTP/1.0\r\nContent-Type: a\r\nContent-Type: b\r\nConnection: keep-alive\r\n"
      "Connection: upgrade\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
  frame = framer.scan(other);
  REQUIRE(frame.state == State::Complete);
  CHECK_FALSE(frame.http_1_1);
  CHECK(frame.chunked);
  CHECK(frame.content_type_headers == 2);
  CHECK(frame.connection == Connection::Other);  // two Connection headers: left to httplib

  framer.reset();
  frame = framer.scan("GET / HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n");
  CHECK(frame.connection == Connection::KeepAlive);
  CHECK(frame.content_type_headers == 0);
}
