// `gpu-admission serve`: loads the policy and the serving certificate, starts the
// HTTPS webhook and the metrics listener, reloads policy and certificate when their files change
// or on SIGHUP (a bad new file is logged and counted, the old one stays), and drains on
// SIGTERM/SIGINT: readyz fails at once, new connections are refused, requests in progress are
// answered, and the process exits 0 within the grace period (a second signal cuts it short).
// With cluster state on (--cluster), namespace labels and DRA claims come from the API
// server's list + watch, and readyz waits for the first complete list of each resource.
// Everything serve says goes to stderr as JSON lines, start-up errors included (their msg keeps
// the human-readable text; the exit codes are those of the help text).
#include <signal.h>

#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "certs/certs.h"
#include "policy/base/source.h"
#include "webhook/admission/admission.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/serve_certs.h"
#include "webhook/cluster/cluster_state.h"
#include "webhook/ops/file_watcher.h"
#include "webhook/server/https_server.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/build_info.h"
#include "webhook/ops/metrics.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/io/policy_file.h"
#include "webhook/ops/policy_holder.h"
#include "webhook/ops/rollout_log.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kServeHelp = R"(Usage: gpu-admission serve [--policy FILE] [--tls-cert FILE --tls-key FILE]
                           [--certs self-managed --certs-secret NAME [--certs-namespace NS]
                            --service NAME [--validating-webhook-configuration NAME]
                            [--mutating-webhook-configuration NAME]]
                           [--listen 0.0.0.0:8443] [--metrics-listen 0.0.0.0:9090]
                           [--log-level info] [--max-body-bytes 8388608] [--grace-period 25]
                           [--cluster auto|off|required] [--kubeconfig FILE] [--context NAME]
                           [--enforcement enforce|warn|audit]

Serves POST /validate and /mutate (AdmissionReview admission.k8s.io/v1), GET /healthz and
GET /readyz over TLS 1.2+, and GET /metrics (Prometheus text) over plain HTTP on the metrics
address. Logs are JSON lines on stderr.

The policy file and the certificate pair are reloaded when they change (also when Kubernetes
swaps the ..data symlink of a mounted ConfigMap or Secret) and on SIGHUP; a bad new file is
logged and counted and the previous one stays in use. SIGTERM or SIGINT: readyz fails, new
connections are refused, requests in progress finish, exit 0 within the grace period.

Options:
  --policy FILE           policy file (default: the built-in default policy)
  --tls-cert FILE         serving certificate (PEM, leaf first, chain may follow)
  --tls-key FILE          its private key (PEM, unencrypted, ECDSA or RSA)
                          without both: an in-memory self-signed certificate for localhost
  --certs MODE            files (--tls-cert/--tls-key, reloaded when they change), self-managed, or
                          localhost (in memory, for trying it out); default: files when --tls-cert
                          is given, else localhost
  --certs-secret NAME     self-managed: the Secret keeping the CA and serving certificate; created
                          when absent, renewed when two thirds of a lifetime have passed, the new
                          certificate served without a restart (RBAC: get, create, update on it)
  --certs-namespace NS    its namespace (default: $POD_NAMESPACE)
  --service NAME          self-managed: the webhook's Service (the certificate's DNS names)
  --validating-webhook-configuration NAME, --mutating-webhook-configuration NAME
                          self-managed: the configurations whose caBundle is kept holding the CA
                          (RBAC: get, update on them)
  --listen ADDR           HTTPS address, HOST:PORT or [IPV6]:PORT (default 0.0.0.0:8443)
  --metrics-listen ADDR   metrics address (default 0.0.0.0:9090; empty: no metrics listener)
  --log-level LEVEL       debug, info, warn or error (default info)
  --max-body-bytes N      largest request body accepted (default 8388608; larger: 413)
  --grace-period SECONDS  how long in-flight requests may take on shutdown (default 25)
  --cluster MODE          cluster state (namespace labels, DRA claims) from the API server:
                          auto (default: on when a cluster configuration is found), off, or
                          required (start-up fails without one)
  --kubeconfig FILE       the kubeconfig to reach the API server with; without it, as kubectl:
                          the files of $KUBECONFIG, else ~/.kube/config, else the in-cluster
                          service account (tokens, client certificates and exec plugins)
  --context NAME          the kubeconfig context to use (default: its current-context)
  --enforcement MODE      caps every tenant's mode (spec.enforcement, tenants[].enforcement),
                          also after reloads: audit makes every tenant observe (nothing is
                          denied or patched, all is recorded), warn lets none deny or patch
                          (users are told), enforce leaves the policy's modes as they are
  -h, --help              show this help

