// The Kubernetes API client (see kube_client.h). GETs (list pages, cache-miss lookups) reuse a
// few keep-alive clients: a fresh one per request cost ~25 ms of CPU loading the CA store and a
// TLS handshake each time. A reused client whose connection turns out to be gone (the API
// server or a load balancer closed it) is dropped and the GET is retried once on a fresh one.
// Watches use a client of their own each, closed with the watch.
#include "webhook/cluster/kube_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <vector>

#include "webhook/io/text_file.h"

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

}  // namespace

struct KubeClient::Tls {
  std::vector<X509*> ca;
  X509* client_cert = nullptr;
  EVP_PKEY* client_key = nullptr;
  ~Tls() {
    for (X509* cert : ca) X509_free(cert);
    X509_free(client_cert);
    EVP_PKEY_free(client_key);
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
    BIO* bio = BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size()));
    tls_->client_cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size()));
    tls_->client_key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (tls_->client_cert == nullptr || tls_->client_key == nullptr) {
      error = "the client certificate or key of " + config_.source + " cannot be read: " + openssl_error();
      return false;
    }
    if (X509_check_private_key(tls_->client_cert, tls_->client_key) != 1) {
      error = "the client key of " + config_.source + " does not belong to its certificate";
      ERR_clear_error();
      return false;
    }
  }
  if (!config_.token_file.empty() && bearer_token(true).empty()) {
    error = "the token file " + config_.token_file + " is empty or unreadable";
    return false;
  }
  return true;
}

std::string KubeClient::bearer_token(bool force_reload) const {
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

std::unique_ptr<httplib::ClientImpl> KubeClient::make_client(std::chrono::milliseconds connect_timeout,
                                                             std::chrono::milliseconds read_timeout,
                                                             bool keep_alive) const {
  std::unique_ptr<httplib::SSLClient> client =
      tls_->client_cert != nullptr
          ? std::make_unique<httplib::SSLClient>(config_.host, config_.port, tls_->client_cert, tls_->client_key)
          : std::make_unique<httplib::SSLClient>(config_.host, config_.port);
  if (!tls_->ca.empty()) {
    X509_STORE* store = X509_STORE_new();
    for (X509* cert : tls_->ca) X509_STORE_add_cert(store, cert);
    client->set_ca_cert_store(store);  // owned by the client's SSL_CTX from here
  }
  client->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
  client->set_keep_alive(keep_alive);
  prepare_request(*client, connect_timeout, read_timeout);
  return client;
}

// What each request sets anew on a client, new or kept: its deadlines, and the bearer token
// (which the kubelet may have rotated since the client was made).
void KubeClient::prepare_request(httplib::ClientImpl& client, std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds read_timeout) const {
  client.set_connection_timeout(connect_timeout);
  client.set_read_timeout(read_timeout);
  client.set_write_timeout(connect_timeout);
  if (const std::string token = bearer_token(); !token.empty()) client.set_bearer_token_auth(token);
}

std::unique_ptr<httplib::ClientImpl> KubeClient::take_client(std::chrono::milliseconds timeout, bool& reused) const {
  std::unique_ptr<httplib::ClientImpl> client;
  {
    std::lock_guard lock(idle_mutex_);
    if (!idle_clients_.empty()) {
      client = std::move(idle_clients_.back());
      idle_clients_.pop_back();
    }
  }
  reused = client != nullptr;
  if (!client) return make_client(timeout, timeout, true);
  prepare_request(*client, timeout, timeout);
  return client;
}

void KubeClient::keep_client(std::unique_ptr<httplib::ClientImpl> client) const {
  std::lock_guard lock(idle_mutex_);
  if (idle_clients_.size() < kIdleClients) idle_clients_.push_back(std::move(client));
}

HttpResult KubeClient::get(const std::string& path, std::chrono::milliseconds timeout, size_t max_body) const {
  HttpResult result = get_once(path, timeout, max_body);
  if (result.status == 401 && !config_.token_file.empty()) {
    bearer_token(true);  // the kubelet may have rotated it
    result = get_once(path, timeout, max_body);
  }
  return result;
}

HttpResult KubeClient::get_once(const std::string& path, std::chrono::milliseconds timeout, size_t max_body) const {
  const auto started = std::chrono::steady_clock::now();
  bool reused = false;
  bool answered = false;
  HttpResult result = get_with(take_client(timeout, reused), path, timeout, max_body, answered);
  // A kept connection the server closed meanwhile fails at once, without a response: once more
  // on a fresh client, within what is left of the deadline (never after a slow failure).
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (reused && !answered && spent < timeout / 2)
    result = get_with(make_client(timeout - spent, timeout - spent, true), path, timeout - spent, max_body, answered);
  return result;
}

HttpResult KubeClient::get_with(std::unique_ptr<httplib::ClientImpl> client, const std::string& path,
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
    if (response && result.error.empty()) keep_client(std::move(client));
  } catch (const std::exception& e) {
    result = {};
    result.error = std::string("request failed: ") + e.what();
  }
  return result;
}

HttpResult KubeClient::send(std::string_view method, const std::string& path, const std::string& body,
                            std::chrono::milliseconds timeout) const {
  HttpResult result = send_once(method, path, body, timeout);
  if (result.status == 401 && !config_.token_file.empty()) {
    bearer_token(true);  // refused before anything was written: safe to repeat
    result = send_once(method, path, body, timeout);
  }
  return result;
}

HttpResult KubeClient::send_once(std::string_view method, const std::string& path, const std::string& body,
                                 std::chrono::milliseconds timeout) const {
  constexpr size_t kMaxAnswer = 1u << 20;
  HttpResult result;
  try {
    bool reused = false;
    auto client = take_client(timeout, reused);
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
    keep_client(std::move(client));
  } catch (const std::exception& e) {
    result = {};
    result.error = std::string("request failed: ") + e.what();
  }
  return result;
}

HttpResult KubeClient::stream(const std::string& path, std::chrono::milliseconds idle_timeout,
                              const std::function<bool(const char*, size_t)>& on_data,
                              StreamCanceller* canceller, const std::function<void(int)>& on_status) const {
  HttpResult result = stream_once(path, idle_timeout, on_data, canceller, on_status);
  if (result.status == 401 && !config_.token_file.empty()) {
    bearer_token(true);
    result = stream_once(path, idle_timeout, on_data, canceller, on_status);
  }
  return result;
}

HttpResult KubeClient::stream_once(const std::string& path, std::chrono::milliseconds idle_timeout,
                                   const std::function<bool(const char*, size_t)>& on_data,
                                   StreamCanceller* canceller,
                                   const std::function<void(int)>& on_status) const {
  HttpResult result;
  try {
    auto client = make_client(std::min(idle_timeout, std::chrono::milliseconds(10'000)), idle_timeout, false);
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
