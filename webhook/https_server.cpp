// The webhook's network front end (see https_server.h for the design).
//
// Pieces, in order:
//   - listen addresses and listening sockets;
//   - TlsIdentity (certificate chain + key) and the TLS context with its certificate callback;
//   - RequestRouter: httplib::Server used only as request parser, router and response writer,
//     driven request by request through its protected process_request();
//   - ConnectionEngine: accept + epoll loops + worker pool for large requests, the non-blocking
//     connection state machine, timeouts, connection cap and graceful shutdown; one per
//     listener (TLS main, plain metrics);
//   - HttpsServer: routes of both ports, readiness, certificate holder, shutdown sequence.
//
// Threads and ownership: a connection is either parked in epoll (`parked` true, armed with
// EPOLLONESHOT) or being served by exactly one thread (an event loop, or a worker for a large
// request): EPOLLONESHOT guarantees a single wake-up. The serving thread parks the connection
// as its last action or closes it; housekeeping only closes parked connections. Epoll events
// carry connection ids, not pointers, so an event for a connection closed meanwhile finds
// nothing.
#include "webhook/https_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "webhook/cpu_budget.h"
#include "webhook/request_framing.h"
#include "webhook/worker_pool.h"

namespace gpu_admission::webhook {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Listen addresses and sockets

std::string ListenAddress::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error) {
  ListenAddress address;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      error = "invalid listen address \"" + std::string(text) + "\": expected [IPV6]:PORT";
      return std::nullopt;
    }
    address.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      error = "invalid listen address \"" + std::string(text) + "\": expected HOST:PORT";
      return std::nullopt;
    }
    address.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  int port = 0;
  if (port_text.empty() || port_text.size() > 5) port = -1;
  for (char c : port_text) {
    if (c < '0' || c > '9') {
      port = -1;
      break;
    }
    port = port * 10 + (c - '0');
  }
  if (port < 0 || port > 65535) {
    error = "invalid port in listen address \"" + std::string(text) + "\"";
    return std::nullopt;
  }
  address.port = port;
  return address;
}

namespace {

std::string errno_text(int code) {
  char buffer[256];
  return std::string(strerror_r(code, buffer, sizeof buffer));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A non-blocking listening socket; `bound_port` receives the actual port (for port 0).
int open_listener(const ListenAddress& address, int& bound_port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* results = nullptr;
  const std::string port_text = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port_text.c_str(), &hints,
                               &results);
  if (rc != 0) {
    error = "cannot resolve listen address " + address.to_string() + ": " + gai_strerror(rc);
    return -1;
  }
  // All interfaces: prefer one dual-stack IPv6 socket, fall back to IPv4.
  std::vector<addrinfo*> candidates;
  for (addrinfo* ai = results; ai != nullptr; ai = ai->ai_next) candidates.push_back(ai);
  if (address.host.empty())
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const addrinfo* a, const addrinfo* b) { return a->ai_family == AF_INET6 && b->ai_family != AF_INET6; });
  int fd = -1;
  error.clear();
  for (addrinfo* ai : candidates) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = "socket: " + errno_text(errno);
      continue;
    }
    const int one = 1;
    const int zero = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && address.host.empty()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = "cannot listen on " + address.to_string() + ": " + errno_text(errno);
      close_fd(fd);
      continue;
    }
    break;
  }
  ::freeaddrinfo(results);
  if (fd < 0) {
    if (error.empty()) error = "cannot listen on " + address.to_string();
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    error = "getsockname: " + errno_text(errno);
    close_fd(fd);
    return -1;
  }
  bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

void describe_address(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  } else {
    port = 0;
  }
  ip = text;
}

std::string openssl_errors() {
  std::string text;
  unsigned long code;
  while ((code = ERR_get_error()) != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!text.empty()) text += "; ";
    text += buffer;
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TLS identity and context

namespace {

int refuse_password(char*, int, int, void*) { return -1; }  // never prompt for a passphrase

struct BioCloser {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioCloser>;

BioPtr memory_bio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

TlsIdentity::~TlsIdentity() {
  if (leaf_ != nullptr) X509_free(leaf_);
  if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
  if (key_ != nullptr) EVP_PKEY_free(key_);
}

std::shared_ptr<const TlsIdentity> TlsIdentity::from_pem(std::string_view cert_pem, std::string_view key_pem,
                                                         std::string source, std::string& error) {
  ERR_clear_error();
  std::shared_ptr<TlsIdentity> identity(new TlsIdentity());
  identity->source_ = std::move(source);
  BioPtr cert_bio = memory_bio(cert_pem);
  if (!cert_bio || (identity->leaf_ = PEM_read_bio_X509(cert_bio.get(), nullptr, refuse_password, nullptr)) == nullptr) {
    error = "no PEM certificate found: " + openssl_errors();
    return nullptr;
  }
  identity->chain_ = sk_X509_new_null();
  if (identity->chain_ == nullptr) {
    error = "out of memory";
    return nullptr;
  }
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, refuse_password, nullptr)) {
    if (sk_X509_push(identity->chain_, extra) == 0) {
      X509_free(extra);
      error = "out of memory";
      return nullptr;
    }
  }
  ERR_clear_error();  // the loop above ends with a "no start line" error
  BioPtr key_bio = memory_bio(key_pem);
  if (!key_bio || (identity->key_ = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, refuse_password, nullptr)) == nullptr) {
    error = "no usable PEM private key found (encrypted keys are not supported): " + openssl_errors();
    return nullptr;
  }
  if (X509_check_private_key(identity->leaf_, identity->key_) != 1) {
    ERR_clear_error();
    error = "the private key does not belong to the certificate";
    return nullptr;
  }
  std::tm expiry{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(identity->leaf_), &expiry) != 1) {
    error = "cannot read the certificate's notAfter";
    return nullptr;
  }
  identity->not_after_ = static_cast<int64_t>(timegm(&expiry));
  return identity;
}

std::string TlsIdentity::serial_hex() const {
  std::string text;
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf_), nullptr);
  if (serial != nullptr) {
    if (char* hex = BN_bn2hex(serial)) {
      text = hex;
      OPENSSL_free(hex);
    }
    BN_free(serial);
  }
  return text;
}

std::string TlsIdentity::key_type() const {
  switch (EVP_PKEY_get_base_id(key_)) {
    case EVP_PKEY_EC: return "ECDSA";
    case EVP_PKEY_RSA: return "RSA";
    case EVP_PKEY_ED25519: return "Ed25519";
    default: return "other";
  }
}

namespace {

// TLS 1.2 suites with forward secrecy and AEAD only; TLS 1.3 uses OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The serving identity, swapped by reloads and read once per handshake. A mutex rather than
// std::atomic<std::shared_ptr>: libstdc++ 12 unlocks that one with a relaxed store in load(),
// which ThreadSanitizer rightly reports; an uncontended mutex costs nothing next to a handshake.
class IdentityHolder {
 public:
  TlsIdentityPtr load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(TlsIdentityPtr next) {
    TlsIdentityPtr previous;
    {
      std::lock_guard lock(mutex_);
      previous = std::exchange(current_, std::move(next));
    }
  }  // the previous identity is released outside the lock

