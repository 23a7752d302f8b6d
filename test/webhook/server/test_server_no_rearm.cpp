// No re-arming on the hot path: a connection is registered in epoll once, edge-
// triggered, and never modified while it lives. Stats::epoll_rearms counts the engine's
// EPOLL_CTL_MODs; independently, epoll_ctl is wrapped here (this test binary's definition wins
// over libc's) so that every call the process makes is counted: keep-alive traffic on open
// connections, pipelined bursts and large pooled requests included, makes none at all.
#include <catch2/catch.hpp>

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "webhook/server/server_test_support.h"

using namespace server_test;

namespace {
std::atomic<long> epoll_ctl_calls{0};
std::atomic<long> epoll_ctl_mods{0};
}  // namespace

extern "C" int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept {
  epoll_ctl_calls.fetch_add(1);
  if (op == EPOLL_CTL_MOD) epoll_ctl_mods.fetch_add(1);
  return static_cast<int>(::syscall(SYS_epoll_ctl, epfd, op, fd, event));
}

TEST_CASE("server no re-arm: 1000 keep-alive requests make no epoll_ctl call", "[server][rearm]") {
  HttpsServerOptions options = test_options();
  options.inline_request_bytes = 4096;
  InProcessServer s(options);
  REQUIRE(s.started);
  std::vector<std::unique_ptr<TlsClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TlsClient>());
    REQUIRE(clients.back()->connect(s.port()));
    REQUIRE(clients.back()->request("GET", "/healthz").status == 200);  // connections settled
  }
  const long calls_before = epoll_ctl_calls;
  const auto requests_before = s.server.stats().requests;

  std::string large = admission_review("large");
  large.insert(large.size() - 1, ",\"padding\":\"" + std::string(8000, 'x') + "\"");
  int wrong = 0;
  int sent = 0;
  while (sent < 1000) {
    TlsClient& client = *clients[static_cast<size_t>(sent) % clients.size()];
    if (sent % 50 == 0) {  // now and then a pipelined burst, a large (pooled) review at its head
      std::string burst = http_request("POST", "/validate", large);
      for (int i = 0; i < 9; ++i) burst += http_request("POST", "/mutate", admission_review("p" + std::to_string(i)));
      REQUIRE(client.send(burst));
      for (int i = 0; i < 10; ++i) wrong += client.read_response().status == 200 ? 0 : 1;
      sent += 10;
      continue;
    }
    const std::string uid = "k" + std::to_string(sent);
    auto reply = client.request("POST", sent % 2 ? "/validate" : "/mutate", admission_review(uid));
    if (!reply.ok || reply.body.find("\"uid\":\"" + uid + "\"") == std::string::npos) ++wrong;
    ++sent;
  }
  const auto stats = s.server.stats();
  CHECK(wrong == 0);
  CHECK(stats.requests - requests_before == 1000);
  CHECK(stats.pooled_requests == 20);
  CHECK(stats.epoll_rearms == 0);
  CHECK(epoll_ctl_mods == 0);
  CHECK(epoll_ctl_calls - calls_before == 0);
}
