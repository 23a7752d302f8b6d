// webhook/server/ -- the webhook's network front end, the gpu_webhook_server library. This
// header is its public face (HttpsServer, its options, ListenAddress, TlsIdentity); the rest of
// the folder serves it: listen_socket (listening sockets), tls_identity (certificates and the
// TLS context), connection (a connection's state and the httplib adapter), direct_path (plain
// admission POSTs answered without httplib), the epoll engine (connection_engine, event_loop,
// connection_io), request_framing, worker_pool and cpu_budget. Their internal types live in
// namespace detail and their headers are not included outside server/ (tests aside). Code here
// may include admission/ and ops/ headers and policy/, never cli/ or io/.
//
// The webhook's network front end: POST /validate and /mutate, GET /healthz and
// /readyz over TLS on the main port, GET /metrics in plain HTTP on the metrics port.
//
// Connections are served by a few event loop threads (one per usable CPU), each with its own
// listening socket on the port (SO_REUSEPORT), its own epoll set and its own connections: the
// loop that accepted a connection does its TLS handshake, reads, answers its requests and
// writes the responses, without ever blocking and without a lock; whenever the client has to
// act first, the connection waits in epoll (edge-triggered, registered once) with a deadline.
// Idle keep-alive connections, clients that never start TLS, clients that stall half-way
// through a request and clients that do not read their responses therefore hold a socket each
// (bounded by max_connections and closed after their timeout), never a thread. Only requests
// too large to answer without delaying the loop go to a worker pool. httplib parses requests
// and writes responses; its own thread-per-connection server loop is not used.
//
// The serving certificate lives in an atomically swapped holder: each new handshake takes the
// newest one (OpenSSL certificate callback), established connections keep theirs.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/admission/admission.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"
#include "webhook/ops/policy_holder.h"

namespace gpu_admission::webhook {

// "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all interfaces). Port 0 picks a free port.
struct ListenAddress {
  std::string host;  // empty: all interfaces
  int port = 0;
  std::string to_string() const;
};
std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error);

// A serving certificate chain and its private key, immutable once built.
class TlsIdentity {
 public:
  // The first certificate of `cert_pem` is the leaf, the rest its chain. The key must be
  // unencrypted and belong to the leaf. nullptr and `error` set on failure.
  static std::shared_ptr<const TlsIdentity> from_pem(std::string_view cert_pem, std::string_view key_pem,
                                                     std::string source, std::string& error);
  ~TlsIdentity();
  TlsIdentity(const TlsIdentity&) = delete;
  TlsIdentity& operator=(const TlsIdentity&) = delete;

  X509* leaf() const { return leaf_; }
  STACK_OF(X509) * chain() const { return chain_; }
  EVP_PKEY* key() const { return key_; }
  int64_t not_after() const { return not_after_; }      // unix seconds
  const std::string& source() const { return source_; }  // file path, or "self-signed (in memory)"
  std::string serial_hex() const;                         // upper-case hex of the leaf's serial
  std::string key_type() const;                           // "ECDSA", "RSA", ...

 private:
  TlsIdentity() = default;
  X509* leaf_ = nullptr;
  STACK_OF(X509)* chain_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  int64_t not_after_ = 0;
  std::string source_;
};
using TlsIdentityPtr = std::shared_ptr<const TlsIdentity>;