 private:
  mutable std::mutex mutex_;
  TlsIdentityPtr current_;
};

// OpenSSL certificate callback: runs for every handshake, before cipher selection, and
// installs the identity that is current at that moment.
int select_certificate(SSL* ssl, void* arg) {
  const TlsIdentityPtr identity = static_cast<IdentityHolder*>(arg)->load();
  if (!identity) return 0;
  if (SSL_use_certificate(ssl, identity->leaf()) != 1) return 0;
  if (SSL_use_PrivateKey(ssl, identity->key()) != 1) return 0;
  if (sk_X509_num(identity->chain()) > 0 && SSL_set1_chain(ssl, identity->chain()) != 1) return 0;
  return 1;
}

SSL_CTX* create_tls_context(IdentityHolder* holder, std::string& error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    error = "cannot create the TLS context: " + openssl_errors();
    return nullptr;
  }
  static const unsigned char kSessionContext[] = "gpu-admission";
  const bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
                  SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) == 1 &&
                  SSL_CTX_set1_groups_list(ctx, "X25519:P-256:P-384") == 1 &&
                  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1) == 1;
  if (!ok) {
    error = "cannot configure the TLS context: " + openssl_errors();
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);  // a record header and its body in one read(2)
  SSL_CTX_set_cert_cb(ctx, select_certificate, holder);
  return ctx;
}

// ---------------------------------------------------------------------------------------------
// httplib as parser, router and writer

// What the engine tells the routes about the request being answered (and they tell it back).
struct RequestContext {
  bool body_too_large = false;    // the body exceeds the limit and was not received
  bool close_after_response = false;
};
thread_local RequestContext* current_request = nullptr;

class RequestRouter : public httplib::Server {
 public:
  // One request from `stream`; false when nothing usable could be read or written.
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

struct Connection;

// One complete request in memory in, the response collected in memory out.
class BufferedStream final : public httplib::Stream {
 public:
  BufferedStream(std::string_view request, const Connection& connection) : request_(request), connection_(connection) {}

  bool is_readable() const override { return position_ < request_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - position_);
    std::memcpy(ptr, request_.data() + position_, n);
    position_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // httplib answers "Expect: 100-continue" with an interim response before reading the body;
    // the engine already did that (or the body is here), so it is dropped.
    if (output_.empty() && std::string_view(ptr, size).starts_with("HTTP/1.1 100 ")) return static_cast<ssize_t>(size);
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override;

  std::string& output() { return output_; }

 private:
  std::string_view request_;
  size_t position_ = 0;
  std::string output_;
  const Connection& connection_;
};

// ---------------------------------------------------------------------------------------------
// Connections

struct Connection {
  ~Connection() {
    if (ssl != nullptr) SSL_free(ssl);
    close_fd(fd);
  }

  uint64_t id = 0;  // its epoll tag and registry key; never reused, unlike descriptors
  int fd = -1;
  SSL* ssl = nullptr;  // nullptr on the plain-HTTP listener
  std::string remote_ip;
  int remote_port = 0;
  std::string local_ip;
  int local_port = 0;

  // Hand-over between epoll and the thread serving the connection.
  std::mutex handover;
  bool parked = false;  // in epoll, waiting for an event
  bool closed = false;
  Clock::time_point deadline;

  // Owned by whoever serves the connection.
  Clock::time_point accepted_at;
  bool tls_established = false;
  std::string input;  // received, not yet answered bytes
  size_t accounted_bytes = 0;
  RequestFramer framer;
  bool continue_sent = false;
  Clock::time_point request_started_at;
  unsigned long long requests = 0;
  // A response not yet completely written: output[output_sent..], then `after_output`.
  enum class AfterOutput { KeepServing, Close, Linger };
  std::string output;
  size_t output_sent = 0;
  AfterOutput after_output = AfterOutput::KeepServing;
  Clock::time_point output_deadline;
  // After refusing a request whose body is still arriving: the response is out, the write side
  // is shut, and what the client still sends is read and dropped until it stops or a short
  // deadline passes, so that closing does not reset the connection before the client read the
  // response (a "lingering close").
  bool lingering = false;
  size_t lingering_discarded = 0;
};

void BufferedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = connection_.remote_ip;
  port = connection_.remote_port;
}
void BufferedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = connection_.local_ip;
  port = connection_.local_port;
}
socket_t BufferedStream::socket() const { return connection_.fd; }

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 415: return "Unsupported Media Type";
    case 500: return "Internal Server Error";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// A POST with a Content-Length body, exactly one Content-Type header, no Expect, and at most
// one Connection header of "close" or "keep-alive", over HTTP/1.1: the shape of every request
// the API server sends. Anything else is parsed by httplib.
struct DirectRequest {
  std::string_view path;  // the target without its query ("?timeout=10s")
  std::string_view content_type;
  std::string_view body;
  bool close = false;  // answer with "Connection: close" and close
  std::string_view remote_ip;
  int remote_port = 0;
};

std::optional<DirectRequest> direct_request(const RequestFrame& frame, std::string_view request) {
  if (frame.state != RequestFrame::State::Complete || frame.chunked || frame.expects_continue || !frame.http_1_1 ||
      frame.content_type_headers != 1 || frame.connection == RequestFrame::ConnectionHeader::Other ||
      frame.method.in(request) != "POST")
    return std::nullopt;
  DirectRequest direct;
  const std::string_view target = frame.target.in(request);
  direct.path = target.substr(0, target.find('?'));
  direct.content_type = frame.content_type.in(request);
  direct.body = request.substr(frame.head_bytes, frame.total_bytes - frame.head_bytes);
  direct.close = frame.connection == RequestFrame::ConnectionHeader::Close;
  return direct;
}

// The response bytes, laid out the way httplib writes them (headers in its order), so that a
// client cannot tell which path answered.
void write_http_response(int status, std::string_view content_type, std::string_view body, bool close,
                         std::chrono::milliseconds keep_alive_timeout, std::string& out) {
  out.clear();
  out.reserve(body.size() + 160);
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\n";
  if (!close) {
    out += "Keep-Alive: timeout=";
    out += std::to_string(std::max<long long>(1, keep_alive_timeout.count() / 1000));
    out += ", max=1000000\r\n";
  }
  out += "\r\n";
  out += body;
}

// A response written by the engine itself, for requests httplib never sees.
std::string canned_response(int status, std::string_view reason) {
  std::string response;
  write_http_response(status, "text/plain", std::string(reason) + "\n", true, {}, response);
  return response;
}

// ---------------------------------------------------------------------------------------------
// The connection engine

