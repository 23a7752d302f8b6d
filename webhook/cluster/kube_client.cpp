// The Kubernetes API client (see kube_client.h). GETs (list pages, cache-miss lookups) reuse a
// few keep-alive clients: a fresh one per request cost ~25 ms of CPU loading the CA store and a
// TLS handshake each time. A reused client whose connection turns out to be gone (the API
// server or a load balancer closed it) is dropped and the GET is retried once on a fresh one.
// Watches use a client of their own each, closed with the watch. Credentials are taken per
// request (exec_credentials.h runs the plugin when its credential is due), before any client.
#include "webhook/cluster/kube_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <map>
#include <vector>

#include "webhook/io/text_file.h"
#include "webhook/ops/logger.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr auto kTokenRefresh = std::chrono::seconds(60);
constexpr size_t kMaxErrorBody = 64u << 10;
constexpr size_t kIdleClients = 4;  // kept for GETs; more run at once only with more threads

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof buffer);
  return buffer;
}

// The numeric address of `host` (itself when it is one; the first address DNS gives otherwise,
// "" when none): where to connect when the certificate is checked against tls-server-name.
std::string numeric_address(const std::string& host) {
  unsigned char ignored[sizeof(in6_addr)];
  if (inet_pton(AF_INET, host.c_str(), ignored) == 1 || inet_pton(AF_INET6, host.c_str(), ignored) == 1) return host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = "";
  const void* address = found->ai_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr);
  inet_ntop(found->ai_family, address, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

HttpResult failed(const std::string& error) {
  HttpResult result;
  result.error = error;
  return result;
}

}  // namespace

// A client certificate and key, parsed once; each client's TLS context takes its own reference.
struct KubeClient::ClientCert {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ClientCert() = default;
  ClientCert(const ClientCert&) = delete;
  ClientCert& operator=(const ClientCert&) = delete;
  ~ClientCert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  // Nothing, with `error` set, when the PEM texts are not a certificate and its key.
  static std::shared_ptr<const ClientCert> parse(const std::string& cert_pem, const std::string& key_pem,
                                                 std::string& error) {
    auto pair = std::make_shared<ClientCert>();
    BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    pair->cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    pair->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (pair->cert == nullptr || pair->key == nullptr) {
      error = "cannot be read: " + openssl_error();
      return nullptr;
    }
    if (X509_check_private_key(pair->cert, pair->key) != 1) {
      ERR_clear_error();
      error = "the key does not belong to the certificate";
      return nullptr;
    }
    return pair;
  }
};

struct KubeClient::Tls {
  std::vector<X509*> ca;
  std::shared_ptr<const ClientCert> static_cert;  // the kubeconfig's own client certificate
  std::mutex exec_mutex;                          // the exec plugin's, by generation
  std::shared_ptr<const ClientCert> exec_cert;
  uint64_t exec_generation = 0;
  Logger* logger = nullptr;
  std::chrono::milliseconds exec_timeout{30'000};
  ~Tls() {
    for (X509* cert : ca) X509_free(cert);
  }
};

std::string HttpResult::describe() const {
  if (status == 0) return error.empty() ? "no response" : error;
  std::string text = "HTTP " + std::to_string(status);
  if (!error.empty()) return text + ": " + error;
  if (!body.empty()) text += ": " + body.substr(0, 300);
  return text;
}

void StreamCanceller::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  if (client_ != nullptr) client_->stop();
}

bool StreamCanceller::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

void StreamCanceller::attach(httplib::ClientImpl* client) {
  std::lock_guard lock(mutex_);
  client_ = client;
}

KubeClient::KubeClient(KubeConfig config) : config_(std::move(config)), tls_(std::make_unique<Tls>()) {}
KubeClient::~KubeClient() = default;

void KubeClient::set_logger(Logger* logger) { tls_->logger = logger; }
void KubeClient::set_exec_timeout(std::chrono::milliseconds timeout) { tls_->exec_timeout = timeout; }

