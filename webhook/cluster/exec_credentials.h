// Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), run as kubectl runs
// them: the command with its args and env, never through a shell, KUBERNETES_EXEC_INFO in its
// environment (spec.interactive false, and spec.cluster when provideClusterInfo), standard input
// from /dev/null (serve and audit have no terminal to lend it), within 30 s, its standard output
// (at most 1 MiB) read as an ExecCredential whose status holds a token or a client certificate
// and key. ExecCredentials keeps the credential until shortly before its expirationTimestamp, or
// until the API server answers 401 to it, and then runs the plugin again; one run at a time.
// Errors name the kubeconfig, context and user: `kubeconfig F: context "c" (user "u"): exec
// plugin "aws" exited 1: ...`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "webhook/cluster/kube_config.h"

namespace gpu_admission::webhook::cluster {

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<int64_t> expires_ms;  // Unix milliseconds; none: kept until a 401
};

// A plugin's standard output read as an ExecCredential of `api_version` (the configured one:
// the plugin must answer in it, as kubectl requires). Nothing on error (`error` says why).
std::optional<ExecCredential> parse_exec_credential(std::string_view text, std::string_view api_version,
                                                    std::string& error);

// KUBERNETES_EXEC_INFO for `exec`: an ExecCredential with spec.interactive false and, when
// provideClusterInfo is set, spec.cluster.
std::string exec_info(const ExecConfig& exec);

struct ExecRunOptions {
  std::chrono::milliseconds timeout{30'000};
  // The plugin's standard error, once it has run (a line in serve's JSON log). Unset: it is
  // written to our standard error as it arrives (audit at a terminal: a login prompt shows).
  std::function<void(const std::string& command, const std::string& text)> on_stderr;
};

// Runs the plugin once. Error (without the origin): `exec plugin "aws" exited 1: <its stderr>`,
// `exec plugin "aws" was not found: <installHint>`, `... did not finish within 30 s`.
std::optional<ExecCredential> run_exec_plugin(const ExecConfig& exec, const ExecRunOptions& options,
                                              std::string& error);

class ExecCredentials {
 public:
  ExecCredentials(ExecConfig exec, std::string origin, ExecRunOptions options = {});

  struct Use {
    std::shared_ptr<const ExecCredential> credential;  // null on error
    uint64_t generation = 0;                            // changes with each credential fetched
    std::string error;                                  // `origin: exec plugin ...`
  };
  // The credential to send now: the kept one unless it expires soon (within a fifth of its
  // lifetime, at most 30 s), else a fresh one. While one caller runs the plugin, others keep
  // using a kept credential that has not expired yet; a failed refresh of one still valid is
  // retried after 5 s at the earliest.
  Use current();
  // The API server refused credential `generation` (401): run the plugin again, unless another
  // caller has already replaced that credential.
  Use refresh(uint64_t refused_generation);
  // How often the plugin has run.
  int runs() const;
  void set_stderr_sink(std::function<void(const std::string&, const std::string&)> sink);

 private:
  Use fetch_serialized(bool forced, uint64_t refused_generation);
  bool fresh_locked(int64_t now_ms) const;

  ExecConfig exec_;
  std::string origin_;
  ExecRunOptions options_;
  std::mutex fetch_mutex_;          // one plugin run at a time
  mutable std::mutex state_mutex_;  // what follows
  std::shared_ptr<const ExecCredential> kept_;
  int64_t fetched_ms_ = 0;
  int64_t retry_after_ms_ = 0;
  uint64_t generation_ = 0;
  bool fetching_ = false;
  int runs_ = 0;
};

}  // namespace gpu_admission::webhook::cluster