struct EngineConfig {
  std::string name;           // "https" or "metrics", for logs
  SSL_CTX* tls = nullptr;     // nullptr: plain HTTP
  FramingLimits limits;
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  size_t max_connections = 1024;
  size_t max_buffered_bytes = 256u << 20;  // all connections' unanswered input together
  size_t event_loops = 1;
  // Requests up to this size are answered on the event loop thread that read them; larger
  // ones (whose decoding takes long enough to delay the loop's other connections) go to the
  // worker pool.
  size_t inline_request_bytes = 256 * 1024;
  size_t core_threads = 2;
  size_t max_threads = 64;
  // Answers the plain requests that make up nearly all of the traffic without httplib (see
  // DirectRequest); returns false to leave the request to httplib. Empty: everything goes
  // through httplib.
  std::function<bool(const DirectRequest&, std::string& response)> direct_handler;
};

class ConnectionEngine {
 public:
  ConnectionEngine(EngineConfig config, RequestRouter& router, Logger* logger, Metrics* metrics)
      : config_(std::move(config)), router_(router), logger_(logger), metrics_(metrics) {}
  ~ConnectionEngine() { stop(); }

  bool start(int listen_fd, std::string& error);
  void stop_accepting();            // close the listener; new connections are refused
  void begin_draining();            // close idle connections, close the others after their response
  bool wait_until_empty(Clock::time_point deadline);
  void stop();                      // cut every connection and join all threads

  HttpsServer::Stats stats() const;

 private:
  enum class ReadResult { Framed, WouldBlock, Eof, Error, Full };
  enum class Flush { Done, WantWrite, WantRead, Failed };
  enum class AfterAnswer { KeepOpen, Close, Abort };
  using ConnectionPtr = std::shared_ptr<Connection>;
  static constexpr uint64_t kWakeTag = 0;
  static constexpr uint64_t kListenTag = 1;

  void loop_main();
  void housekeeping();
  void accept_connections();
  void arm_listener_locked(bool armed);
  bool make_room_for_one_more();
  void dispatch(uint64_t id);
  void sweep(Clock::time_point now, bool stopping);
  void serve(const ConnectionPtr& connection, bool on_worker);
  void serve_rounds(const ConnectionPtr& connection, bool on_worker);
  void start_lingering(const ConnectionPtr& connection);
  void continue_lingering(const ConnectionPtr& connection);
  ReadResult read_request(Connection& connection, RequestFrame& frame);
  AfterAnswer answer(Connection& connection, const RequestFrame& frame, bool peer_finished);
  void queue_output(Connection& connection, std::string text, Connection::AfterOutput after);
  Flush flush_output(Connection& connection);
  void park(const ConnectionPtr& connection, uint32_t events, Clock::time_point deadline);
  void close_connection(Connection& connection, bool graceful);
  void remove_from_registry(Connection& connection);
  void account_input(Connection& connection);
  std::vector<ConnectionPtr> snapshot() const;
  void wake();
  void log_throttled(LogLevel level, const char* message, const Json& fields, Clock::time_point& last);

  const EngineConfig config_;
  RequestRouter& router_;
  Logger* logger_;
  Metrics* metrics_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<std::thread> loop_threads_;
  std::unique_ptr<WorkerPool> pool_;
  std::once_flag stop_once_;

  std::atomic<bool> stop_accepting_requested_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> loops_exit_{false};
  std::atomic<bool> sweep_requested_{false};
  std::atomic<bool> pool_tasks_waiting_{false};
  std::atomic<uint64_t> next_id_{kListenTag + 1};

  // Listener and timer state: whichever loop thread does the housekeeping or the accepting.
  std::mutex housekeeping_mutex_;
  bool listening_ = true;
  Clock::time_point accept_paused_until_{};
  Clock::time_point next_sweep_{};
  Clock::time_point stop_deadline_ = Clock::time_point::max();

  std::mutex log_mutex_;  // guards the two below (any thread logs)
  Clock::time_point last_capacity_log_{};
  Clock::time_point last_error_log_{};

  mutable std::mutex registry_mutex_;
  std::condition_variable registry_empty_;
  std::unordered_map<uint64_t, ConnectionPtr> connections_;

  std::atomic<size_t> buffered_bytes_{0};
  std::atomic<unsigned long long> accepted_{0};
  std::atomic<unsigned long long> evicted_{0};
  std::atomic<unsigned long long> timed_out_{0};
  std::atomic<unsigned long long> requests_{0};
  std::atomic<unsigned long long> direct_requests_{0};
  std::atomic<unsigned long long> pooled_requests_{0};
};

bool ConnectionEngine::start(int listen_fd, std::string& error) {
  listen_fd_ = listen_fd;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    error = config_.name + ": cannot create epoll/eventfd: " + errno_text(errno);
    return false;
  }
  // The listener is one-shot like the connections, so that one loop thread at a time accepts.
  epoll_event listen_event{};
  listen_event.events = EPOLLIN | EPOLLONESHOT;
  listen_event.data.u64 = kListenTag;
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u64 = kWakeTag;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &listen_event) != 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event) != 0) {
    error = config_.name + ": epoll_ctl: " + errno_text(errno);
    return false;
  }
  try {
    pool_ = std::make_unique<WorkerPool>(config_.core_threads, config_.max_threads);
    for (size_t i = 0; i < std::max<size_t>(1, config_.event_loops); ++i)
      loop_threads_.emplace_back([this] { loop_main(); });
  } catch (const std::exception& e) {
    error = config_.name + ": cannot start threads: " + e.what();
    loops_exit_ = true;
    for (auto& thread : loop_threads_) thread.join();
    loop_threads_.clear();
    if (pool_) pool_->shutdown();
    return false;
  }
  return true;
}

void ConnectionEngine::wake() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
  }
}

void ConnectionEngine::stop_accepting() {
  stop_accepting_requested_ = true;
  wake();
}

void ConnectionEngine::begin_draining() {
  draining_ = true;
  wake();
}

bool ConnectionEngine::wait_until_empty(Clock::time_point deadline) {
  std::unique_lock lock(registry_mutex_);
  return registry_empty_.wait_until(lock, deadline, [&] { return connections_.empty(); });
}

void ConnectionEngine::stop() {
  std::call_once(stop_once_, [&] {
    stopping_ = true;
    draining_ = true;
    stop_accepting_requested_ = true;
    wake();
    for (auto& thread : loop_threads_) thread.join();
    if (pool_) pool_->shutdown();
    // Anything still registered (only possible when the loops could not run) goes now.
    std::vector<ConnectionPtr> left;
    {
      std::lock_guard lock(registry_mutex_);
      for (auto& [id, connection] : connections_) left.push_back(connection);
      connections_.clear();
    }
    left.clear();
    close_fd(listen_fd_);
    close_fd(wake_fd_);
    close_fd(epoll_fd_);
  });
}

