// A small Kubernetes API client on cpp-httplib's SSLClient and OpenSSL: GET with a
// deadline and a bounded body, and streamed GETs for watches. TLS is verified against the
// configured CA (or the system store); insecure-skip-tls-verify is honoured only when the
// config says so (the caller logs it loudly); tls-server-name is the name checked (and sent as
// SNI) when set. The bearer token of a token file (the in-cluster service account, a kubeconfig
// tokenFile) is re-read every minute and at once after a 401, so a token the kubelet rotates is
// picked up. An exec plugin's token or client certificate (exec_credentials.h) is kept until it
// is about to expire and fetched again after a 401; a request refused with 401 is retried once
// with the new credential, never more. Never throws; transport and credential failures are values.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "webhook/cluster/exec_credentials.h"
#include "webhook/cluster/kube_config.h"

namespace httplib {
class ClientImpl;
}

namespace gpu_admission::webhook {
class Logger;
}

namespace gpu_admission::webhook::cluster {

struct HttpResult {
  int status = 0;      // 0: no response (see error)
  std::string body;    // the body (bounded); for streams only a non-200 body
  std::string error;   // transport error ("connection refused", "timed out", "body too large")
  bool too_large = false;  // the body went past the bound asked for (error says so)
  bool ok() const { return status == 200; }
  std::string describe() const;  // "HTTP 403: ..." or the transport error
};

// Cancels a stream in progress from another thread (shutdown).
class StreamCanceller {
 public:
  void cancel();
  bool cancelled() const;

 private:
  friend class KubeClient;
  void attach(httplib::ClientImpl* client);
  mutable std::mutex mutex_;
  httplib::ClientImpl* client_ = nullptr;
  bool cancelled_ = false;
};

class KubeClient {
 public:
  explicit KubeClient(KubeConfig config);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // Before init(): an exec plugin's standard error becomes a warn line of `logger` (without one
  // it goes to our standard error as it arrives), and how long a plugin run may take (30 s).
  void set_logger(Logger* logger);
  void set_exec_timeout(std::chrono::milliseconds timeout);

  // Checks the CA bundle and client certificate and fetches an exec plugin's credential; false
  // with `error` set when unusable.
  bool init(std::string& error);
  const KubeConfig& config() const { return config_; }
  // The full URL of `path`, for logs (endpoint_url).
  std::string url(std::string_view path) const { return endpoint_url(config_, path); }

  // GET path (relative to the server URL's prefix), the whole exchange within `timeout`, at most
  // `max_body` bytes of body.
  HttpResult get(const std::string& path, std::chrono::milliseconds timeout, size_t max_body = 64u << 20) const;

  // A write: `method` (POST, PUT, DELETE) of a JSON `body` (may be empty) to `path`, the whole
  // exchange within `timeout`; the response body is kept up to 1 MiB (errors are Status objects).
  // Not retried: the caller knows whether its write may be repeated.
  HttpResult send(std::string_view method, const std::string& path, const std::string& body,
                  std::chrono::milliseconds timeout) const;

  // GET path and hand the body to `on_data` as it arrives (a 200 response only; stop by
  // returning false). `idle_timeout` bounds each read. `on_status`, when given, learns the
  // response's status as soon as its head arrives (a watch that opened, before any event).
  HttpResult stream(const std::string& path, std::chrono::milliseconds idle_timeout,
                    const std::function<bool(const char*, size_t)>& on_data, StreamCanceller* canceller,
                    const std::function<void(int)>& on_status = {}) const;

  // The bearer token in use ("" without one).
  std::string bearer_token(bool force_reload = false) const;
  // How often the exec plugin has run (0 without one).
  int exec_runs() const { return exec_ ? exec_->runs() : 0; }

 private:
  struct ClientCert;
  // The credentials of one request: a bearer token and/or a client certificate, and the exec
  // credential's generation (to ask for a new one after a 401 only once).
  struct Auth {
    std::string token;
    std::shared_ptr<const ClientCert> cert;
    uint64_t generation = 0;
    std::string error;
  };
  using ClientPtr = std::unique_ptr<httplib::ClientImpl>;
  Auth current_auth() const;
  Auth auth_after_unauthorized(const Auth& refused) const;
  Auth exec_auth(const ExecCredentials::Use& use) const;
  // Runs `attempt` with the current credentials, and once more with new ones after a 401.
  template <typename Attempt>
  HttpResult with_auth(Attempt&& attempt) const;

  ClientPtr make_client(const Auth& auth, std::chrono::milliseconds connect_timeout,
                        std::chrono::milliseconds read_timeout, bool keep_alive) const;
  void prepare_request(httplib::ClientImpl& client, const Auth& auth, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds read_timeout) const;
  // GETs reuse clients: each keeps its TLS context (the CA store is loaded once, not per
  // request) and its keep-alive connection. A client goes back to the pool only after a clean
  // exchange, and serves again only with the client certificate it was made with; `reused`
  // says whether the one taken had served before.
  ClientPtr take_client(const Auth& auth, std::chrono::milliseconds timeout, bool& reused) const;
  void keep_client(const Auth& auth, ClientPtr client) const;
  HttpResult send_once(const Auth& auth, std::string_view method, const std::string& path, const std::string& body,
                       std::chrono::milliseconds timeout) const;
  HttpResult get_once(const Auth& auth, const std::string& path, std::chrono::milliseconds timeout,
                      size_t max_body) const;
  // One GET on `client`; `answered`: a response (or part of one) came back.
  HttpResult get_with(const Auth& auth, ClientPtr client, const std::string& path, std::chrono::milliseconds timeout,
                      size_t max_body, bool& answered) const;
  HttpResult stream_once(const Auth& auth, const std::string& path, std::chrono::milliseconds idle_timeout,
                         const std::function<bool(const char*, size_t)>& on_data, StreamCanceller* canceller,
                         const std::function<void(int)>& on_status) const;

  KubeConfig config_;
  struct Tls;
  std::unique_ptr<Tls> tls_;
  std::unique_ptr<ExecCredentials> exec_;  // set when the user's exec plugin is what authenticates
  mutable std::mutex token_mutex_;
  mutable std::string token_;
  mutable std::chrono::steady_clock::time_point token_read_{};
  mutable std::mutex idle_mutex_;
  mutable std::vector<std::pair<std::shared_ptr<const ClientCert>, ClientPtr>> idle_clients_;
};

}  // namespace gpu_admission::webhook::cluster
