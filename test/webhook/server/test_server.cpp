// The HTTPS webhook server in-process over real TLS on loopback: probes, HTTP errors, keep-alive,
// metrics, certificate reload without dropping connections, pipelining, graceful shutdown.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <sstream>
#include <thread>
#include <vector>

#include "webhook/server/server_test_support.h"
#include "webhook/server/cpu_budget.h"

using namespace server_test;
using gpu_admission::Json;

TEST_CASE("server: healthz and readyz over TLS 1.2+ on a free loopback port", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  REQUIRE(s.port() > 0);
  REQUIRE(s.server.metrics_port() > 0);

  TlsClient client;
  REQUIRE(client.connect(s.port()));
  CHECK((client.protocol() == "TLSv1.3" || client.protocol() == "TLSv1.2"));
  auto health = client.request("GET", "/healthz");
  REQUIRE(health.ok);
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");
  auto ready = client.request("GET", "/readyz");
  CHECK(ready.status == 200);
  CHECK(s.server.ready());

  SECTION("TLS 1.1 and older are refused") {
    TlsClient old;
    old.limit_versions(TLS1_VERSION, TLS1_1_VERSION);
    CHECK_FALSE(old.connect_with_versions(s.port()));
  }
  SECTION("TLS 1.2 negotiates an ECDHE AEAD suite") {
    TlsClient tls12;
    tls12.limit_versions(TLS1_2_VERSION, TLS1_2_VERSION);
    REQUIRE(tls12.connect_with_versions(s.port()));
    CHECK(tls12.protocol() == "TLSv1.2");
    CHECK(tls12.cipher().rfind("ECDHE-ECDSA-", 0) == 0);
    CHECK(tls12.request("GET", "/healthz").status == 200);
  }
}

TEST_CASE("server: readyz is 503 without a policy, no certificate means no handshake", "[server]") {
  SECTION("no policy") {
    InProcessServer s(test_options(), /*with_policy=*/false);
    REQUIRE(s.started);
    TlsClient client;
    REQUIRE(client.connect(s.port()));
    auto ready = client.request("GET", "/readyz");
    CHECK(ready.status == 503);
    CHECK(ready.body.find("no policy") != std::string::npos);
    CHECK(client.request("GET", "/healthz").status == 200);
    s.policies.set(gpu_admission::webhook::load_policy_file("").policy);
    CHECK(client.request("GET", "/readyz").status == 200);
  }
  SECTION("no certificate") {
    InProcessServer s(test_options(), true, /*with_certificate=*/false);
    REQUIRE(s.started);
    CHECK_FALSE(s.server.ready());
    TlsClient client;
    CHECK_FALSE(client.connect(s.port()));
    s.server.set_identity(identity_of(make_ecdsa_localhost()));
    REQUIRE(client.connect(s.port()));
    CHECK(client.request("GET", "/readyz").status == 200);
  }
}

TEST_CASE("server: AdmissionReviews on /validate and /mutate echo the uid", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  for (const std::string path : {"/validate", "/mutate"}) {
    auto reply = client.request("POST", path, admission_review("uid-" + path.substr(1)));
    REQUIRE(reply.ok);
    CHECK(reply.status == 200);
    CHECK(reply.header("content-type").find("application/json") == 0);
    const Json review = Json::parse(reply.body);
    CHECK(review["apiVersion"] == "admission.k8s.io/v1");
    CHECK(review["kind"] == "AdmissionReview");
    CHECK(review["response"]["uid"] == "uid-" + path.substr(1));
  }
}

