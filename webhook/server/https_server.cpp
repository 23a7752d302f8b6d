// The HttpsServer façade: the routes of both ports (admission, probes, metrics), readiness,
// the certificate holder, the direct path's admission answers, and the start and shutdown
// sequences of the two connection engines (connection_engine.h) it runs.
#include "webhook/server/https_server.h"

#include <signal.h>

#include <httplib.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "webhook/server/connection.h"
#include "webhook/server/connection_engine.h"
#include "webhook/server/cpu_budget.h"
#include "webhook/server/direct_path.h"
#include "webhook/server/listen_socket.h"
#include "webhook/server/tls_identity.h"
#include "webhook/ops/error_report.h"

namespace gpu_admission::webhook {

using detail::Clock;
using detail::close_fd;
using detail::ConnectionEngine;
using detail::create_tls_context;
using detail::current_request;
using detail::DirectRequest;
using detail::EngineConfig;
using detail::IdentityHolder;
using detail::adopt_listener;
using detail::open_listeners;
using detail::RequestContext;
using detail::RequestRouter;
using detail::write_http_response;

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

  // An error answer on the main port: counted, and logged (rate limited) with its reason.
  void reject(const httplib::Request& req, httplib::Response& res, int status, std::string_view reason) {
    if (detail::current_request != nullptr) detail::current_request->error_reported = true;
    res.status = status;
    res.set_content(std::string(reason) + "\n", "text/plain");
    if (metrics != nullptr) metrics->count_http_error(status);
    report_request_error(metrics, logger, request_error_for_status(status), reason, [&] {
      return Json{{"status", status},
                  {"method", req.method},
                  {"path", req.path},
                  {"remote", req.remote_addr + ":" + std::to_string(req.remote_port)}};
    });
  }

  void set_up_main_routes();
  void set_up_metrics_routes();
  void handle_admission(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& read_body);
  bool answer_directly(const DirectRequest& request, std::string& response);
  void log_request(std::string_view method, std::string_view path, int status, std::string_view remote) const;
  std::string not_ready_reason() const;
  EngineConfig main_engine_config();
  EngineConfig metrics_engine_config(const EngineConfig& main_config) const;
  std::vector<int> main_listeners(int handed_fd, size_t event_loops, std::string& error);
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
  static_assert(DirectRequest::kBodyPadding >= AdmissionService::kBodyPadding);
  thread_local std::string spare;  // the last reply's body, for its capacity
  HttpReply reply = admission.handle(endpoint, request.body, true, std::move(spare), request.received);
  write_http_response(reply.status, reply.content_type, reply.body, request.close, options.idle_timeout, response);
  if (reply.body.capacity() <= 64 * 1024) spare = std::move(reply.body);
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
  if (options.extra_readiness) return options.extra_readiness();
  return "";
}