Exit codes: 0 stopped by a signal, 1 could not serve (e.g. port in use), 2 bad flags,
unreadable certificate or invalid policy.
)";

// A start-up error: one JSON line on stderr at level error, whatever --log-level says, with the
// exit code it ends the process with. Returns that code.
int startup_error(const std::string& message, int exit_code, Json fields = Json::object()) {
  fields["exit_code"] = exit_code;
  Logger(LogLevel::Error).error("gpu-admission serve: " + message, fields);
  return exit_code;
}

// A policy's problems, one "file:line:col: severity: message" per entry.
Json issue_lines(const PolicyLoad& load) {
  Json lines = Json::array();
  for (const auto& issue : load.issues) lines.push_back(policy::format_issue(issue, load.source));
  return lines;
}

int usage_error(const std::string& message) {
  return startup_error(message + "; run `gpu-admission serve --help` for usage", 2, {{"error", message}});
}

struct ServeOptions {
  std::string policy_path;
  std::string cert_path;
  std::string key_path;
  LogLevel log_level = LogLevel::Info;
  HttpsServerOptions server;
  cluster::ClusterMode cluster_mode = cluster::ClusterMode::Auto;
  std::string kubeconfig_path;
  std::string context;
  PolicyLoadOptions policy_load;  // its enforcement: --enforcement; its time: each load's own
  ServeCertsOptions certs;        // --certs and the self-managed flags
};

std::optional<size_t> parse_size(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<size_t>(c - '0');
  }
  return value;
}

// Returns an error message, empty on success.
std::string parse_serve_flags(const Args& args, ServeOptions& options, bool& help) {
  std::vector<FlagSpec> flags = {{"--policy", "", true},        {"--tls-cert", "", true},
                                 {"--tls-key", "", true},       {"--listen", "", true},
                                 {"--metrics-listen", "", true}, {"--log-level", "", true},
                                 {"--max-body-bytes", "", true}, {"--grace-period", "", true},
                                 {"--cluster", "", true},       {"--kubeconfig", "", true},
                                 {"--context", "", true},       {"--enforcement", "", true},
                                 {"--help", "-h", false}};
  for (FlagSpec& spec : certs_flag_specs()) flags.push_back(std::move(spec));
  const ParsedArgs parsed = parse_args(args, flags);
  if (parsed.error) return *parsed.error;
  if (parsed.has("--help")) {
    help = true;
    return "";
  }
  if (!parsed.positional.empty()) return "unexpected argument \"" + parsed.positional.front() + "\"";
  options.policy_path = parsed.get("--policy");
  if (parsed.has("--policy") && options.policy_path.empty()) return "--policy needs a file name";
  options.cert_path = parsed.get("--tls-cert");
  options.key_path = parsed.get("--tls-key");
  if (options.cert_path.empty() != options.key_path.empty())
    return "--tls-cert and --tls-key must be given together";
  if (std::string error = parse_certs_flags(parsed, !options.cert_path.empty(), options.certs); !error.empty())
    return error;
  options.server.listen = parsed.get("--listen", "0.0.0.0:8443");
  options.server.metrics_listen = parsed.get("--metrics-listen", "0.0.0.0:9090");
  std::string error;
  if (!parse_listen_address(options.server.listen, error)) return "--listen: " + error;
  if (!options.server.metrics_listen.empty() && !parse_listen_address(options.server.metrics_listen, error))
    return "--metrics-listen: " + error;
  if (parsed.has("--log-level")) {
    const auto level = parse_log_level(parsed.get("--log-level"));
    if (!level) return "--log-level must be debug, info, warn or error";
    options.log_level = *level;
  }
  if (parsed.has("--max-body-bytes")) {
    const auto bytes = parse_size(parsed.get("--max-body-bytes"));
    if (!bytes || *bytes < 1024 || *bytes > (size_t{1} << 30))
      return "--max-body-bytes must be a number of bytes between 1024 and 1073741824";
    options.server.max_body_bytes = *bytes;
  }
  if (parsed.has("--grace-period")) {
    const std::string text = parsed.get("--grace-period");
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(seconds) || seconds < 0 ||
        seconds > 3600)
      return "--grace-period must be a number of seconds between 0 and 3600";
    options.server.grace_period = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }
  if (parsed.has("--cluster")) {
    const auto mode = cluster::parse_cluster_mode(parsed.get("--cluster"));
    if (!mode) return "--cluster must be auto, off or required";
    options.cluster_mode = *mode;
  }
  options.kubeconfig_path = parsed.get("--kubeconfig");
  if (parsed.has("--kubeconfig") && options.kubeconfig_path.empty()) return "--kubeconfig needs a file name";
  options.context = parsed.get("--context");
  if (parsed.has("--context") && options.context.empty()) return "--context needs a context name";
  if (parsed.has("--enforcement")) {
    const auto mode = policy::enum_from_name<policy::Enforcement>(policy::kEnforcementNames, parsed.get("--enforcement"));
    if (!mode) return "--enforcement must be enforce, warn or audit";
    options.policy_load.enforcement = *mode;
  }
  return "";
}