HttpsServer::Stats ConnectionEngine::stats() const {
  HttpsServer::Stats stats;
  {
    std::lock_guard lock(registry_mutex_);
    stats.open_connections = connections_.size();
  }
  stats.accepted = accepted_.load();
  stats.evicted = evicted_.load();
  stats.timed_out = timed_out_.load();
  stats.requests = requests_.load();
  stats.direct_requests = direct_requests_.load();
  stats.pooled_requests = pooled_requests_.load();
  stats.event_loops = loop_threads_.size();
  if (pool_) {
    const WorkerPool::Stats pool = pool_->stats();
    stats.worker_threads = pool.threads;
    stats.busy_workers = pool.busy;
    stats.peak_worker_threads = pool.peak_threads;
  }
  return stats;
}

void ConnectionEngine::log_throttled(LogLevel level, const char* message, const Json& fields, Clock::time_point& last) {
  if (logger_ == nullptr) return;
  {
    const auto now = Clock::now();
    std::lock_guard lock(log_mutex_);
    if (last != Clock::time_point{} && now - last < std::chrono::seconds(10)) return;
    last = now;
  }
  logger_->log(level, message, fields);
}

std::vector<ConnectionEngine::ConnectionPtr> ConnectionEngine::snapshot() const {
  std::vector<ConnectionPtr> all;
  std::lock_guard lock(registry_mutex_);
  all.reserve(connections_.size());
  for (const auto& [id, connection] : connections_) all.push_back(connection);
  return all;
}

void ConnectionEngine::remove_from_registry(Connection& connection) {
  std::lock_guard lock(registry_mutex_);
  connections_.erase(connection.id);
  if (connections_.empty()) registry_empty_.notify_all();
}

void ConnectionEngine::account_input(Connection& connection) {
  const size_t now_buffered = connection.input.size();
  if (now_buffered >= connection.accounted_bytes) buffered_bytes_ += now_buffered - connection.accounted_bytes;
  else buffered_bytes_ -= connection.accounted_bytes - now_buffered;
  connection.accounted_bytes = now_buffered;
}

void ConnectionEngine::close_connection(Connection& connection, bool graceful) {
  {
    std::lock_guard lock(connection.handover);
    if (connection.closed) return;
    connection.closed = true;
    connection.parked = false;
  }
  if (connection.ssl != nullptr && graceful && connection.tls_established) {
    ERR_clear_error();
    SSL_shutdown(connection.ssl);  // best effort close_notify; never waits
  }
  ERR_clear_error();
  if (connection.fd >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.fd, nullptr);
  close_fd(connection.fd);
  connection.input.clear();
  connection.input.shrink_to_fit();
  connection.output.clear();
  connection.output.shrink_to_fit();
  account_input(connection);
  remove_from_registry(connection);
}

// Every loop thread runs this over the one epoll set; EPOLLONESHOT hands each ready
// connection to exactly one of them, which serves it to completion and parks it again.
void ConnectionEngine::loop_main() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (!loops_exit_) {
    try {
      // Look again soon while stopping or draining (connections finishing their last request
      // leave the registry) and while tasks wait for a worker (the pool may have to grow).
      const bool hurry = stopping_ || draining_ || pool_tasks_waiting_;
      const int count = ::epoll_wait(epoll_fd_, events, kMaxEvents, hurry ? 5 : 100);
      if (count < 0 && errno != EINTR) {
        log_throttled(LogLevel::Error, "epoll_wait failed", {{"listener", config_.name}, {"error", errno_text(errno)}},
                      last_error_log_);
      }
      for (int i = 0; i < count; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) {
          uint64_t value;
          [[maybe_unused]] ssize_t ignored = ::read(wake_fd_, &value, sizeof value);
          sweep_requested_ = true;
        } else if (tag == kListenTag) {
          accept_connections();
        } else {
          dispatch(tag);
        }
      }
      housekeeping();
    } catch (const std::exception& e) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}, {"error", e.what()}},
                    last_error_log_);
    } catch (...) {
      log_throttled(LogLevel::Error, "connection event loop error", {{"listener", config_.name}}, last_error_log_);
    }
  }
}

// Timers, the listener's state and shutdown; done by whichever loop thread gets here first.
void ConnectionEngine::housekeeping() {
  std::unique_lock lock(housekeeping_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  pool_tasks_waiting_ = pool_->maintain();
  const auto now = Clock::now();
  if (listening_ && stop_accepting_requested_) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    close_fd(listen_fd_);
    listening_ = false;
  }
  if (listening_ && accept_paused_until_ != Clock::time_point{} && now >= accept_paused_until_) {
    accept_paused_until_ = {};
    arm_listener_locked(true);
  }
  const bool stopping = stopping_.load();
  if (stopping && stop_deadline_ == Clock::time_point::max()) stop_deadline_ = now + std::chrono::seconds(5);
  if (now >= next_sweep_ || stopping || draining_ || sweep_requested_.exchange(false)) {
    sweep(now, stopping);
    next_sweep_ = now + std::chrono::milliseconds(100);
  }
  if (stopping) {
    std::unique_lock registry_lock(registry_mutex_);
    if (connections_.empty() || now >= stop_deadline_) loops_exit_ = true;
  }
}

void ConnectionEngine::arm_listener_locked(bool armed) {
  epoll_event listen_event{};
  listen_event.events = armed ? EPOLLIN | EPOLLONESHOT : 0;
  listen_event.data.u64 = kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &listen_event);
}

bool ConnectionEngine::make_room_for_one_more() {
  {
    std::lock_guard lock(registry_mutex_);
    if (connections_.size() < config_.max_connections) return true;
  }
  // Drop the parked connection least likely to matter: one that never finished its TLS
  // handshake, else the longest idle keep-alive connection. Connections with a request in
  // progress are never dropped for a newcomer.
  ConnectionPtr victim;
  int victim_rank = 0;
  Clock::time_point victim_since{};
  for (const auto& connection : snapshot()) {
    std::lock_guard lock(connection->handover);
    if (!connection->parked || connection->closed) continue;
    int rank = 0;
    Clock::time_point since = connection->accepted_at;
    if (connection->ssl != nullptr && !connection->tls_established) rank = 2;
    else if (connection->input.empty() && connection->output.empty()) rank = 1, since = connection->deadline;
    if (rank == 0) continue;
    if (!victim || rank > victim_rank || (rank == victim_rank && since < victim_since)) {
      victim = connection;
      victim_rank = rank;
      victim_since = since;
    }
  }
  if (!victim) return false;
  {
    std::lock_guard lock(victim->handover);
    if (!victim->parked || victim->closed) return false;
  }
  close_connection(*victim, false);
  ++evicted_;
  return true;
}

