// OpenSSL's record buffers: a busy keep-alive connection keeps them between requests
// (no SSL_MODE_RELEASE_BUFFERS, which reallocated both on every request), and a connection that
// has idled for tls_buffers_idle gives them back, then goes on answering as before. A request
// half received is never disturbed.
#include <catch2/catch.hpp>

#include <thread>

#include "webhook/server/server_test_support.h"
#include "webhook/server/tls_identity.h"

using namespace server_test;

namespace {

bool answers(TlsClient& client, const std::string& uid) {
  const auto reply = client.request("POST", "/validate", admission_review(uid));
  return reply.status == 200 && reply.body.find("\"uid\":\"" + uid + "\"") != std::string::npos;
}

}  // namespace

TEST_CASE("server tls buffers: an idle connection gives them back and keeps answering", "[server][tls-buffers]") {
  HttpsServerOptions options = test_options();
  options.tls_buffers_idle = std::chrono::milliseconds(100);
  InProcessServer s(options);
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  REQUIRE(answers(client, "first"));

  REQUIRE(wait_until([&] { return s.server.stats().tls_buffers_released >= 1; }, 5s));
  const auto released = s.server.stats().tls_buffers_released;
  CHECK(answers(client, "after-release"));  // the same connection, buffers allocated again
  CHECK(s.server.stats().open_connections == 1);

  // Served again, so it holds buffers again: they go back once more after the next idle spell.
  REQUIRE(wait_until([&] { return s.server.stats().tls_buffers_released > released; }, 5s));
  CHECK(answers(client, "third"));
}

TEST_CASE("server tls buffers: a request half received keeps its connection's buffers", "[server][tls-buffers]") {
  HttpsServerOptions options = test_options();
  options.tls_buffers_idle = std::chrono::milliseconds(50);
  options.read_timeout = std::chrono::milliseconds(5'000);
  InProcessServer s(options);
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  REQUIRE(answers(client, "warm"));
  REQUIRE(wait_until([&] { return s.server.stats().tls_buffers_released >= 1; }, 5s));
  const auto released = s.server.stats().tls_buffers_released;

  const std::string request = http_request("POST", "/validate", admission_review("split"));
  const size_t half = request.size() / 2;
  REQUIRE(client.send(std::string_view(request).substr(0, half)));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // several sweeps past the idle time
  CHECK(s.server.stats().tls_buffers_released == released);
  REQUIRE(client.send(std::string_view(request).substr(half)));
  const auto reply = client.read_response();
  CHECK(reply.status == 200);
  CHECK(reply.body.find("\"uid\":\"split\"") != std::string::npos);
}

TEST_CASE("server tls buffers: back-to-back requests never give them back", "[server][tls-buffers]") {
  // OpenSSL itself is not told to free them after every record.
  gpu_admission::webhook::detail::IdentityHolder holder;
  std::string error;
  SSL_CTX* context = gpu_admission::webhook::detail::create_tls_context(&holder, error);
  REQUIRE(context != nullptr);
  CHECK((SSL_CTX_get_mode(context) & SSL_MODE_RELEASE_BUFFERS) == 0);
  SSL_CTX_free(context);

  InProcessServer s;  // the default: after 1 s idle
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  int wrong = 0;
  for (int i = 0; i < 200; ++i) wrong += answers(client, "busy" + std::to_string(i)) ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(s.server.stats().tls_buffers_released == 0);
}