// Cluster state per --cluster, --kubeconfig and --context: nullptr when off (said in the log);
// exit_code 2 when it cannot be used (required without a configuration, an unusable kubeconfig).
std::unique_ptr<cluster::ClusterState> start_cluster_state(const ServeOptions& options, Metrics& metrics,
                                                           Logger& logger, int& exit_code) {
  cluster::ClusterConfigChoice choice = cluster::choose_cluster_config(
      options.cluster_mode, cluster::KubeConfigOptions::from_environment(options.kubeconfig_path, options.context));
  if (!choice.error.empty()) {
    exit_code = startup_error("cluster state: " + choice.error, 2, {{"error", choice.error}});
    return nullptr;
  }
  if (!choice.config) {
    logger.warn("cluster state off (" + choice.reason + "): namespaceSelector tenants match no namespace, and a pod "
                "that refers to a ResourceClaim or ResourceClaimTemplate is judged as a GPU pod whose claims cannot be "
                "counted (gpu-cap refuses it where a cap applies)");
    return nullptr;
  }
  const std::string source = choice.config->source;
  const std::string server = choice.config->host + ":" + std::to_string(choice.config->port);
  auto state = std::make_unique<cluster::ClusterState>(std::move(*choice.config), cluster::ClusterOptions{}, &metrics,
                                                       &logger);
  if (std::string error; !state->start(error)) {
    exit_code = startup_error("cluster state: " + error, 2, {{"error", error}, {"source", source}, {"server", server}});
    return nullptr;
  }
  logger.info("cluster state on: listing and watching namespaces, resourceclaims and resourceclaimtemplates; "
              "readyz waits for the first complete lists",
              {{"source", source}, {"server", server}});
  return state;
}

// /validate of the policy ConfigMap: its policy checked as `policy lint` checks a file.
PolicyChecker policy_configmap_checker(const ServeOptions& options) {
  return [enforcement = options.policy_load.enforcement](std::string_view object) {
    ConfigMapPolicyCheck checked = check_configmap_policy(object, {unix_now(), enforcement});
    PolicyCheck out;
    out.errors = std::move(checked.errors);
    out.warnings = std::move(checked.warnings);
    out.key = std::move(checked.key);
    if (checked.load.ok()) out.policy = checked.load.policy->name();
    return out;
  };
}

// The keeper of `--certs self-managed` (null in the other modes), installing into `*serving`;
// exit_code is set when it cannot be made.
std::unique_ptr<cluster::CertKeeper> cert_keeper_for(const ServeOptions& options, HttpsServer* const& serving,
                                                     Logger& logger, Metrics& metrics, int& exit_code) {
  exit_code = 0;
  if (options.certs.mode != CertsMode::SelfManaged) return nullptr;
  const auto kube = cluster::KubeConfigOptions::from_environment(options.kubeconfig_path, options.context);
  return make_cert_keeper(options.certs, kube, serving, logger, metrics, exit_code);
}

// /readyz's extra conditions: the self-managed certificate served, then cluster state in step.
std::function<std::string()> extra_readiness(const cluster::ClusterState* state, const cluster::CertKeeper* keeper) {
  if (!state && !keeper) return nullptr;
  return [state, keeper] {
    std::string reason = keeper ? keeper->not_ready_reason() : std::string();
    return reason.empty() && state ? state->not_ready_reason() : reason;
  };
}

const char* kSelfSignedSource = "self-signed localhost certificate (in memory)";
const char* kPlaceholderSource = "placeholder until the self-managed certificate is loaded (in memory)";