void HttpsServer::Impl::handle_admission(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& read_body) {
  RequestContext* context = current_request;
  if (context != nullptr && context->body_too_large) {
    context->close_after_response = true;
    return reject(req, res, 413, "request body larger than " + std::to_string(options.max_body_bytes) + " bytes");
  }
  if (!is_json_content_type(req.get_header_value("Content-Type")))
    return reject(req, res, 415, "Content-Type must be application/json");
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
    if (too_large) return reject(req, res, 413, "request body larger than " + std::to_string(options.max_body_bytes) + " bytes");
    return reject(req, res, 400, "cannot read the request body");
  }
  HttpReply reply = admission.handle(endpoint, body);
  if (context != nullptr && reply.status >= 400) context->error_reported = true;  // by the admission service
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
      reject(req, res, 405, "method not allowed; use POST");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (probe_path && req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      reject(req, res, 405, "method not allowed; use GET");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!admission_path && !probe_path) {
      reject(req, res, 404, "not found");
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
    if (metrics != nullptr) metrics->count_internal_error();
    if (current_request != nullptr) current_request->error_reported = true;
    report_request_error(metrics, logger, RequestErrorKind::EvaluationError, "request handler failed: " + what,
                         [&] { return Json{{"status", 500}, {"method", req.method}, {"path", req.path}}; });
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
// The main (TLS) listener's engine, from the options.
EngineConfig HttpsServer::Impl::main_engine_config() {
  EngineConfig config;
  config.name = "https";
  config.tls = tls_context;
  config.limits.max_body_bytes = options.max_body_bytes;
  config.limits.max_head_bytes = options.max_head_bytes;
  config.read_timeout = options.read_timeout;
  config.write_timeout = options.write_timeout;
  config.idle_timeout = options.idle_timeout;
  config.tls_buffers_idle = options.tls_buffers_idle;
  config.max_connections = std::max<size_t>(1, options.max_connections);
  config.event_loops = options.event_loops != 0 ? options.event_loops : usable_cpus();
  config.inline_request_bytes = options.inline_request_bytes;
  config.core_threads = options.worker_threads != 0 ? options.worker_threads : 2;
  config.max_threads = std::max(config.core_threads,
                                options.max_worker_threads != 0 ? options.max_worker_threads : size_t{64});
  config.max_buffered_bytes = std::max<size_t>(256u << 20, 4 * options.max_body_bytes);
  config.direct_handler = [this](const DirectRequest& request, std::string& response) {
    return answer_directly(request, response);
  };
  return config;
}

// The metrics listener's engine: the main one's timeouts, plain HTTP, small, all through httplib.
EngineConfig HttpsServer::Impl::metrics_engine_config(const EngineConfig& main_config) const {
  EngineConfig config = main_config;
  config.direct_handler = nullptr;
  config.name = "metrics";
  config.tls = nullptr;
  config.limits.max_body_bytes = 64 * 1024;
  config.max_connections = std::max<size_t>(1, options.metrics_max_connections);
  config.event_loops = 1;
  config.core_threads = 1;
  config.max_threads = 4;
  config.max_buffered_bytes = 16u << 20;
  return config;
}

namespace {

// Closes a descriptor handed to start() unless it was passed on.
struct HandedFd {
  int fd;
  ~HandedFd() { detail::close_fd(fd); }
  int release() { return std::exchange(fd, -1); }
};

}  // namespace

// The main port's listening sockets, one per event loop: opened for options.listen, or made from
// the descriptor handed in options.listen_fd.
std::vector<int> HttpsServer::Impl::main_listeners(int handed_fd, size_t event_loops, std::string& error) {
  if (handed_fd >= 0) return adopt_listener(handed_fd, event_loops, port, error);
  const auto address = parse_listen_address(options.listen, error);
  if (!address) return {};
  return open_listeners(*address, event_loops, port, error);
}

bool HttpsServer::start(std::string& error) {
  ::signal(SIGPIPE, SIG_IGN);  // a peer closing mid-write must not kill the process
  Impl& s = *impl_;
  std::lock_guard lock(s.lifecycle_mutex);
  if (s.main_engine) {
    error = "server already started";
    return false;
  }
  HandedFd handed{s.options.listen_fd};
  if (handed.fd < 0 && !parse_listen_address(s.options.listen, error)) return false;
  std::optional<ListenAddress> metrics_address;
  if (!s.options.metrics_listen.empty()) {
    metrics_address = parse_listen_address(s.options.metrics_listen, error);
    if (!metrics_address) return false;
  }
  s.tls_context = create_tls_context(&s.identity, error);
  if (s.tls_context == nullptr) return false;
  s.set_up_main_routes();
  s.set_up_metrics_routes();

  const EngineConfig main_config = s.main_engine_config();
  std::vector<int> main_fds = s.main_listeners(handed.release(), main_config.event_loops, error);
  if (main_fds.empty()) return false;
  std::vector<int> metrics_fds;
  if (metrics_address) {
    metrics_fds = open_listeners(*metrics_address, 1, s.metrics_port, error);
    if (metrics_fds.empty()) {
      for (int& fd : main_fds) close_fd(fd);
      return false;
    }
  }

  s.main_engine = std::make_unique<ConnectionEngine>(main_config, s.main_router, s.logger, s.metrics);
  if (!s.main_engine->start(std::move(main_fds), error)) {
    s.main_engine.reset();
    for (int& fd : metrics_fds) close_fd(fd);
    return false;
  }
  if (!metrics_fds.empty()) {
    s.metrics_engine =
        std::make_unique<ConnectionEngine>(s.metrics_engine_config(main_config), s.metrics_router, s.logger, nullptr);
    if (!s.metrics_engine->start(std::move(metrics_fds), error)) {
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