void ConnectionEngine::accept_connections() {
  std::lock_guard housekeeping_lock(housekeeping_mutex_);
  if (!listening_) return;
  for (int accepted_now = 0; accepted_now < 256; ++accepted_now) {
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) break;
      // Out of descriptors or memory: stop polling the listener for a moment instead of spinning.
      log_throttled(LogLevel::Warn, "accept failed; pausing accepts",
                    {{"listener", config_.name}, {"error", errno_text(error)}}, last_error_log_);
      accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      return;  // the listener stays disarmed until housekeeping re-arms it
    }
    if (draining_ || !make_room_for_one_more()) {
      ::close(fd);
      log_throttled(LogLevel::Warn, "connection limit reached; refusing connections",
                    {{"listener", config_.name}, {"max_connections", config_.max_connections}}, last_capacity_log_);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    auto connection = std::make_shared<Connection>();
    connection->id = next_id_++;
    connection->fd = fd;
    connection->accepted_at = Clock::now();
    connection->framer = RequestFramer(config_.limits);
    describe_address(peer, connection->remote_ip, connection->remote_port);
    sockaddr_storage local{};
    socklen_t local_length = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0)
      describe_address(local, connection->local_ip, connection->local_port);
    if (config_.tls != nullptr) {
      ERR_clear_error();
      connection->ssl = SSL_new(config_.tls);
      if (connection->ssl == nullptr || SSL_set_fd(connection->ssl, fd) != 1) {
        log_throttled(LogLevel::Error, "cannot create a TLS session", {{"error", openssl_errors()}}, last_error_log_);
        continue;  // the destructor closes fd
      }
      SSL_set_accept_state(connection->ssl);
    } else {
      connection->tls_established = true;
    }
    {
      std::lock_guard lock(registry_mutex_);
      connections_.emplace(connection->id, connection);
    }
    ++accepted_;
    // The first bytes (ClientHello or request) must come within the read timeout.
    std::lock_guard lock(connection->handover);
    connection->parked = true;
    connection->deadline = connection->accepted_at + config_.read_timeout;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    event.data.u64 = connection->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      connection->parked = false;
      connection->closed = true;
      close_fd(connection->fd);
      remove_from_registry(*connection);
    }
  }
  arm_listener_locked(true);
}

void ConnectionEngine::dispatch(uint64_t id) {
  ConnectionPtr connection;
  {
    std::lock_guard lock(registry_mutex_);
    const auto found = connections_.find(id);
    if (found == connections_.end()) return;  // closed since the event was queued
    connection = found->second;
  }
  {
    std::lock_guard lock(connection->handover);
    if (!connection->parked || connection->closed) return;
    connection->parked = false;
  }
  if (stopping_) return close_connection(*connection, false);
  serve(connection, false);
}

void ConnectionEngine::sweep(Clock::time_point now, bool stopping) {
  for (const auto& connection : snapshot()) {
    bool close = false;
    bool timed_out = false;
    {
      std::lock_guard lock(connection->handover);
      if (connection->closed) continue;
      if (!connection->parked) {
        // Being served right now. When stopping, unblock it: its reads and writes fail.
        if (stopping && connection->fd >= 0) ::shutdown(connection->fd, SHUT_RDWR);
        continue;
      }
      const bool idle = connection->tls_established && connection->input.empty() && connection->output.empty();
      const bool handshaking = !connection->tls_established;
      if (stopping || (draining_ && (idle || handshaking))) close = true;
      else if (now >= connection->deadline) close = true, timed_out = !connection->lingering;
    }
    if (!close) continue;
    if (timed_out) ++timed_out_;
    close_connection(*connection, !timed_out);
  }
}

void ConnectionEngine::park(const ConnectionPtr& connection, uint32_t events, Clock::time_point deadline) {
  std::lock_guard lock(connection->handover);
  if (connection->closed) return;
  connection->deadline = deadline;
  epoll_event event{};
  event.events = events | EPOLLRDHUP | EPOLLONESHOT;
  event.data.u64 = connection->id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection->fd, &event) != 0) {
    // Cannot wait for it: give the connection up (closed by the sweep, which sees it parked
    // with a deadline in the past).
    connection->deadline = Clock::time_point{};
  }
  connection->parked = true;
  if (draining_) wake();  // let housekeeping close it if it is idle now
}

// Reads until `frame` (scanned as bytes arrive) is complete or the socket has nothing more.
// Reading stops at a complete request, so a client pipelining without end is held back by TCP
// flow control instead of filling the buffer.
ConnectionEngine::ReadResult ConnectionEngine::read_request(Connection& connection, RequestFrame& frame) {
  const size_t capacity = config_.limits.max_head_bytes * 2 + config_.limits.max_body_bytes * 2;
  char chunk[16 * 1024];
  ReadResult result = ReadResult::Full;
  while (connection.input.size() < capacity) {
    const size_t want = std::min(sizeof chunk, capacity - connection.input.size());
    ssize_t n;
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int got = SSL_read(connection.ssl, chunk, static_cast<int>(want));
      if (got > 0) {
        n = got;
      } else {
        const int reason = SSL_get_error(connection.ssl, got);
        if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE) result = ReadResult::WouldBlock;
        else if (reason == SSL_ERROR_ZERO_RETURN || (reason == SSL_ERROR_SYSCALL && errno == 0)) result = ReadResult::Eof;
        else result = ReadResult::Error;
        ERR_clear_error();
        break;
      }
    } else {
      n = ::recv(connection.fd, chunk, want, 0);
      if (n == 0) {
        result = ReadResult::Eof;
        break;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        result = (errno == EAGAIN || errno == EWOULDBLOCK) ? ReadResult::WouldBlock : ReadResult::Error;
        break;
      }
    }
    if (connection.input.empty()) connection.request_started_at = Clock::now();
    connection.input.append(chunk, static_cast<size_t>(n));
    frame = connection.framer.scan(connection.input);
    if (frame.state != RequestFrame::State::Incomplete) {
      result = ReadResult::Framed;
      break;
    }
  }
  account_input(connection);
  return result;
}

void ConnectionEngine::queue_output(Connection& connection, std::string text, Connection::AfterOutput after) {
  connection.output = std::move(text);
  connection.output_sent = 0;
  connection.after_output = after;
  connection.output_deadline = Clock::now() + config_.write_timeout;
}

// Writes what the socket takes now; never waits (the caller parks the connection instead).
ConnectionEngine::Flush ConnectionEngine::flush_output(Connection& connection) {
  while (connection.output_sent < connection.output.size()) {
    const char* data = connection.output.data() + connection.output_sent;
    const size_t size = connection.output.size() - connection.output_sent;
    if (connection.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(connection.ssl, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) {
        connection.output_sent += static_cast<size_t>(n);
        continue;
      }
      const int reason = SSL_get_error(connection.ssl, n);
      ERR_clear_error();
      if (reason == SSL_ERROR_WANT_WRITE) return Flush::WantWrite;
      if (reason == SSL_ERROR_WANT_READ) return Flush::WantRead;
      return Flush::Failed;
    }
    const ssize_t n = ::send(connection.fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Flush::WantWrite : Flush::Failed;
    }
    connection.output_sent += static_cast<size_t>(n);
  }
  return Flush::Done;
}