// Everything reloadable, with the reload logic shared by the file watcher and SIGHUP.
class Reloader {
 public:
  Reloader(const ServeOptions& options, PolicyHolder& policies, HttpsServer& server, Metrics& metrics, Logger& logger,
           ExceptionExpiryLog& expiries)
      : options_(options), policies_(policies), server_(server), metrics_(metrics), logger_(logger),
        expiries_(expiries) {}

  void reload_policy(const char* trigger) {
    std::lock_guard lock(mutex_);
    const PolicyLoad load = load_policy_file(options_.policy_path, {unix_now(), options_.policy_load.enforcement});
    if (!load.ok()) {
      metrics_.count_policy_reload(false);
      logger_.error("policy reload failed; keeping the previous policy",
                    {{"source", load.source}, {"trigger", trigger}, {"errors", issue_lines(load)}});
      return;
    }
    metrics_.set_policy(*load.policy);
    policies_.set(load.policy);
    metrics_.count_policy_reload(true);
    Json fields = {{"source", load.source},
                   {"trigger", trigger},
                   {"policy", load.policy->name()},
                   {"hash", load.policy->hash()}};
    fields.update(rollout_fields(*load.policy));
    if (!load.issues.empty()) fields["warnings"] = load.report();
    logger_.info("policy reloaded", fields);
    warn_modes_over_cap(logger_, *load.policy);
    expiries_.policy_in_force(*load.policy, unix_now());
  }

  void reload_certificate(const char* trigger) {
    if (options_.cert_path.empty()) return;  // self-signed: nothing to re-read
    std::lock_guard lock(mutex_);
    std::string error;
    const certs::KeyPair pair = certs::load_key_pair(options_.cert_path, options_.key_path);
    TlsIdentityPtr identity;
    if (pair.ok()) identity = TlsIdentity::from_pem(pair.cert_pem, pair.key_pem, options_.cert_path, error);
    else error = pair.error;
    if (!identity) {
      metrics_.count_certificate_reload(false);
      logger_.error("certificate reload failed; keeping the previous certificate",
                    {{"cert", options_.cert_path}, {"key", options_.key_path}, {"trigger", trigger}, {"error", error}});
      return;
    }
    server_.set_identity(identity);
    metrics_.count_certificate_reload(true);
    metrics_.set_certificate_expiry(static_cast<double>(identity->not_after()));
    logger_.info("certificate reloaded", {{"cert", options_.cert_path},
                                          {"trigger", trigger},
                                          {"serial", identity->serial_hex()},
                                          {"key_type", identity->key_type()},
                                          {"not_after", certs::format_utc(identity->not_after())}});
  }

 private:
  const ServeOptions& options_;
  PolicyHolder& policies_;
  HttpsServer& server_;
  Metrics& metrics_;
  Logger& logger_;
  ExceptionExpiryLog& expiries_;
  std::mutex mutex_;  // one reload at a time (file watcher and SIGHUP threads)
};

// Set by the signal thread, awaited by the main thread.
struct TerminationRequest {
  std::mutex mutex;
  std::condition_variable signalled;
  int signal = 0;
  int count = 0;

  // Records a termination signal; returns how many have come.
  int record(int received) {
    int n;
    {
      std::lock_guard lock(mutex);
      signal = received;
      n = ++count;
    }
    signalled.notify_all();
    return n;
  }
};

// The policy at start-up: an unusable one is fatal (exit 2).
PolicyLoad load_initial_policy(const ServeOptions& options, Logger& logger) {
  PolicyLoad load = load_policy_file(options.policy_path, {unix_now(), options.policy_load.enforcement});
  if (!load.ok()) {
    startup_error("cannot use the policy " + load.source, 2, {{"source", load.source}, {"errors", issue_lines(load)}});
  } else if (!load.issues.empty()) {
    logger.warn("policy warnings", {{"source", load.source}, {"warnings", load.report()}});
  }
  return load;
}