TEST_CASE("server: plain admission requests skip httplib and get the very bytes httplib would write", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  // A chunked body is one of the shapes only httplib parses: the same request sent both ways.
  const auto chunked = [](const std::string& path, const std::string& body, const std::string& extra_headers) {
    std::ostringstream size;
    size << std::hex << body.size();
    return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + extra_headers +
           "Transfer-Encoding: chunked\r\n\r\n" + size.str() + "\r\n" + body + "\r\n0\r\n\r\n";
  };
  struct Case {
    std::string path;
    std::string body;
    std::string extra_headers;
  };
  const std::vector<Case> cases = {
      {"/validate?timeout=10s", admission_review("direct-1"), ""},
      {"/mutate", admission_review("direct-2"), ""},
      {"/validate", "{\"not\": \"a review\"}", ""},  // 400 from the admission service
      {"/mutate", admission_review("direct-3"), "Connection: keep-alive\r\n"},
  };
  for (const Case& c : cases) {
    INFO(c.path << " " << c.body.substr(0, 40));
    const auto before = s.server.stats().direct_requests;
    auto direct = client.request("POST", c.path, c.body, "application/json", c.extra_headers);
    REQUIRE(direct.ok);
    CHECK(s.server.stats().direct_requests == before + 1);
    REQUIRE(client.send(chunked(c.path, c.body, c.extra_headers)));
    auto parsed = client.read_response();
    REQUIRE(parsed.ok);
    CHECK(s.server.stats().direct_requests == before + 1);
    CHECK(direct.raw == parsed.raw);
  }
  // "Connection: close" both ways (each closes its connection).
  const std::string body = admission_review("direct-close");
  auto direct = client.request("POST", "/validate", body, "application/json", "Connection: close\r\n");
  CHECK(direct.header("connection") == "close");
  CHECK(client.closed_by_peer(std::chrono::seconds(2)));
  REQUIRE(client.connect(s.port()));
  REQUIRE(client.send(chunked("/validate", body, "Connection: close\r\n")));
  auto parsed = client.read_response();
  CHECK(direct.raw == parsed.raw);
  // Other content types are left to httplib, which refuses them.
  REQUIRE(client.connect(s.port()));
  const auto before = s.server.stats().direct_requests;
  auto refused = client.request("POST", "/validate", body, "text/plain");
  CHECK(refused.status == 415);
  CHECK(s.server.stats().direct_requests == before);
}

TEST_CASE("server: several event loops serve many concurrent connections, large requests go to the pool",
          "[server]") {
  HttpsServerOptions options = test_options();
  options.event_loops = 4;           // more loops than this machine may have CPUs, each with its own listener
  options.inline_request_bytes = 4096;  // reviews padded past this are answered by the worker pool
  InProcessServer s(options);
  REQUIRE(s.started);
  CHECK(s.server.stats().event_loops == 4);
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 24; ++t) {
    clients.emplace_back([&, t] {
      TlsClient client;
      if (!client.connect(s.port())) {
        ++wrong;
        return;
      }
      for (int i = 0; i < 40; ++i) {
        const std::string uid = "loop-" + std::to_string(t) + "-" + std::to_string(i);
        std::string body = admission_review(uid);
        if (i % 4 == 0) body.insert(body.size() - 1, ",\"padding\":\"" + std::string(8000, 'x') + "\"");
        auto reply = client.request("POST", i % 2 ? "/validate" : "/mutate", body);
        if (!reply.ok || reply.status != 200 || reply.body.find("\"uid\":\"" + uid + "\"") == std::string::npos) ++wrong;
      }
    });
  }
  for (auto& client : clients) client.join();
  CHECK(wrong == 0);
  const auto stats = s.server.stats();
  CHECK(stats.pooled_requests == 24 * 10);
  CHECK(stats.requests >= 24 * 40);
  CHECK(stats.direct_requests >= 24 * 40);
}

TEST_CASE("server: the event loops default to the CPUs the process may use", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  CHECK(s.server.stats().event_loops == gpu_admission::webhook::usable_cpus());
}

namespace {

// A server that takes bodies of 4 KiB at most, and a client connected to it.
struct SmallBodyServer {
  static HttpsServerOptions options() {
    HttpsServerOptions o = test_options();
    o.max_body_bytes = 4096;
    return o;
  }
  InProcessServer s{options()};
  TlsClient client;
  SmallBodyServer() {
    REQUIRE(s.started);
    REQUIRE(client.connect(s.port()));
  }
};

}  // namespace

