// `serve`'s certificate flags and the start of the self-managed certificates (serve_certs.h).
#include "webhook/cli/serve_certs.h"

#include <cstdlib>

#include "certs/certs.h"

namespace gpu_admission::webhook {
namespace {

// A duration flag in whole seconds (at least `min_seconds`), or an error.
std::string seconds_flag(const ParsedArgs& parsed, const char* flag, long long min_seconds, std::int64_t& out) {
  if (!parsed.has(flag)) return "";
  const auto ms = parse_duration_ms(parsed.get(flag));
  if (!ms || *ms < min_seconds * 1000)
    return std::string(flag) + " must be a duration of at least " + std::to_string(min_seconds) + "s (90s, 10m, 1h)";
  out = *ms / 1000;
  return "";
}

std::string self_managed_flags(const ParsedArgs& parsed, cluster::CertKeeperOptions& keeper) {
  keeper.secret_name = parsed.get("--certs-secret");
  if (!certs::is_dns1123_label(keeper.secret_name))
    return "--certs self-managed needs --certs-secret NAME (a DNS label): the Secret that keeps the certificates";
  keeper.ns = parsed.get("--certs-namespace");
  if (keeper.ns.empty()) {
    const char* env = std::getenv("POD_NAMESPACE");
    keeper.ns = env ? env : "";
  }
  if (!certs::is_dns1123_label(keeper.ns))
    return "--certs self-managed needs the Secret's namespace: --certs-namespace NS, or $POD_NAMESPACE set "
           "(the chart sets it from the downward API)";
  keeper.settings.service = parsed.get("--service");
  keeper.settings.ns = keeper.ns;
  if (!certs::is_dns1035_label(keeper.settings.service))
    return "--certs self-managed needs --service NAME: the webhook's Service, whose DNS names the certificate is for";
  keeper.validating_configuration = parsed.get("--validating-webhook-configuration");
  keeper.mutating_configuration = parsed.get("--mutating-webhook-configuration");
  std::int64_t resync = 0;
  for (std::string error : {seconds_flag(parsed, "--certs-lifetime", 10, keeper.settings.serving_lifetime),
                            seconds_flag(parsed, "--certs-ca-lifetime", 10, keeper.settings.ca_lifetime),
                            seconds_flag(parsed, "--certs-resync", 1, resync)})
    if (!error.empty()) return error;
  if (resync > 0) keeper.resync = std::chrono::seconds(resync);
  if (keeper.settings.serving_lifetime > keeper.settings.ca_lifetime)
    return "--certs-lifetime must not exceed --certs-ca-lifetime";
  return "";
}

}  // namespace

std::vector<FlagSpec> certs_flag_specs() {
  return {{"--certs", "", true},
          {"--certs-secret", "", true},
          {"--certs-namespace", "", true},
          {"--service", "", true},
          {"--validating-webhook-configuration", "", true},
          {"--mutating-webhook-configuration", "", true},
          {"--certs-lifetime", "", true},
          {"--certs-ca-lifetime", "", true},
          {"--certs-resync", "", true}};
}

std::string parse_certs_flags(const ParsedArgs& parsed, bool have_files, ServeCertsOptions& options) {
  const std::string mode = parsed.get("--certs", have_files ? "files" : "localhost");
  if (mode == "files") options.mode = CertsMode::Files;
  else if (mode == "self-managed") options.mode = CertsMode::SelfManaged;
  else if (mode == "localhost") options.mode = CertsMode::Localhost;
  else return "--certs must be files, self-managed or localhost";
  if (options.mode == CertsMode::Files && !have_files) return "--certs files needs --tls-cert and --tls-key";
  if (options.mode != CertsMode::Files && have_files)
    return "--tls-cert and --tls-key are the certificate of --certs files, not of --certs " + mode;
  if (options.mode == CertsMode::SelfManaged) return self_managed_flags(parsed, options.keeper);
  for (const auto& spec : certs_flag_specs())
    if (spec.name != "--certs" && parsed.has(spec.name)) return spec.name + " is a flag of --certs self-managed";
  return "";
}

namespace {

void log_fatal(Logger& logger, const cluster::CertKeeperOptions& keeper, const std::string& message) {
  logger.error("gpu-admission serve: --certs self-managed: " + message,
               {{"error", message}, {"exit_code", 2}, {"secret", keeper.ns + "/" + keeper.secret_name}});
}

}  // namespace

std::unique_ptr<cluster::CertKeeper> make_cert_keeper(const ServeCertsOptions& options,
                                                      const cluster::KubeConfigOptions& kube,
                                                      HttpsServer* const& server, Logger& logger, Metrics& metrics,
                                                      int& exit_code) {
  const cluster::CertKeeperOptions& keeper = options.keeper;
  exit_code = 2;
  cluster::KubeConfigLoad load = cluster::load_cluster_config(kube);
  if (!load.error.empty()) {
    log_fatal(logger, keeper, load.error);
    return nullptr;
  }
  if (!load.config) {
    log_fatal(logger, keeper,
              "the certificates live in a Secret, so the API server must be reachable, but there is no cluster "
              "configuration (" + load.searched + ")");
    return nullptr;
  }
  const std::string secret = keeper.ns + "/" + keeper.secret_name;
  auto install = [&server, secret](const cluster::CertMaterial& material, std::string& error) {
    TlsIdentityPtr identity = TlsIdentity::from_pem(material.cert_pem, material.key_pem, "Secret " + secret, error);
    if (!identity || server == nullptr) return false;
    server->set_identity(std::move(identity));
    return true;
  };
  if (keeper.validating_configuration.empty() && keeper.mutating_configuration.empty())
    logger.warn("self-managed certificates: no --validating-webhook-configuration or --mutating-webhook-configuration "
                "named, so no caBundle is written: put the Secret's ca.crt into them yourself");
  logger.info("self-managed certificates: kept in Secret " + secret + "; readyz waits for them",
              {{"secret", secret},
               {"service", keeper.settings.service},
               {"validating_webhook_configuration", keeper.validating_configuration},
               {"mutating_webhook_configuration", keeper.mutating_configuration},
               {"serving_lifetime_seconds", keeper.settings.serving_lifetime},
               {"ca_lifetime_seconds", keeper.settings.ca_lifetime},
               {"source", load.config->source}});
  exit_code = 0;
  return std::make_unique<cluster::CertKeeper>(std::move(*load.config), keeper, install, &metrics, &logger);
}

bool start_cert_keeper(cluster::CertKeeper& keeper, const ServeCertsOptions& options, Logger& logger) {
  std::string error;
  if (keeper.start(error)) return true;
  log_fatal(logger, options.keeper, error);
  return false;
}

}  // namespace gpu_admission::webhook
