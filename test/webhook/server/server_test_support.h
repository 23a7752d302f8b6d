// Helpers for the server tests (test_server*.cpp): certificates (ECDSA via certs/, RSA made
// here), a small blocking TLS client that exposes what httplib's client hides (the peer
// certificate, one request at a time on one connection, raw bytes), raw TCP sockets and a
// plain HTTP client over them, an in-process server on 127.0.0.1 port 0, and bounded waiting.
// Loopback only; every wait is bounded by a timeout.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "certs/certs.h"
#include "webhook/admission/admission.h"
#include "webhook/server/https_server.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/policy_holder.h"

namespace server_test {

// Latency bounds in tests prove that nothing waits for a blocked client (which would take
// seconds); under the sanitizers everything runs several times slower, so the bounds stretch.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerSlowdown = 5.0;
#else
inline constexpr double kSanitizerSlowdown = 1.0;
#endif

// A fresh directory under /tmp, removed with everything in it at the end of the scope.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/gpu-admission-server-XXXXXX";
    if (const char* made = ::mkdtemp(pattern)) path = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

using namespace std::chrono_literals;
using gpu_admission::webhook::HttpsServerOptions;

struct Pem {
  std::string cert;
  std::string key;
};

inline std::string serial_of(const std::string& cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  std::string hex;
  if (cert != nullptr) {
    BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
    char* text = BN_bn2hex(serial);
    hex = text;
    OPENSSL_free(text);
    BN_free(serial);
    X509_free(cert);
  }
  ERR_clear_error();
  return hex;
}

inline Pem make_ecdsa_localhost() {
  auto pair = gpu_admission::certs::generate_localhost_pair();
  return {pair.cert_pem, pair.key_pem};
}

// A self-signed RSA-2048 certificate for localhost / 127.0.0.1.
inline Pem make_rsa_localhost() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  unsigned char serial_bytes[16];
  RAND_bytes(serial_bytes, sizeof serial_bytes);
  serial_bytes[0] &= 0x7f;
  BIGNUM* serial = BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -300);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400L * 30);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(cert, key, EVP_sha256());
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  auto text_of = [](BIO* bio) {
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<size_t>(length));
  };
  Pem pem{text_of(cert_bio), text_of(key_bio)};
  BIO_free(cert_bio);
  BIO_free(key_bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

inline gpu_admission::webhook::TlsIdentityPtr identity_of(const Pem& pem) {
  std::string error;
  return gpu_admission::webhook::TlsIdentity::from_pem(pem.cert, pem.key, "test", error);
}

// A valid AdmissionReview for a plain Pod.
inline std::string admission_review(const std::string& uid, const std::string& ns = "default") {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":")" + uid +
         R"(","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":")" +
         ns + R"(","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-)" +
         uid + R"(","namespace":")" + ns + R"("},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})";
}

inline std::string http_request(const std::string& method, const std::string& path, const std::string& body = "",
                                const std::string& content_type = "application/json",
                                const std::string& extra_headers = "") {
  std::string text = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!content_type.empty() && (method == "POST" || !body.empty())) text += "Content-Type: " + content_type + "\r\n";
  if (method == "POST" || !body.empty()) text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  text += extra_headers;
  text += "\r\n";
  return text + body;
}