TEST_CASE_METHOD(SmallBodyServer, "server: HTTP-level errors of the body (415, 413)", "[server]") {
  SECTION("wrong content type: 415, the connection stays usable") {
    auto reply = client.request("POST", "/validate", admission_review("a"), "text/plain");
    CHECK(reply.status == 415);
    CHECK(client.request("POST", "/validate", admission_review("b"), "application/json; charset=utf-8").status == 200);
    CHECK(client.request("POST", "/mutate", admission_review("c"), "").status == 415);
  }
  SECTION("body over the limit by Content-Length: 413 without reading it, then close") {
    const std::string head = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n";
    REQUIRE(client.send(head + std::string(1000, ' ')));
    auto reply = client.read_response();
    CHECK(reply.status == 413);
    CHECK(reply.header("connection") == "close");
    CHECK(client.closed_by_peer(2s));
  }
  SECTION("a 2 MiB body streamed without waiting: the 413 arrives, not a connection reset") {
    REQUIRE(client.send("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n"));
    const std::string chunk(16 * 1024, 'x');
    for (int i = 0; i < 128; ++i)
      if (!client.send(chunk)) break;
    auto reply = client.read_response();
    REQUIRE(reply.ok);
    CHECK(reply.status == 413);
    CHECK(client.closed_by_peer(3s));
  }
  SECTION("body over the limit, exactly: 4097 bytes") {
    auto reply = client.request("POST", "/validate", std::string(4097, ' '));
    CHECK(reply.status == 413);
    CHECK(client.closed_by_peer(2s));
  }
  SECTION("body over the limit in chunks: 413") {
    std::string request = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 5; ++i) request += "400\r\n" + std::string(1024, ' ') + "\r\n";
    request += "0\r\n\r\n";
    REQUIRE(client.send(request));
    CHECK(client.read_response().status == 413);
  }
  SECTION("a chunked body within the limit is answered") {
    const std::string body = admission_review("chunked");
    std::string request = "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    request += "10\r\n" + body.substr(0, 16) + "\r\n";
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size() - 16);
    request += std::string(size) + "\r\n" + body.substr(16) + "\r\n0\r\n\r\n";
    REQUIRE(client.send(request));
    auto reply = client.read_response();
    CHECK(reply.status == 200);
    CHECK(reply.body.find("\"uid\":\"chunked\"") != std::string::npos);
  }
  CHECK(s.server.ready());
}

TEST_CASE_METHOD(SmallBodyServer, "server: HTTP-level errors of the request (400, 405, 404, 431)", "[server]") {
  SECTION("not JSON: 400 from the admission service, the connection stays usable") {
    CHECK(client.request("POST", "/validate", "this is not json").status == 400);
    CHECK(client.request("POST", "/validate", "{\"kind\":\"NotAReview\"}").status == 400);
    CHECK(client.request("GET", "/healthz").status == 200);
  }
  SECTION("wrong method: 405 with Allow") {
    auto reply = client.request("GET", "/validate");
    CHECK(reply.status == 405);
    CHECK(reply.header("allow") == "POST");
    CHECK(client.request("DELETE", "/healthz").status == 405);
    CHECK(client.request("PUT", "/mutate", "{}").status == 405);
  }
  SECTION("unknown path: 404") {
    CHECK(client.request("GET", "/").status == 404);
    CHECK(client.request("POST", "/metrics", "{}").status == 404);
  }
  SECTION("malformed framing: 400 and close") {
    REQUIRE(client.send("POST /validate HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"));
    CHECK(client.read_response().status == 400);
    CHECK(client.closed_by_peer(2s));
  }
  SECTION("a request head over 64 KiB: 431 and close") {
    REQUIRE(client.send("GET /healthz HTTP/1.1\r\nX-Big: " + std::string(70 * 1024, 'a')));
    CHECK(client.read_response().status == 431);
    CHECK(client.closed_by_peer(2s));
  }
  SECTION("garbage instead of HTTP: 400") {
    REQUIRE(client.send("\x01\x02\x03 nonsense\r\n\r\n"));
    CHECK(client.read_response().status == 400);
  }
  CHECK(s.server.ready());
}

TEST_CASE("server: one keep-alive connection serves many requests without Nagle delays", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  std::vector<double> milliseconds;
  for (int i = 0; i < 200; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto reply = client.request("POST", "/validate", admission_review("ka-" + std::to_string(i)));
    milliseconds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    REQUIRE(reply.status == 200);
    REQUIRE(reply.header("connection") != "close");
  }
  std::sort(milliseconds.begin(), milliseconds.end());
  INFO("median " << milliseconds[100] << " ms, max " << milliseconds.back() << " ms");
  CHECK(milliseconds[100] < 20.0);  // Nagle + delayed ACK would make every request ~40 ms
  CHECK(s.server.stats().accepted == 1);
}

TEST_CASE("server: httplib's own SSL client works against it", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  httplib::SSLClient client("127.0.0.1", s.port());
  client.enable_server_certificate_verification(false);
  client.set_tcp_nodelay(true);  // its default (Nagle on) would delay each body ~40 ms
  client.set_keep_alive(true);
  for (int i = 0; i < 20; ++i) {
    auto result = client.Post("/validate", admission_review("h" + std::to_string(i)), "application/json");
    REQUIRE(result);
    CHECK(result->status == 200);
  }
  auto health = client.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(s.server.stats().accepted == 1);
}

