// A small Kubernetes API client on cpp-httplib's SSLClient and OpenSSL: GET with a
// deadline and a bounded body, and streamed GETs for watches. TLS is verified against the
// configured CA (or the system store); insecure-skip-tls-verify is honoured only when the
// config says so (the caller logs it loudly). The bearer token of a token file (the in-cluster
// service account, a kubeconfig tokenFile) is re-read every minute and at once after a 401, so
// a token the kubelet rotates is picked up. Never throws; transport failures are values.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "webhook/cluster/kube_config.h"

namespace httplib {
class ClientImpl;
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

  // Checks the CA bundle and client certificate; false with `error` set when unusable.
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

 private:
  std::unique_ptr<httplib::ClientImpl> make_client(std::chrono::milliseconds connect_timeout,
                                                   std::chrono::milliseconds read_timeout, bool keep_alive) const;
  void prepare_request(httplib::ClientImpl& client, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds read_timeout) const;
  // GETs reuse clients: each keeps its TLS context (the CA store is loaded once, not per
  // request) and its keep-alive connection. A client goes back to the pool only after a clean
  // exchange; `reused` says whether the one taken had served before.
  std::unique_ptr<httplib::ClientImpl> take_client(std::chrono::milliseconds timeout, bool& reused) const;
  void keep_client(std::unique_ptr<httplib::ClientImpl> client) const;
  HttpResult send_once(std::string_view method, const std::string& path, const std::string& body,
                       std::chrono::milliseconds timeout) const;
  HttpResult get_once(const std::string& path, std::chrono::milliseconds timeout, size_t max_body) const;
  // One GET on `client`; `answered`: a response (or part of one) came back.
  HttpResult get_with(std::unique_ptr<httplib::ClientImpl> client, const std::string& path,
                      std::chrono::milliseconds timeout, size_t max_body, bool& answered) const;
  HttpResult stream_once(const std::string& path, std::chrono::milliseconds idle_timeout,
                         const std::function<bool(const char*, size_t)>& on_data, StreamCanceller* canceller,
                         const std::function<void(int)>& on_status) const;

  KubeConfig config_;
  struct Tls;
  std::unique_ptr<Tls> tls_;
  mutable std::mutex token_mutex_;
  mutable std::string token_;
  mutable std::chrono::steady_clock::time_point token_read_{};
  mutable std::mutex idle_mutex_;
  mutable std::vector<std::unique_ptr<httplib::ClientImpl>> idle_clients_;
};

}  // namespace gpu_admission::webhook::cluster
