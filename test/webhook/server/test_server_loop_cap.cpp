// The connection cap over several event loops: connections belong to the loop whose
// listener the kernel gave them to, and the cap counts them all. At the cap, a newcomer on a
// loop with nothing to drop is passed to the loop with the most connections, which drops a
// handshaking one for it: where the kernel put a real client does not decide whether it is
// served. Steered with source ports (a four-tuple always hashes to the same SO_REUSEPORT
// listener).
#include <catch2/catch.hpp>

#include <vector>

#include "webhook/server/server_test_support.h"

using namespace server_test;

namespace {

int local_port_of(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

// Closes with a reset, so that the source port is free again at once (no TIME_WAIT).
void reset(int fd) {
  const linger abort{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

}  // namespace

TEST_CASE("server loop cap: at the cap, a loop with nothing to drop passes the newcomer to one that has",
          "[server][hostile][cap]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 2;
  options.max_connections = 8;
  InProcessServer s(options);
  REQUIRE(s.started);
  const int port = s.port();

  // Fill the cap with silent connections, all on loop 1; learn a source port that lands on loop 0.
  // Source ports are picked below the kernel's ephemeral range, so that no connect() reuses them.
  std::vector<int> silent;
  int loop0_port = 0;
  int next_port = 20000 + static_cast<int>(::getpid() % 2000) * 5;
  for (int attempt = 0; attempt < 200 && (silent.size() < 8 || loop0_port == 0); ++attempt) {
    const auto before = s.server.stats();
    const int fd = raw_connect(port, next_port++);
    if (fd < 0) continue;  // that source port is taken here
    INFO("source port " << next_port - 1);
    REQUIRE(wait_until([&] { return s.server.stats().accepted == before.accepted + 1; }, std::chrono::seconds(3)));
    const auto after = s.server.stats();
    if (after.accepted_per_loop[1] > before.accepted_per_loop[1] && silent.size() < 8) {
      silent.push_back(fd);
      continue;
    }
    if (after.accepted_per_loop[0] > before.accepted_per_loop[0]) loop0_port = local_port_of(fd);
    reset(fd);
    REQUIRE(wait_until([&] { return s.server.stats().open_connections == silent.size(); }, std::chrono::seconds(3)));
  }
  REQUIRE(silent.size() == 8);
  REQUIRE(loop0_port != 0);
  const auto full = s.server.stats();
  REQUIRE(full.open_connections == 8);

  // A real client whose connection the kernel gives to loop 0, which holds nothing to drop.
  TlsClient fresh;
  REQUIRE(fresh.connect(port, std::chrono::milliseconds(5000), loop0_port));
  CHECK(fresh.request("POST", "/validate", admission_review("fresh")).status == 200);
  const auto after = s.server.stats();
  CHECK(after.evicted == full.evicted + 1);  // a silent connection on loop 1 made room
  CHECK(after.open_connections == 8);
  CHECK(after.accepted_per_loop[1] == full.accepted_per_loop[1] + 1);  // loop 1 took the newcomer
  CHECK(after.accepted_per_loop[0] == full.accepted_per_loop[0]);
  for (int fd : silent) ::close(fd);
}
