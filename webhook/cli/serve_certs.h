// `serve`'s certificate flags and the self-managed certificates (webhook/cluster/cert_keeper.h):
//   --certs files|self-managed|localhost (default: files with --tls-cert, else localhost)
//   --certs-secret NAME [--certs-namespace NS, else $POD_NAMESPACE] --service NAME
//   [--validating-webhook-configuration NAME] [--mutating-webhook-configuration NAME]
// and, for tests only (not in the help), --certs-lifetime, --certs-ca-lifetime and
// --certs-resync (durations: 90s, 10m, 1h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "webhook/cli/cli_args.h"
#include "webhook/cluster/cert_keeper.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/server/https_server.h"

namespace gpu_admission::webhook {

enum class CertsMode { Files, SelfManaged, Localhost };

struct ServeCertsOptions {
  CertsMode mode = CertsMode::Localhost;
  cluster::CertKeeperOptions keeper;  // self-managed: Secret, Service, configurations, lifetimes
};

// The flags above, for serve's flag table.
std::vector<FlagSpec> certs_flag_specs();

// Reads the flags above; `have_files`: --tls-cert and --tls-key were given. An error message
// naming the flag, "" when fine.
std::string parse_certs_flags(const ParsedArgs& parsed, bool have_files, ServeCertsOptions& options);

// The keeper of the self-managed certificates, not started yet: it installs them into `*server`
// (set before start()) as they come. Null with the message logged and `exit_code` 2 when the API
// server cannot be reached with `kube` (no configuration, an unusable one).
std::unique_ptr<cluster::CertKeeper> make_cert_keeper(const ServeCertsOptions& options,
                                                      const cluster::KubeConfigOptions& kube,
                                                      HttpsServer* const& server, Logger& logger, Metrics& metrics,
                                                      int& exit_code);

// Starts `keeper` (after the server started); false with the message logged (exit code 2).
bool start_cert_keeper(cluster::CertKeeper& keeper, const ServeCertsOptions& options, Logger& logger);

}  // namespace gpu_admission::webhook