// The serving certificate at start-up: from --tls-cert/--tls-key, else an in-memory self-signed
// one. Null (with the message printed and `exit_code` set) when it cannot be had.
TlsIdentityPtr load_initial_identity(const ServeOptions& options, Logger& logger, int& exit_code) {
  std::string error;
  TlsIdentityPtr identity;
  if (!options.cert_path.empty()) {
    exit_code = 2;
    const Json files = {{"cert", options.cert_path}, {"key", options.key_path}};
    const certs::KeyPair pair = certs::load_key_pair(options.cert_path, options.key_path);
    if (!pair.ok()) {
      Json fields = files;
      fields["error"] = pair.error;
      startup_error(pair.error, exit_code, fields);
      return nullptr;
    }
    identity = TlsIdentity::from_pem(pair.cert_pem, pair.key_pem, options.cert_path, error);
    if (!identity) {
      Json fields = files;
      fields["error"] = error;
      startup_error("cannot use " + options.cert_path + " with " + options.key_path + ": " + error, exit_code, fields);
    }
    return identity;
  }
  exit_code = 1;
  const bool placeholder = options.certs.mode == CertsMode::SelfManaged;
  const certs::KeyPair pair = certs::generate_localhost_pair();
  if (pair.ok())
    identity = TlsIdentity::from_pem(pair.cert_pem, pair.key_pem, placeholder ? kPlaceholderSource : kSelfSignedSource,
                                     error);
  else error = pair.error;
  if (!identity) {
    startup_error("cannot generate a self-signed certificate: " + error, exit_code, {{"error", error}});
    return nullptr;
  }
  // Self-managed: answered until the Secret's certificate is in (readyz fails meanwhile).
  if (placeholder) return identity;
  logger.warn("no --tls-cert given: serving an in-memory self-signed ECDSA P-256 certificate for localhost "
              "(for trying gpu-admission out; clients must skip verification or trust it explicitly)",
              {{"not_after", certs::format_utc(identity->not_after())}, {"serial", identity->serial_hex()}});
  return identity;
}

// A listen address as actually bound (port 0 resolved).
std::string bound_address(const std::string& configured, int port) {
  std::string error;
  auto address = parse_listen_address(configured, error);
  if (!address) return configured;
  address->port = port;
  return address->to_string();
}

void log_serving(Logger& logger, const ServeOptions& options, HttpsServer& server, const PolicyLoad& policy,
                 const TlsIdentity& identity) {
  logger.info("gpu-admission serving",
              {{"version", GPU_ADMISSION_VERSION},
               {"commit", build_info().commit},
               {"listen", bound_address(options.server.listen, server.port())},
               {"metrics_listen", options.server.metrics_listen.empty()
                                      ? Json(nullptr)
                                      : Json(bound_address(options.server.metrics_listen, server.metrics_port()))},
               {"port", server.port()},
               {"metrics_port", server.metrics_port()},
               {"event_loops", server.stats().event_loops},
               {"policy", policy.policy->name()},
               {"policy_hash", policy.policy->hash()},
               {"enforcement", policy::name_of(policy.policy->mode_for(nullptr))},
               {"enforcementCap", rollout_fields(*policy.policy)["enforcementCap"]},
               {"tenantModes", rollout_fields(*policy.policy)["tenants"]},
               {"policy_source", policy.source},
               {"certificate", identity.source()},
               {"certificate_key_type", identity.key_type()},
               {"certificate_serial", identity.serial_hex()},
               {"certificate_not_after", certs::format_utc(identity.not_after())},
               {"max_body_bytes", options.server.max_body_bytes},
               {"grace_period_seconds", options.server.grace_period.count() / 1000.0}});
}

// Blocks until SIGTERM or SIGINT (a second one cuts the remaining requests); SIGHUP reloads.
// Every few seconds meanwhile, `tick` runs (exceptions that expire are logged when they do).
int wait_for_termination(TerminationRequest& termination, const std::function<void()>& tick) {
  std::unique_lock lock(termination.mutex);
  while (!termination.signalled.wait_for(lock, std::chrono::seconds(5), [&] { return termination.count > 0; })) {
    lock.unlock();
    tick();
    lock.lock();
  }
  return termination.signal;
}

// Readyz fails, new connections are refused, in-flight requests finish within the grace period.
void shut_down(int signal, const ServeOptions& options, HttpsServer& server, Logger& logger) {
  const auto stopping_since = std::chrono::steady_clock::now();
  logger.info("shutting down: readyz fails, new connections are refused, in-flight requests finish",
              {{"signal", signal == SIGINT ? "SIGINT" : "SIGTERM"},
               {"grace_period_seconds", options.server.grace_period.count() / 1000.0},
               {"open_connections", server.stats().open_connections}});
  server.begin_shutdown();
  const bool drained = server.drain(options.server.grace_period);
  const HttpsServer::Stats at_end = server.stats();
  server.stop();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopping_since).count();
  logger.info("stopped", {{"drained", drained},
                          {"connections_cut", drained ? 0 : at_end.open_connections},
                          {"shutdown_seconds", std::round(seconds * 1000) / 1000}});
}