TEST_CASE("server: /metrics on the plain-HTTP port has the SPEC metric names", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));
  REQUIRE(client.request("POST", "/validate", admission_review("m1")).status == 200);
  REQUIRE(client.request("POST", "/validate", "x", "text/plain").status == 415);
  s.metrics.set_policy_info("default", "abc");
  s.metrics.set_certificate_expiry(1.5e9);

  httplib::Client metrics("127.0.0.1", s.server.metrics_port());
  auto result = metrics.Get("/metrics");
  REQUIRE(result);
  CHECK(result->status == 200);
  CHECK(result->get_header_value("Content-Type").find("text/plain; version=0.0.4") == 0);
  for (const char* name :
       {"gpu_admission_requests_total", "gpu_admission_request_duration_seconds", "gpu_admission_rule_results_total",
        "gpu_admission_mutations_total", "gpu_admission_policy_reloads_total", "gpu_admission_policy_info",
        "gpu_admission_tls_certificate_expiry_timestamp_seconds"}) {
    INFO(name);
    CHECK(result->body.find(name) != std::string::npos);
  }
  CHECK(result->body.find("gpu_admission_http_errors_total{code=\"415\"} 1") != std::string::npos);
  CHECK(result->body.find("gpu_admission_request_duration_seconds_bucket{endpoint=\"validate\",le=\"5e-05\"}") !=
        std::string::npos);
  auto missing = metrics.Get("/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);
}

TEST_CASE("server: a certificate reload keeps open connections, new handshakes get the new certificate", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  const std::string first_serial = serial_of(s.pem.cert);

  TlsClient kept;
  REQUIRE(kept.connect(s.port()));
  CHECK(kept.peer_serial() == first_serial);
  REQUIRE(kept.request("POST", "/validate", admission_review("before")).status == 200);

  SECTION("to another ECDSA certificate") {
    const Pem next = make_ecdsa_localhost();
    s.server.set_identity(identity_of(next));
    CHECK(kept.request("POST", "/validate", admission_review("after")).status == 200);
    CHECK(kept.peer_serial() == first_serial);
    TlsClient fresh;
    REQUIRE(fresh.connect(s.port()));
    CHECK(fresh.peer_serial() == serial_of(next.cert));
    CHECK(fresh.request("GET", "/readyz").status == 200);
  }
  SECTION("to an RSA certificate, over TLS 1.2 and 1.3") {
    const Pem rsa = make_rsa_localhost();
    auto identity = identity_of(rsa);
    REQUIRE(identity);
    CHECK(identity->key_type() == "RSA");
    s.server.set_identity(identity);
    TlsClient tls13;
    REQUIRE(tls13.connect(s.port()));
    CHECK(tls13.peer_serial() == serial_of(rsa.cert));
    TlsClient tls12;
    tls12.limit_versions(TLS1_2_VERSION, TLS1_2_VERSION);
    REQUIRE(tls12.connect_with_versions(s.port()));
    CHECK(tls12.cipher().rfind("ECDHE-RSA-", 0) == 0);
    CHECK(tls12.request("GET", "/healthz").status == 200);
    CHECK(kept.request("GET", "/healthz").status == 200);
  }
}

TEST_CASE("server: TlsIdentity refuses mismatched or broken PEM", "[server]") {
  const Pem a = make_ecdsa_localhost();
  const Pem b = make_ecdsa_localhost();
  std::string error;
  CHECK(gpu_admission::webhook::TlsIdentity::from_pem(a.cert, a.key, "ok", error) != nullptr);
  CHECK(gpu_admission::webhook::TlsIdentity::from_pem(a.cert, b.key, "mismatch", error) == nullptr);
  CHECK(error.find("does not belong") != std::string::npos);
  CHECK(gpu_admission::webhook::TlsIdentity::from_pem("garbage", a.key, "bad", error) == nullptr);
  CHECK(gpu_admission::webhook::TlsIdentity::from_pem(a.cert, "garbage", "bad", error) == nullptr);
  CHECK(gpu_admission::webhook::TlsIdentity::from_pem(a.cert + b.cert, a.key, "chain", error) != nullptr);
}

