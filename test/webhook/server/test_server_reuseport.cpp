// One listening socket per event loop: the loops bind the port together with
// SO_REUSEPORT and each accepts its share of the connections; a second server on the same port
// is still refused; a listening socket handed in without SO_REUSEPORT is shared by the loops
// (EPOLLEXCLUSIVE), one with SO_REUSEPORT gets siblings; IPv6 works the same.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "webhook/server/server_test_support.h"

using namespace server_test;

namespace {

// A listening socket on 127.0.0.1, port 0, as a service manager would hand it over.
int handed_listener(bool reuse_port, int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// `clients` keep-alive TLS connections, each answering `rounds` reviews, from `threads` threads.
int served_concurrently(int port, int clients, int rounds, int threads) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<std::unique_ptr<TlsClient>> mine;
      for (int i = t; i < clients; i += threads) {
        mine.push_back(std::make_unique<TlsClient>());
        if (!mine.back()->connect(port)) ++wrong;
      }
      for (int round = 0; round < rounds; ++round) {
        for (size_t i = 0; i < mine.size(); ++i) {
          const std::string uid = "t" + std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(round);
          auto reply = mine[i]->request("POST", "/validate", admission_review(uid));
          if (!reply.ok || reply.status != 200 || reply.body.find("\"uid\":\"" + uid + "\"") == std::string::npos) ++wrong;
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return wrong;
}

}  // namespace

TEST_CASE("server reuseport: with 4 event loops, 64 concurrent keep-alive clients are served and every loop accepts",
          "[server][reuseport]") {
  raise_fd_limit(1024);
  HttpsServerOptions options = test_options();
  options.event_loops = 4;
  InProcessServer s(options);
  REQUIRE(s.started);
  CHECK(served_concurrently(s.port(), 64, 3, 16) == 0);
  const auto stats = s.server.stats();
  CHECK(stats.event_loops == 4);
  CHECK(stats.listeners == 4);
  CHECK(stats.accepted == 64);
  CHECK(stats.requests == 64 * 3);
  REQUIRE(stats.accepted_per_loop.size() == 4);
  unsigned long long sum = 0;
  for (const auto accepted : stats.accepted_per_loop) {
    CHECK(accepted > 0);  // the kernel spread the connections over the loops' sockets
    sum += accepted;
  }
  CHECK(sum == 64);
}

TEST_CASE("server reuseport: a second server on a port the loops share is refused", "[server][reuseport]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  InProcessServer first(options);
  REQUIRE(first.started);
  options.listen = "127.0.0.1:" + std::to_string(first.port());
  InProcessServer second(options);
  CHECK_FALSE(second.started);
  CHECK(second.start_error.find("cannot listen") != std::string::npos);
  options.event_loops = 1;  // a single socket without SO_REUSEPORT cannot join either
  InProcessServer third(options);
  CHECK_FALSE(third.started);
}

TEST_CASE("server reuseport: a handed listening socket without SO_REUSEPORT is shared by the loops", "[server][reuseport]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  int port = 0;
  options.listen_fd = handed_listener(false, port);
  REQUIRE(options.listen_fd >= 0);
  InProcessServer s(options);
  REQUIRE(s.started);
  CHECK(s.port() == port);
  CHECK(served_concurrently(port, 16, 2, 4) == 0);
  const auto stats = s.server.stats();
  CHECK(stats.listeners == 1);
  CHECK(stats.event_loops == 2);
  CHECK(stats.accepted == 16);

  s.server.begin_shutdown();  // every loop lets go of the shared socket: it closes
  const auto refused = [&] {
    const int fd = raw_connect(port);
    if (fd >= 0) ::close(fd);
    return fd < 0;
  };
  CHECK(wait_until(refused, std::chrono::seconds(2)));
}

TEST_CASE("server reuseport: a handed listening socket with SO_REUSEPORT gets a sibling per loop", "[server][reuseport]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 3;
  int port = 0;
  options.listen_fd = handed_listener(true, port);
  REQUIRE(options.listen_fd >= 0);
  InProcessServer s(options);
  REQUIRE(s.started);
  CHECK(s.port() == port);
  CHECK(served_concurrently(port, 24, 2, 4) == 0);
  CHECK(s.server.stats().listeners == 3);
}

TEST_CASE("server reuseport: a handed descriptor that is not a listening socket is a start-up error", "[server][reuseport]") {
  HttpsServerOptions options = test_options();
  options.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  InProcessServer s(options);
  CHECK_FALSE(s.started);
  CHECK(s.start_error.find("not a listening TCP socket") != std::string::npos);
}

TEST_CASE("server reuseport: the loops share an IPv6 port too", "[server][reuseport]") {
  const int probe = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  const bool has_ipv6 = probe >= 0 && ::bind(probe, reinterpret_cast<sockaddr*>(&loopback), sizeof loopback) == 0;
  if (probe >= 0) ::close(probe);
  if (!has_ipv6) {
    WARN("no IPv6 loopback here; skipped");
    return;
  }
  HttpsServerOptions options = test_options();
  options.listen = "[::1]:0";
  options.event_loops = 2;
  InProcessServer s(options);
  REQUIRE(s.started);
  CHECK(s.server.stats().listeners == 2);
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  loopback.sin6_port = htons(static_cast<uint16_t>(s.port()));
  CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&loopback), sizeof loopback) == 0);
  ::close(fd);
  CHECK(wait_until([&] { return s.server.stats().accepted == 1; }, std::chrono::seconds(2)));
}