// Answers one request (complete, too large or unusable) into connection.output; says what
// becomes of the connection once that is written.
ConnectionEngine::AfterAnswer ConnectionEngine::answer(Connection& connection, const RequestFrame& frame,
                                                       bool peer_finished) {
  if (frame.state == RequestFrame::State::Invalid) {
    if (metrics_ != nullptr) metrics_->count_http_error(frame.error_status);
    connection.output = canned_response(frame.error_status, frame.error);
    return AfterAnswer::Close;
  }
  const bool too_large = frame.state == RequestFrame::State::TooLarge;
  std::string_view request = connection.input;
  if (!too_large) request = request.substr(0, frame.total_bytes);

  if (config_.direct_handler) {
    if (std::optional<DirectRequest> direct = direct_request(frame, request)) {
      direct->close = direct->close || peer_finished || draining_;
      direct->remote_ip = connection.remote_ip;
      direct->remote_port = connection.remote_port;
      if (config_.direct_handler(*direct, connection.output)) {
        ++requests_;
        ++direct_requests_;
        ++connection.requests;
        return direct->close ? AfterAnswer::Close : AfterAnswer::KeepOpen;
      }
    }
  }

  RequestContext context;
  context.body_too_large = too_large;
  current_request = &context;
  BufferedStream stream(request, connection);
  bool connection_closed = false;
  bool served = false;
  try {
    served = router_.serve(stream, too_large || peer_finished || draining_, connection_closed);
  } catch (...) {
    served = false;  // httplib catches handler exceptions itself; this is a last resort
  }
  current_request = nullptr;
  ++requests_;
  ++connection.requests;
  connection.output = std::move(stream.output());
  if (connection.output.empty()) return AfterAnswer::Abort;
  if (!served || connection_closed || context.close_after_response || too_large || peer_finished || draining_)
    return AfterAnswer::Close;
  return AfterAnswer::KeepOpen;
}

void ConnectionEngine::start_lingering(const ConnectionPtr& connection) {
  Connection& c = *connection;
  if (c.ssl != nullptr && c.tls_established) {
    ERR_clear_error();
    SSL_shutdown(c.ssl);  // close_notify after the response
    ERR_clear_error();
  }
  ::shutdown(c.fd, SHUT_WR);
  c.lingering = true;
  c.input.clear();
  c.input.shrink_to_fit();
  account_input(c);
  c.request_started_at = Clock::now();
  continue_lingering(connection);
}

void ConnectionEngine::continue_lingering(const ConnectionPtr& connection) {
  constexpr size_t kMaxDiscarded = 64u << 20;
  const auto linger_for = std::min<std::chrono::milliseconds>(config_.read_timeout, std::chrono::seconds(2));
  Connection& c = *connection;
  char sink[16 * 1024];
  while (c.lingering_discarded < kMaxDiscarded) {
    const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);  // raw bytes: nothing is decrypted any more
    if (n > 0) {
      c.lingering_discarded += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return park(connection, EPOLLIN, c.request_started_at + linger_for);
    break;  // EOF or error
  }
  close_connection(c, false);
}

void ConnectionEngine::serve(const ConnectionPtr& connection, bool on_worker) {
  try {
    serve_rounds(connection, on_worker);
  } catch (const std::exception& e) {
    log_throttled(LogLevel::Error, "connection error", {{"listener", config_.name}, {"error", e.what()}}, last_error_log_);
    close_connection(*connection, false);
  } catch (...) {
    close_connection(*connection, false);
  }
}