inline bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// A plain TCP connection to 127.0.0.1:port, or -1. A `source_port` other than 0 is bound first
// (with SO_REUSEADDR): the same four-tuple hashes to the same SO_REUSEPORT listener.
inline int raw_connect(int port, int source_port = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source_port != 0) {
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in source{};
    source.sin_family = AF_INET;
    source.sin_port = htons(static_cast<uint16_t>(source_port));
    source.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Raises the soft descriptor limit as far as allowed; returns the resulting limit.
inline size_t raise_fd_limit(size_t wanted) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min<rlim_t>(wanted, limit.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<size_t>(limit.rlim_cur);
}

struct HttpResponse {
  bool ok = false;  // a complete response was read
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string raw;  // the final response's bytes, head and body
  std::string header(const std::string& name) const {
    auto found = headers.find(name);
    return found == headers.end() ? "" : found->second;
  }
};

// The next response in `buffer`, calling `fill` (which appends to it; false at the end) for more.
// Interim 100 responses are skipped.
inline HttpResponse read_http_response(std::string& buffer, const std::function<bool()>& fill) {
  HttpResponse response;
  while (true) {
    size_t head_end;
    while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return response;
    const std::string head = buffer.substr(0, head_end);
    response.raw = buffer.substr(0, head_end + 4);
    buffer.erase(0, head_end + 4);
    response.status = std::atoi(head.substr(9, 3).c_str());
    response.headers.clear();
    size_t line_start = head.find("\r\n");
    while (line_start != std::string::npos) {
      line_start += 2;
      const size_t line_end = head.find("\r\n", line_start);
      const std::string line = head.substr(line_start, line_end == std::string::npos ? std::string::npos : line_end - line_start);
      line_start = line_end;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      response.headers[name] = value;
    }
    if (response.status == 100) continue;  // interim response
    break;
  }
  const size_t length = static_cast<size_t>(std::atoll(response.header("content-length").c_str()));
  while (buffer.size() < length)
    if (!fill()) return response;
  response.body = buffer.substr(0, length);
  response.raw += response.body;
  buffer.erase(0, length);
  response.ok = true;
  return response;
}

// A plain TCP connection speaking HTTP/1.1 (the metrics port, engine tests), every operation
// bounded by the socket timeouts.
class RawClient {
 public:
  RawClient() = default;
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connect(int port) {
    close();
    fd_ = raw_connect(port);
    return fd_ >= 0;
  }
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  HttpResponse read_response() {
    return read_http_response(buffer_, [this] {
      char chunk[16384];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    });
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// One blocking TLS connection (no certificate verification), every operation bounded by the
// socket timeouts.
class TlsClient {
 public:
  TlsClient() = default;
  ~TlsClient() { close(); }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool connect(int port, std::chrono::milliseconds timeout = 5000ms, int source_port = 0) {
    close();
    fd_ = raw_connect(port, source_port);
    if (fd_ < 0) return false;
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    if (SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      close();
      return false;
    }
    return true;
  }

  // Settings applied by the next connect(): the TLS versions to offer.
  void limit_versions(int min_version, int max_version) {
    min_version_ = min_version;
    max_version_ = max_version;
  }

  bool connect_with_versions(int port) {
    close();
    fd_ = raw_connect(port);
    if (fd_ < 0) return false;
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    if (min_version_) SSL_CTX_set_min_proto_version(ctx_, min_version_);
    if (max_version_) SSL_CTX_set_max_proto_version(ctx_, max_version_);
    SSL_CTX_set_security_level(ctx_, 0);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      close();
      return false;
    }
    return true;
  }

  bool connected() const { return ssl_ != nullptr; }
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }

  std::string peer_serial() const {
    if (ssl_ == nullptr) return "";
    X509* cert = SSL_get1_peer_certificate(ssl_);
    if (cert == nullptr) return "";
    BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
    char* text = BN_bn2hex(serial);
    std::string hex = text;
    OPENSSL_free(text);
    BN_free(serial);
    X509_free(cert);
    return hex;
  }

  std::string protocol() const { return ssl_ ? SSL_get_version(ssl_) : ""; }
  std::string cipher() const { return ssl_ ? SSL_get_cipher_name(ssl_) : ""; }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      if (ssl_ == nullptr) return false;
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  HttpResponse read_response() { return read_http_response(buffer_, [this] { return fill(); }); }

  HttpResponse request(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& content_type = "application/json", const std::string& extra_headers = "") {
    if (!send(http_request(method, path, body, content_type, extra_headers))) return {};
    return read_response();
  }

  // True when the server closed the connection (EOF or reset) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ssl_ == nullptr) return true;
      pollfd waiting{fd_, POLLIN, 0};
      if (::poll(&waiting, 1, 50) > 0) {
        char byte;
        const int n = SSL_read(ssl_, &byte, 1);
        ERR_clear_error();
        if (n <= 0) return true;
      }
    }
    return false;
  }

  void close() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
    ssl_ = nullptr;
    ctx_ = nullptr;
    fd_ = -1;
    buffer_.clear();
  }

 private:
  bool fill() {
    if (ssl_ == nullptr) return false;
    char chunk[16384];
    const int n = SSL_read(ssl_, chunk, sizeof chunk);
    if (n <= 0) {
      ERR_clear_error();
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buffer_;
  int min_version_ = 0;
  int max_version_ = 0;
};

inline int dev_null_fd() {
  static const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  return fd;
}

inline HttpsServerOptions test_options() {
  HttpsServerOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";
  options.worker_threads = 4;
  options.grace_period = 5s;
  return options;
}

// The whole webhook in this process, on 127.0.0.1 with free ports and a fresh certificate.
struct InProcessServer {
  // `log_fd`: where the server logs (at `log_level`); by default nowhere.
  explicit InProcessServer(HttpsServerOptions options = test_options(), bool with_policy = true,
                           bool with_certificate = true, int log_fd = dev_null_fd(),
                           gpu_admission::webhook::LogLevel log_level = gpu_admission::webhook::LogLevel::Error)
      : logger(log_level, log_fd), server(options, admission, policies, &metrics, &logger) {
    if (with_policy) policies.set(gpu_admission::webhook::load_policy_file("").policy);
    if (with_certificate) {
      pem = make_ecdsa_localhost();
      server.set_identity(identity_of(pem));
    }
    started = server.start(start_error);
  }

  int port() const { return server.port(); }

  gpu_admission::webhook::Logger logger;
  gpu_admission::webhook::Metrics metrics;
  gpu_admission::webhook::PolicyHolder policies;
  gpu_admission::webhook::AdmissionService admission{policies, &metrics, &logger};
  gpu_admission::webhook::HttpsServer server;
  Pem pem;
  bool started = false;
  std::string start_error;
};

}  // namespace server_test