struct HttpsServerOptions {
  std::string listen = "0.0.0.0:8443";
  std::string metrics_listen = "0.0.0.0:9090";  // empty: no metrics listener
  // An already-listening TCP socket to serve instead of binding `listen` (socket activation);
  // the server owns it from start() on. With SO_REUSEPORT set on it, each further event loop
  // gets a socket of its own on its address; without, the loops share it. -1: none.
  int listen_fd = -1;
  size_t max_body_bytes = 8u << 20;
  size_t max_head_bytes = 64u << 10;
  // A request (or a TLS handshake) must arrive completely within this time of its first byte.
  std::chrono::milliseconds read_timeout{10'000};
  // A response must be written within this time.
  std::chrono::milliseconds write_timeout{10'000};
  // Keep-alive connections without a request are closed after this (below the API server's 90 s).
  std::chrono::milliseconds idle_timeout{60'000};
  // A connection idle this long gives back its TLS record buffers (~33 KiB); busy connections
  // keep them between requests, which saves allocating them for every request.
  std::chrono::milliseconds tls_buffers_idle{1'000};
  // Open TLS connections; at the limit the oldest connection not serving a request is dropped.
  size_t max_connections = 1024;
  size_t metrics_max_connections = 64;
  // Event loop threads (0: one per CPU this process may use; see cpu_budget.h). Each one
  // accepts connections on its own listening socket and handshakes, reads, answers and writes
  // them, start to finish, so a request costs no thread hand-off.
  size_t event_loops = 0;
  // Requests larger than this are answered by the worker pool instead of the event loop that
  // read them, so that decoding a multi-megabyte review does not delay the loop's other
  // connections.
  size_t inline_request_bytes = 256 * 1024;
  // Worker threads for those large requests (0: 2). More are started, up to
  // max_worker_threads (0: 64), while requests wait and a worker has spent 10 ms of CPU on one.
  size_t worker_threads = 0;
  size_t max_worker_threads = 0;
  // SIGTERM: how long in-flight requests may take before connections are cut.
  std::chrono::milliseconds grace_period{25'000};
  // What else readyz waits for (cluster state in `serve`): returns why it is not ready, "" when
  // ready. Called on every /readyz; must be cheap and thread-safe. Empty: nothing else.
  std::function<std::string()> extra_readiness;
};

class HttpsServer {
 public:
  HttpsServer(HttpsServerOptions options, const AdmissionService& admission, const PolicyHolder& policies,
              Metrics* metrics, Logger* logger);
  ~HttpsServer();  // stop()
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Installs the certificate used by new handshakes (also before start()). Connections already
  // established keep the certificate they were set up with.
  void set_identity(TlsIdentityPtr identity);
  TlsIdentityPtr identity() const;

  // Binds both listeners and starts serving. False with `error` set when a port cannot be
  // bound or TLS cannot be set up; nothing keeps running then.
  bool start(std::string& error);
  int port() const;          // the bound main port (after start)
  int metrics_port() const;  // the bound metrics port, 0 without a metrics listener

  // readyz: a policy and a certificate are loaded, options.extra_readiness is satisfied and no
  // shutdown has begun.
  bool ready() const;

  // SIGTERM handling. begin_shutdown(): readyz fails, the main listener closes (new connections
  // are refused), idle connections close, requests in progress are answered with
  // "Connection: close". drain(): waits until every TLS connection is gone, at most `limit`;
  // true when drained. stop(): cuts what is left, stops both listeners and joins every thread.
  void begin_shutdown();
  bool drain(std::chrono::milliseconds limit);
  void stop();
  // All three with options.grace_period; true when everything finished in time.
  bool shutdown();

  struct Stats {
    size_t open_connections = 0;
    unsigned long long accepted = 0;
    unsigned long long evicted = 0;    // dropped at max_connections
    unsigned long long timed_out = 0;  // handshake, request or idle timeout
    unsigned long long requests = 0;
    unsigned long long direct_requests = 0;  // of those, answered without httplib's parser
    unsigned long long pooled_requests = 0;  // handed to the worker pool (over inline_request_bytes)
    size_t event_loops = 0;
    // Listening sockets: one per event loop (SO_REUSEPORT), or 1 shared by the loops.
    size_t listeners = 0;
    std::vector<unsigned long long> accepted_per_loop;
    // EPOLL_CTL_MOD calls: connections are registered once and never re-armed, so 0.
    unsigned long long epoll_rearms = 0;
    // Times an idle connection gave back OpenSSL's record buffers (see tls_buffers_idle).
    unsigned long long tls_buffers_released = 0;
    size_t worker_threads = 0;
    size_t busy_workers = 0;
    size_t peak_worker_threads = 0;
  };
  Stats stats() const;  // of the main (TLS) listener

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_admission::webhook