// The connection's state machine, run until it has to wait for the client: handshake, write
// what is pending, read, answer every complete request. Nothing here blocks; waiting is always
// parking in epoll with a deadline.
void ConnectionEngine::serve_rounds(const ConnectionPtr& connection, bool on_worker) {
  using AfterOutput = Connection::AfterOutput;
  Connection& c = *connection;
  for (int round = 0;; ++round) {
    if (stopping_) return close_connection(c, false);
    if (c.lingering) return continue_lingering(connection);
    if (!c.tls_established) {
      ERR_clear_error();
      const int done = SSL_do_handshake(c.ssl);
      if (done == 1) {
        c.tls_established = true;
      } else {
        const int reason = SSL_get_error(c.ssl, done);
        ERR_clear_error();
        const auto deadline = c.accepted_at + config_.read_timeout;
        if (reason == SSL_ERROR_WANT_READ) return park(connection, EPOLLIN, deadline);
        if (reason == SSL_ERROR_WANT_WRITE) return park(connection, EPOLLOUT, deadline);
        return close_connection(c, false);  // not TLS, or a failed handshake
      }
    }

    if (!c.output.empty()) {
      switch (flush_output(c)) {
        case Flush::WantWrite: return park(connection, EPOLLOUT, c.output_deadline);
        case Flush::WantRead: return park(connection, EPOLLIN, c.output_deadline);
        case Flush::Failed: return close_connection(c, false);
        case Flush::Done: break;
      }
      c.output.clear();
      if (c.output.capacity() > 64 * 1024) c.output.shrink_to_fit();
      c.output_sent = 0;
      if (c.after_output == AfterOutput::Close) return close_connection(c, true);
      if (c.after_output == AfterOutput::Linger) return start_lingering(connection);
      if (round >= 32) {
        // A client pipelining many requests yields the thread now and then: parked for
        // writability, it is handed out again at once, behind the connections already waiting.
        return park(connection, EPOLLIN | EPOLLOUT, Clock::now() + config_.read_timeout);
      }
      if (c.input.empty() && (c.ssl == nullptr || SSL_has_pending(c.ssl) == 0)) {
        // The usual end of a round trip: nothing buffered, and a read now would almost always
        // find nothing either. Waiting in epoll costs no read(2); a request that did arrive
        // meanwhile makes the connection ready at once.
        if (draining_) return close_connection(c, true);
        return park(connection, EPOLLIN, Clock::now() + config_.idle_timeout);
      }
    }

    RequestFrame frame = c.framer.scan(c.input);  // a pipelined request may be here already
    bool peer_finished = false;
    if (frame.state == RequestFrame::State::Incomplete) {
      const ReadResult read = read_request(c, frame);
      if (read == ReadResult::Error) return close_connection(c, false);
      peer_finished = read == ReadResult::Eof;
      if (frame.state == RequestFrame::State::Incomplete) {
        if (read == ReadResult::Full) frame.state = RequestFrame::State::TooLarge;
        else if (peer_finished) return close_connection(c, false);
      }
    }
    if (frame.state == RequestFrame::State::Incomplete) {
      if (c.input.empty()) {
        if (draining_) return close_connection(c, true);
        return park(connection, EPOLLIN, Clock::now() + config_.idle_timeout);
      }
      if (buffered_bytes_.load() > config_.max_buffered_bytes) {
        if (metrics_ != nullptr) metrics_->count_http_error(503);
        queue_output(c, canned_response(503, "server busy: too many request bytes in flight"), AfterOutput::Linger);
        continue;
      }
      if (frame.head_complete && frame.expects_continue && !c.continue_sent) {
        c.continue_sent = true;
        queue_output(c, "HTTP/1.1 100 Continue\r\n\r\n", AfterOutput::KeepServing);
        continue;
      }
      return park(connection, EPOLLIN, c.request_started_at + config_.read_timeout);
    }
    if (frame.state == RequestFrame::State::Complete && frame.total_bytes > config_.inline_request_bytes && !on_worker) {
      // A large review: decoding it would hold up this loop's other connections.
      ++pooled_requests_;
      if (!pool_->submit([this, connection] { serve(connection, true); })) close_connection(c, false);
      return;
    }

    const AfterAnswer after = answer(c, frame, peer_finished);
    if (after == AfterAnswer::Abort) return close_connection(c, false);
    c.output_sent = 0;
    c.output_deadline = Clock::now() + config_.write_timeout;
    if (frame.state != RequestFrame::State::Complete && !peer_finished) {
      // The client may still be sending the body we refused: linger so it reads the answer.
      c.after_output = AfterOutput::Linger;
    } else if (after == AfterAnswer::Close) {
      c.after_output = AfterOutput::Close;
    } else {
      c.after_output = AfterOutput::KeepServing;
      c.input.erase(0, frame.total_bytes);
      if (c.input.capacity() > 64 * 1024 && c.input.size() < 16 * 1024) c.input.shrink_to_fit();
      account_input(c);
      c.framer.reset();
      c.continue_sent = false;
      if (!c.input.empty()) c.request_started_at = Clock::now();
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HttpsServer

namespace {

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// "application/json", optionally with parameters ("; charset=utf-8"), any case.
bool is_json_content_type(std::string_view value) {
  value = value.substr(0, value.find(';'));
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  constexpr std::string_view kJson = "application/json";
  if (value.size() != kJson.size()) return false;
  for (size_t i = 0; i < value.size(); ++i)
    if (ascii_lower(value[i]) != kJson[i]) return false;
  return true;
}

}  // namespace

struct HttpsServer::Impl {
  Impl(HttpsServerOptions options_in, const AdmissionService& admission_in, const PolicyHolder& policies_in,
       Metrics* metrics_in, Logger* logger_in)
      : options(std::move(options_in)),
        admission(admission_in),
        policies(policies_in),
        metrics(metrics_in),
        logger(logger_in) {}

  ~Impl() {
    stop();
    if (tls_context != nullptr) SSL_CTX_free(tls_context);
  }

  void reject(httplib::Response& res, int status, std::string_view reason) {
    res.status = status;
    res.set_content(std::string(reason) + "\n", "text/plain");
    if (metrics != nullptr) metrics->count_http_error(status);
  }

  void set_up_main_routes();
  void set_up_metrics_routes();
  void handle_admission(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& read_body);
  bool answer_directly(const DirectRequest& request, std::string& response);
  void log_request(std::string_view method, std::string_view path, int status, std::string_view remote) const;
  std::string not_ready_reason() const;
  void stop();

  const HttpsServerOptions options;
  const AdmissionService& admission;
  const PolicyHolder& policies;
  Metrics* metrics;
  Logger* logger;

  IdentityHolder identity;
  SSL_CTX* tls_context = nullptr;
  std::atomic<bool> shutting_down{false};
  int port = 0;
  int metrics_port = 0;

  RequestRouter main_router;
  RequestRouter metrics_router;
  std::unique_ptr<ConnectionEngine> main_engine;
  std::unique_ptr<ConnectionEngine> metrics_engine;
  std::mutex lifecycle_mutex;
  bool stopped = false;
};

// The direct path for admission requests: the same checks and answer as handle_admission
// behind httplib, without httplib's parsing. Declines what only httplib handles (other paths,
// a content type to refuse with 415).
bool HttpsServer::Impl::answer_directly(const DirectRequest& request, std::string& response) {
  Endpoint endpoint;
  if (request.path == "/validate") endpoint = Endpoint::Validate;
  else if (request.path == "/mutate") endpoint = Endpoint::Mutate;
  else return false;
  if (!is_json_content_type(request.content_type)) return false;
  const HttpReply reply = admission.handle(endpoint, request.body);
  write_http_response(reply.status, reply.content_type, reply.body, request.close, options.idle_timeout, response);
  if (logger != nullptr && logger->enabled(LogLevel::Debug))
    log_request("POST", request.path, reply.status,
                std::string(request.remote_ip) + ":" + std::to_string(request.remote_port));
  return true;
}

void HttpsServer::Impl::log_request(std::string_view method, std::string_view path, int status,
                                    std::string_view remote) const {
  logger->debug("http request", {{"method", method}, {"path", path}, {"status", status}, {"remote", remote}});
}

std::string HttpsServer::Impl::not_ready_reason() const {
  if (shutting_down.load()) return "shutting down";
  if (!policies.get()) return "no policy loaded";
  if (!identity.load()) return "no serving certificate loaded";
  return "";
}

void HttpsServer::Impl::handle_admission(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& read_body) {
  RequestContext* context = current_request;
  if (context != nullptr && context->body_too_large) {
    context->close_after_response = true;
    return reject(res, 413, "request body larger than " + std::to_string(options.max_body_bytes) + " bytes");
  }
  if (!is_json_content_type(req.get_header_value("Content-Type")))
    return reject(res, 415, "Content-Type must be application/json");
  std::string body;
  const size_t announced = req.get_header_value<uint64_t>("Content-Length");
  body.reserve(std::min(announced, options.max_body_bytes));
  bool too_large = false;
  const bool complete = read_body([&](const char* data, size_t length) {
    if (body.size() + length > options.max_body_bytes) {
      too_large = true;
      return false;
    }
    body.append(data, length);
    return true;
  });
  if (!complete) {
    if (context != nullptr) context->close_after_response = true;
    if (too_large) return reject(res, 413, "request body larger than " + std::to_string(options.max_body_bytes) + " bytes");
    return reject(res, 400, "cannot read the request body");
  }
  HttpReply reply = admission.handle(endpoint, body);
  res.status = reply.status;
  res.body = std::move(reply.body);
  res.set_header("Content-Type", reply.content_type);
}

void HttpsServer::Impl::set_up_main_routes() {
  main_router.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool admission_path = req.path == "/validate" || req.path == "/mutate";
    const bool probe_path = req.path == "/healthz" || req.path == "/readyz";
    if (admission_path && req.method != "POST") {
      res.set_header("Allow", "POST");
      reject(res, 405, "method not allowed; use POST");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (probe_path && req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      reject(res, 405, "method not allowed; use GET");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!admission_path && !probe_path) {
      reject(res, 404, "not found");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  main_router.Post("/validate", [this](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& read_body) {
    handle_admission(Endpoint::Validate, req, res, read_body);
  });
  main_router.Post("/mutate", [this](const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& read_body) {
    handle_admission(Endpoint::Mutate, req, res, read_body);
  });
  main_router.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  main_router.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string reason = not_ready_reason();
    if (reason.empty()) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("not ready: " + reason + "\n", "text/plain");
    }
  });
  main_router.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    if (logger != nullptr) logger->error("request handler failed", {{"path", req.path}, {"error", what}});
    if (metrics != nullptr) metrics->count_internal_error();
    res.status = 500;
    res.set_content("internal error\n", "text/plain");
  });
  main_router.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (logger != nullptr && logger->enabled(LogLevel::Debug))
      log_request(req.method, req.path, res.status, req.remote_addr + ":" + std::to_string(req.remote_port));
  });
  main_router.set_keep_alive_timeout(std::max<time_t>(1, options.idle_timeout.count() / 1000));
  main_router.set_keep_alive_max_count(1000000);
  main_router.set_payload_max_length(options.max_body_bytes);
}