bool KubeClient::init(std::string& error) {
  if (!config_.ca_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(config_.ca_pem.data(), static_cast<int>(config_.ca_pem.size()));
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) tls_->ca.push_back(cert);
    BIO_free(bio);
    ERR_clear_error();
    if (tls_->ca.empty()) {
      error = "the certificate authority of " + config_.source + " holds no PEM certificate";
      return false;
    }
  }
  if (!config_.client_cert_pem.empty()) {
    tls_->static_cert = ClientCert::parse(config_.client_cert_pem, config_.client_key_pem, error);
    if (!tls_->static_cert) {
      error = "the client certificate of " + config_.source + ": " + error;
      return false;
    }
  }
  if (!config_.token_file.empty() && bearer_token(true).empty()) {
    error = "the token file " + config_.token_file + " is empty or unreadable";
    return false;
  }
  // As kubectl: a token or client certificate of the user's own wins over its exec plugin.
  const bool static_auth = !config_.token.empty() || !config_.token_file.empty() || tls_->static_cert;
  if (config_.exec && !static_auth) {
    ExecRunOptions options;
    options.timeout = tls_->exec_timeout;
    if (Logger* logger = tls_->logger)
      options.on_stderr = [logger, origin = config_.origin](const std::string& command, const std::string& text) {
        logger->warn("exec credential plugin wrote to its standard error",
                     {{"plugin", command}, {"kubeconfig", origin}, {"stderr", text}});
      };
    exec_ = std::make_unique<ExecCredentials>(*config_.exec, config_.origin, std::move(options));
    const Auth auth = current_auth();
    if (!auth.error.empty()) {
      error = auth.error;
      return false;
    }
  }
  return true;
}