TEST_CASE("server: pipelined requests and Expect: 100-continue", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  TlsClient client;
  REQUIRE(client.connect(s.port()));

  SECTION("three requests in one write are answered in order") {
    REQUIRE(client.send(http_request("POST", "/validate", admission_review("p1")) + http_request("GET", "/healthz") +
                        http_request("POST", "/mutate", admission_review("p3"))));
    auto first = client.read_response();
    auto second = client.read_response();
    auto third = client.read_response();
    CHECK(first.body.find("\"uid\":\"p1\"") != std::string::npos);
    CHECK(second.body == "ok\n");
    CHECK(third.body.find("\"uid\":\"p3\"") != std::string::npos);
  }
  SECTION("the body is asked for with 100 Continue") {
    const std::string body = admission_review("expect");
    REQUIRE(client.send("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
    // The interim response comes before the body is sent; read_response() skips it.
    REQUIRE(client.send(body));
    auto reply = client.read_response();
    CHECK(reply.status == 200);
    CHECK(reply.body.find("\"uid\":\"expect\"") != std::string::npos);
  }
}

TEST_CASE("server: graceful shutdown finishes the request in flight, refuses new ones", "[server]") {
  InProcessServer s;
  REQUIRE(s.started);
  const int port = s.port();

  TlsClient idle;  // an idle keep-alive connection: closed at once
  REQUIRE(idle.connect(port));
  REQUIRE(idle.request("GET", "/healthz").status == 200);

  TlsClient in_flight;  // has sent half a request
  REQUIRE(in_flight.connect(port));
  const std::string request = http_request("POST", "/validate", admission_review("in-flight"));
  REQUIRE(in_flight.send(request.substr(0, request.size() / 2)));

  TlsClient probe;  // has sent half of a readyz request
  REQUIRE(probe.connect(port));
  const std::string ready_request = http_request("GET", "/readyz");
  REQUIRE(probe.send(ready_request.substr(0, 10)));
  std::this_thread::sleep_for(100ms);

  s.server.begin_shutdown();
  CHECK_FALSE(s.server.ready());
  CHECK(idle.closed_by_peer(2s));
  CHECK(raw_connect(port) < 0);  // the listener is gone

  REQUIRE(probe.send(ready_request.substr(10)));
  auto ready = probe.read_response();
  CHECK(ready.status == 503);
  CHECK(ready.body.find("shutting down") != std::string::npos);

  REQUIRE(in_flight.send(request.substr(request.size() / 2)));
  auto reply = in_flight.read_response();
  CHECK(reply.status == 200);
  CHECK(reply.header("connection") == "close");
  CHECK(reply.body.find("\"uid\":\"in-flight\"") != std::string::npos);

  const auto start = std::chrono::steady_clock::now();
  CHECK(s.server.drain(5s));
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  s.server.stop();
}

TEST_CASE("server: stop() cuts connections that outlive the grace period", "[server]") {
  HttpsServerOptions options = test_options();
  options.grace_period = 300ms;
  InProcessServer s(options);
  REQUIRE(s.started);
  TlsClient stalled;
  REQUIRE(stalled.connect(s.port()));
  REQUIRE(stalled.send("POST /validate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"));
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(s.server.shutdown());  // not drained: the stalled request never completes
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(stalled.closed_by_peer(2s));
}

TEST_CASE("server: listen addresses", "[server]") {
  std::string error;
  auto v4 = gpu_admission::webhook::parse_listen_address("0.0.0.0:8443", error);
  REQUIRE(v4);
  CHECK(v4->host == "0.0.0.0");
  CHECK(v4->port == 8443);
  auto v6 = gpu_admission::webhook::parse_listen_address("[::1]:9090", error);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->to_string() == "[::1]:9090");
  auto any = gpu_admission::webhook::parse_listen_address(":8443", error);
  REQUIRE(any);
  CHECK(any->host.empty());
  CHECK_FALSE(gpu_admission::webhook::parse_listen_address("8443", error));
  CHECK_FALSE(gpu_admission::webhook::parse_listen_address("host:99999", error));
  CHECK_FALSE(gpu_admission::webhook::parse_listen_address("host:", error));
  CHECK_FALSE(gpu_admission::webhook::parse_listen_address("::1:80", error));

  HttpsServerOptions options = test_options();
  InProcessServer first(options);
  REQUIRE(first.started);
  options.listen = "127.0.0.1:" + std::to_string(first.port());
  InProcessServer second(options);
  CHECK_FALSE(second.started);
  CHECK(second.start_error.find("cannot listen") != std::string::npos);
}