void HttpsServer::Impl::set_up_metrics_routes() {
  metrics_router.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.path != "/metrics" && req.path != "/healthz") {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("method not allowed; use GET\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/healthz") {
      res.set_content("ok\n", "text/plain");
    } else {
      res.set_content(metrics != nullptr ? metrics->serialize() : std::string(),
                      "text/plain; version=0.0.4; charset=utf-8");
    }
    return httplib::Server::HandlerResponse::Handled;
  });
  metrics_router.set_keep_alive_timeout(std::max<time_t>(1, options.idle_timeout.count() / 1000));
  metrics_router.set_keep_alive_max_count(1000000);
}

void HttpsServer::Impl::stop() {
  std::lock_guard lock(lifecycle_mutex);
  if (stopped) return;
  stopped = true;
  shutting_down = true;
  if (main_engine) main_engine->stop();
  if (metrics_engine) metrics_engine->stop();
}

HttpsServer::HttpsServer(HttpsServerOptions options, const AdmissionService& admission, const PolicyHolder& policies,
                         Metrics* metrics, Logger* logger)
    : impl_(std::make_unique<Impl>(std::move(options), admission, policies, metrics, logger)) {}

HttpsServer::~HttpsServer() { stop(); }

void HttpsServer::set_identity(TlsIdentityPtr identity) {
  impl_->identity.store(std::move(identity));
}

TlsIdentityPtr HttpsServer::identity() const { return impl_->identity.load(); }

bool HttpsServer::start(std::string& error) {
  ::signal(SIGPIPE, SIG_IGN);  // a peer closing mid-write must not kill the process
  Impl& s = *impl_;
  std::lock_guard lock(s.lifecycle_mutex);
  if (s.main_engine) {
    error = "server already started";
    return false;
  }
  const auto main_address = parse_listen_address(s.options.listen, error);
  if (!main_address) return false;
  std::optional<ListenAddress> metrics_address;
  if (!s.options.metrics_listen.empty()) {
    metrics_address = parse_listen_address(s.options.metrics_listen, error);
    if (!metrics_address) return false;
  }
  s.tls_context = create_tls_context(&s.identity, error);
  if (s.tls_context == nullptr) return false;
  s.set_up_main_routes();
  s.set_up_metrics_routes();

  int main_fd = open_listener(*main_address, s.port, error);
  if (main_fd < 0) return false;
  int metrics_fd = -1;
  if (metrics_address) {
    metrics_fd = open_listener(*metrics_address, s.metrics_port, error);
    if (metrics_fd < 0) {
      close_fd(main_fd);
      return false;
    }
  }

  EngineConfig main_config;
  main_config.name = "https";
  main_config.tls = s.tls_context;
  main_config.limits.max_body_bytes = s.options.max_body_bytes;
  main_config.limits.max_head_bytes = s.options.max_head_bytes;
  main_config.read_timeout = s.options.read_timeout;
  main_config.write_timeout = s.options.write_timeout;
  main_config.idle_timeout = s.options.idle_timeout;
  main_config.max_connections = std::max<size_t>(1, s.options.max_connections);
  main_config.event_loops = s.options.event_loops != 0 ? s.options.event_loops : usable_cpus();
  main_config.inline_request_bytes = s.options.inline_request_bytes;
  main_config.core_threads = s.options.worker_threads != 0 ? s.options.worker_threads : 2;
  main_config.max_threads = std::max(main_config.core_threads,
                                     s.options.max_worker_threads != 0 ? s.options.max_worker_threads : size_t{64});
  main_config.max_buffered_bytes = std::max<size_t>(256u << 20, 4 * s.options.max_body_bytes);
  main_config.direct_handler = [&s](const DirectRequest& request, std::string& response) {
    return s.answer_directly(request, response);
  };
  s.main_engine = std::make_unique<ConnectionEngine>(main_config, s.main_router, s.logger, s.metrics);
  if (!s.main_engine->start(main_fd, error)) {
    s.main_engine.reset();
    close_fd(metrics_fd);
    return false;
  }
  if (metrics_fd >= 0) {
    EngineConfig metrics_config = main_config;
    metrics_config.direct_handler = nullptr;
    metrics_config.name = "metrics";
    metrics_config.tls = nullptr;
    metrics_config.limits.max_body_bytes = 64 * 1024;
    metrics_config.max_connections = std::max<size_t>(1, s.options.metrics_max_connections);
    metrics_config.event_loops = 1;
    metrics_config.core_threads = 1;
    metrics_config.max_threads = 4;
    metrics_config.max_buffered_bytes = 16u << 20;
    s.metrics_engine = std::make_unique<ConnectionEngine>(metrics_config, s.metrics_router, s.logger, nullptr);
    if (!s.metrics_engine->start(metrics_fd, error)) {
      s.metrics_engine.reset();
      s.main_engine->stop();
      return false;
    }
  }
  return true;
}

int HttpsServer::port() const { return impl_->port; }
int HttpsServer::metrics_port() const { return impl_->metrics_port; }

bool HttpsServer::ready() const { return impl_->not_ready_reason().empty(); }

void HttpsServer::begin_shutdown() {
  impl_->shutting_down = true;
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (impl_->main_engine) {
    impl_->main_engine->stop_accepting();
    impl_->main_engine->begin_draining();
  }
}

bool HttpsServer::drain(std::chrono::milliseconds limit) {
  ConnectionEngine* engine = nullptr;
  {
    std::lock_guard lock(impl_->lifecycle_mutex);
    engine = impl_->main_engine.get();
  }
  if (engine == nullptr) return true;
  return engine->wait_until_empty(Clock::now() + limit);
}

void HttpsServer::stop() { impl_->stop(); }

bool HttpsServer::shutdown() {
  begin_shutdown();
  const bool drained = drain(impl_->options.grace_period);
  stop();
  return drained;
}

HttpsServer::Stats HttpsServer::stats() const {
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (!impl_->main_engine) return {};
  return impl_->main_engine->stats();
}

}  // namespace gpu_admission::webhook