std::string KubeClient::bearer_token(bool force_reload) const {
  if (exec_) {
    const ExecCredentials::Use use = exec_->current();
    return use.credential ? use.credential->token : "";
  }
  if (config_.token_file.empty()) return config_.token;
  std::lock_guard lock(token_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (force_reload || token_.empty() || now - token_read_ >= kTokenRefresh) {
    const TextFile file = read_text_file(config_.token_file, 1u << 20);
    if (file.error.empty() && !trim(file.text).empty()) token_ = trim(file.text);  // else keep the last one
    token_read_ = now;
  }
  return token_;
}

KubeClient::Auth KubeClient::exec_auth(const ExecCredentials::Use& use) const {
  Auth auth;
  auth.generation = use.generation;
  if (!use.credential) {
    auth.error = use.error;
    return auth;
  }
  auth.token = use.credential->token;
  if (use.credential->client_cert_pem.empty()) return auth;
  std::lock_guard lock(tls_->exec_mutex);
  if (!tls_->exec_cert || tls_->exec_generation != use.generation) {
    std::string error;
    auto cert = ClientCert::parse(use.credential->client_cert_pem, use.credential->client_key_pem, error);
    if (!cert) {
      auth.error = config_.origin + ": the client certificate the exec plugin returned " + error;
      return auth;
    }
    tls_->exec_cert = std::move(cert);
    tls_->exec_generation = use.generation;
  }
  auth.cert = tls_->exec_cert;
  return auth;
}

KubeClient::Auth KubeClient::current_auth() const {
  if (exec_) return exec_auth(exec_->current());
  Auth auth;
  auth.token = bearer_token();
  auth.cert = tls_->static_cert;
  return auth;
}

KubeClient::Auth KubeClient::auth_after_unauthorized(const Auth& refused) const {
  if (exec_) return exec_auth(exec_->refresh(refused.generation));
  bearer_token(true);  // the kubelet may have rotated it
  return current_auth();
}

// A 401 is retried once, with credentials fetched again (an exec plugin) or re-read (a token
// file): the request was refused before anything happened, so repeating it is safe.
template <typename Attempt>
HttpResult KubeClient::with_auth(Attempt&& attempt) const {
  Auth auth = current_auth();
  if (!auth.error.empty()) return failed(auth.error);
  HttpResult result = attempt(auth);
  if (result.status == 401 && (exec_ || !config_.token_file.empty())) {
    auth = auth_after_unauthorized(auth);
    if (!auth.error.empty()) return failed(auth.error);
    result = attempt(auth);
  }
  return result;
}

KubeClient::ClientPtr KubeClient::make_client(const Auth& auth, std::chrono::milliseconds connect_timeout,
                                              std::chrono::milliseconds read_timeout, bool keep_alive) const {
  // With tls-server-name the client is made for that name (SNI and the certificate check) and
  // connects to the server's address.
  const std::string& name = config_.tls_server_name.empty() ? config_.host : config_.tls_server_name;
  std::unique_ptr<httplib::SSLClient> client =
      auth.cert != nullptr ? std::make_unique<httplib::SSLClient>(name, config_.port, auth.cert->cert, auth.cert->key)
                           : std::make_unique<httplib::SSLClient>(name, config_.port);
  if (!config_.tls_server_name.empty()) {
    if (const std::string address = numeric_address(config_.host); !address.empty())
      client->set_hostname_addr_map({{name, address}});
  }
  if (!tls_->ca.empty()) {
    X509_STORE* store = X509_STORE_new();
    for (X509* cert : tls_->ca) X509_STORE_add_cert(store, cert);
    client->set_ca_cert_store(store);  // owned by the client's SSL_CTX from here
  }
  client->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
  client->set_keep_alive(keep_alive);
  prepare_request(*client, auth, connect_timeout, read_timeout);
  return client;
}

// What each request sets anew on a client, new or kept: its deadlines, and the bearer token
// (which the kubelet or the exec plugin may have replaced since the client was made).
void KubeClient::prepare_request(httplib::ClientImpl& client, const Auth& auth,
                                 std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds read_timeout) const {
  client.set_connection_timeout(connect_timeout);
  client.set_read_timeout(read_timeout);
  client.set_write_timeout(connect_timeout);
  client.set_bearer_token_auth(auth.token);
}

KubeClient::ClientPtr KubeClient::take_client(const Auth& auth, std::chrono::milliseconds timeout,
                                              bool& reused) const {
  ClientPtr client;
  {
    std::lock_guard lock(idle_mutex_);
    while (!client && !idle_clients_.empty()) {
      auto [cert, kept] = std::move(idle_clients_.back());
      idle_clients_.pop_back();
      if (cert == auth.cert) client = std::move(kept);  // one made with a replaced certificate is dropped
    }
  }
  reused = client != nullptr;
  if (!client) return make_client(auth, timeout, timeout, true);
  prepare_request(*client, auth, timeout, timeout);
  return client;
}

void KubeClient::keep_client(const Auth& auth, ClientPtr client) const {
  std::lock_guard lock(idle_mutex_);
  if (idle_clients_.size() < kIdleClients) idle_clients_.emplace_back(auth.cert, std::move(client));
}

HttpResult KubeClient::get(const std::string& path, std::chrono::milliseconds timeout, size_t max_body) const {
  return with_auth([&](const Auth& auth) { return get_once(auth, path, timeout, max_body); });
}

HttpResult KubeClient::get_once(const Auth& auth, const std::string& path, std::chrono::milliseconds timeout,
                                size_t max_body) const {
  const auto started = std::chrono::steady_clock::now();
  bool reused = false;
  bool answered = false;
  HttpResult result = get_with(auth, take_client(auth, timeout, reused), path, timeout, max_body, answered);
  // A kept connection the server closed meanwhile fails at once, without a response: once more
  // on a fresh client, within what is left of the deadline (never after a slow failure).
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (reused && !answered && spent < timeout / 2)
    result = get_with(auth, make_client(auth, timeout - spent, timeout - spent, true), path, timeout - spent, max_body,
                      answered);
  return result;
}

HttpResult KubeClient::get_with(const Auth& auth, ClientPtr client, const std::string& path,
                                std::chrono::milliseconds timeout, size_t max_body, bool& answered) const {
  HttpResult result;
  answered = false;
  try {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool too_large = false;
    bool late = false;
    const auto response = client->Get(
        (config_.path_prefix + path).c_str(), httplib::Headers{{"Accept", "application/json"}},
        [&](const char* data, size_t size) {
          if (result.body.size() + size > max_body) return !(too_large = true);
          if (std::chrono::steady_clock::now() > deadline) return !(late = true);
          result.body.append(data, size);
          return true;
        });
    result.too_large = too_large;
    if (too_large) result.error = "response body larger than " + std::to_string(max_body) + " bytes";
    else if (late) result.error = "timed out after " + std::to_string(timeout.count()) + " ms";
    else if (!response) result.error = httplib::to_string(response.error());
    answered = static_cast<bool>(response) || too_large || late;
    if (response) result.status = response->status;
    if (!result.error.empty()) result.status = 0;
    if (response && result.error.empty()) keep_client(auth, std::move(client));
  } catch (const std::exception& e) {
    result = {};
    result.error = std::string("request failed: ") + e.what();
  }
  return result;
}

HttpResult KubeClient::send(std::string_view method, const std::string& path, const std::string& body,
                            std::chrono::milliseconds timeout) const {
  return with_auth([&](const Auth& auth) { return send_once(auth, method, path, body, timeout); });
}

HttpResult KubeClient::send_once(const Auth& auth, std::string_view method, const std::string& path,
                                 const std::string& body, std::chrono::milliseconds timeout) const {
  constexpr size_t kMaxAnswer = 1u << 20;
  HttpResult result;
  try {
    bool reused = false;
    auto client = take_client(auth, timeout, reused);
    httplib::Request request;
    request.method = std::string(method);
    request.path = config_.path_prefix + path;
    request.headers = {{"Accept", "application/json"}};
    if (!body.empty()) {
      request.body = body;
      request.set_header("Content-Type", "application/json");
    }
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    if (!client->send(request, response, error)) {
      result.error = httplib::to_string(error);
      return result;
    }
    result.status = response.status;
    result.body = response.body.substr(0, kMaxAnswer);
    keep_client(auth, std::move(client));
  } catch (const std::exception& e) {
    result = {};
    result.error = std::string("request failed: ") + e.what();
  }
  return result;
}

HttpResult KubeClient::stream(const std::string& path, std::chrono::milliseconds idle_timeout,
                              const std::function<bool(const char*, size_t)>& on_data,
                              StreamCanceller* canceller, const std::function<void(int)>& on_status) const {
  return with_auth(
      [&](const Auth& auth) { return stream_once(auth, path, idle_timeout, on_data, canceller, on_status); });
}

HttpResult KubeClient::stream_once(const Auth& auth, const std::string& path, std::chrono::milliseconds idle_timeout,
                                   const std::function<bool(const char*, size_t)>& on_data,
                                   StreamCanceller* canceller,
                                   const std::function<void(int)>& on_status) const {
  HttpResult result;
  try {
    auto client = make_client(auth, std::min(idle_timeout, std::chrono::milliseconds(10'000)), idle_timeout, false);
    if (canceller != nullptr) {
      canceller->attach(client.get());
      if (canceller->cancelled()) {
        canceller->attach(nullptr);
        result.error = "cancelled";
        return result;
      }
    }
    const auto response = client->Get(
        (config_.path_prefix + path).c_str(), httplib::Headers{{"Accept", "application/json"}},
        [&](const httplib::Response& head) {
          result.status = head.status;
          if (on_status) on_status(head.status);
          return true;
        },
        [&](const char* data, size_t size) {
          if (result.status != 200) {
            if (result.body.size() < kMaxErrorBody) result.body.append(data, std::min(size, kMaxErrorBody));
            return true;
          }
          return on_data(data, size);
        });
    if (canceller != nullptr) canceller->attach(nullptr);
    if (!response) result.error = httplib::to_string(response.error());
  } catch (const std::exception& e) {
    if (canceller != nullptr) canceller->attach(nullptr);
    result.error = std::string("request failed: ") + e.what();
  }
  return result;
}

}  // namespace gpu_admission::webhook::cluster