// Reloads the policy file and the certificate when they change, through `reloader` once it is set.
void watch_reloaded_files(FileWatcher& watcher, const ServeOptions& options, Reloader* const& reloader) {
  if (!options.policy_path.empty())
    watcher.watch({options.policy_path}, [&reloader] {
      if (reloader) reloader->reload_policy("file change");
    });
  if (!options.cert_path.empty())
    watcher.watch({options.cert_path, options.key_path}, [&reloader] {
      if (reloader) reloader->reload_certificate("file change");
    });
}

}  // namespace

int run_serve(const Args& args) {
  ServeOptions options;
  bool help = false;
  if (const std::string error = parse_serve_flags(args, options, help); !error.empty()) return usage_error(error);
  if (help) {
    std::fputs(kServeHelp, stdout);
    return 0;
  }

  // Before any thread exists, so that only the signal thread receives these.
  SignalWatcher::block_handled_signals();

  Logger logger(options.log_level);
  Metrics metrics;
  PolicyHolder policies;

  // Watches are registered before the files are read, so a change in between is not missed.
  FileWatcher watcher(std::chrono::seconds(1));
  Reloader* reloader_for_watcher = nullptr;  // set once the server exists
  watch_reloaded_files(watcher, options, reloader_for_watcher);

  const PolicyLoad initial_policy = load_initial_policy(options, logger);
  if (!initial_policy.ok()) return 2;
  metrics.set_policy(*initial_policy.policy);
  policies.set(initial_policy.policy);
  warn_modes_over_cap(logger, *initial_policy.policy);
  ExceptionExpiryLog expiries(logger);
  expiries.policy_in_force(*initial_policy.policy, unix_now());
  int exit_code = 0;
  TlsIdentityPtr identity = load_initial_identity(options, logger, exit_code);
  if (!identity) return exit_code;
  metrics.set_certificate_expiry(static_cast<double>(identity->not_after()));

  int cluster_exit_code = 0;
  const std::unique_ptr<cluster::ClusterState> cluster_state =
      start_cluster_state(options, metrics, logger, cluster_exit_code);
  if (cluster_exit_code != 0) return cluster_exit_code;
  HttpsServer* serving = nullptr;  // the self-managed certificates are installed into it once it exists
  const std::unique_ptr<cluster::CertKeeper> cert_keeper = cert_keeper_for(options, serving, logger, metrics, exit_code);
  if (exit_code != 0) return exit_code;
  AdmissionService admission(policies, &metrics, &logger);
  admission.set_policy_checker(policy_configmap_checker(options));
  // Claims, namespace labels and reserved pods, one lookup deadline per review.
  if (cluster_state) admission.set_facts_provider(cluster_state.get());
  options.server.extra_readiness = extra_readiness(cluster_state.get(), cert_keeper.get());
  HttpsServer server(options.server, admission, policies, &metrics, &logger);
  server.set_identity(identity);
  if (std::string error; !server.start(error)) return startup_error(error, 1, {{"error", error}});
  serving = &server;
  if (cert_keeper && !start_cert_keeper(*cert_keeper, options.certs, logger)) return 2;
  Reloader reloader(options, policies, server, metrics, logger, expiries);
  reloader_for_watcher = &reloader;
  log_serving(logger, options, server, initial_policy, *identity);

  TerminationRequest termination;
  SignalWatcher signals(
      [&] {
        logger.info("SIGHUP: reloading policy and certificate");
        reloader.reload_policy("SIGHUP");
        reloader.reload_certificate("SIGHUP");
      },
      [&](int signal) {
        if (termination.record(signal) > 1) {
          logger.warn("second termination signal: cutting the remaining requests", {{"signal", signal}});
          server.stop();
        }
      });
  signals.start();
  watcher.start();
  const int signal = wait_for_termination(termination, [&] { expiries.tick(unix_now()); });
  shut_down(signal, options, server, logger);
  if (cert_keeper) cert_keeper->stop();
  if (cluster_state) cluster_state->stop();
  watcher.stop();
  signals.stop();
  return 0;
}

}  // namespace gpu_admission::webhook
