// Where the Kubernetes API server is and how to authenticate to it, found as kubectl finds it
// (`serve` and `audit` share this one loader): `--kubeconfig FILE`, else the files of
// $KUBECONFIG (':'-separated, merged by kubectl's rules: the first file to name a cluster, user
// or context wins, and the first to set current-context), else ~/.kube/config when it exists,
// else the in-cluster service account (token file, CA bundle, KUBERNETES_SERVICE_HOST/_PORT).
// `--context NAME` picks the context instead of current-context. The context's cluster gives the
// server, certificate-authority (file or -data), insecure-skip-tls-verify and tls-server-name;
// its user a token, tokenFile, client certificate and key (files or -data) or an exec credential
// plugin (exec_credentials.h). Loading never throws; failures are values whose message names the
// file, the context and the user.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_admission::webhook::cluster {

// A user's exec credential plugin (client.authentication.k8s.io/v1 or v1beta1), as configured.
struct ExecConfig {
  std::string api_version;       // "client.authentication.k8s.io/v1" or ".../v1beta1"
  std::string command;           // a path (relative ones resolved against the kubeconfig) or a PATH name
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the plugin's environment
  std::string interactive_mode;  // "Never" or "IfAvailable" ("Always" is refused at load)
  std::string install_hint;      // shown when the command is not found
  bool provide_cluster_info = false;
  std::string cluster_json;      // spec.cluster of KUBERNETES_EXEC_INFO (provideClusterInfo), JSON
};

struct KubeConfig {
  std::string source;        // "in-cluster service account" or "FILE (context NAME)"
  std::string origin;        // how credential errors name it: `kubeconfig FILE: context "c" (user "u")`
  std::string host;          // host name or IP address (IPv6 without brackets)
  int port = 443;
  std::string path_prefix;   // a server URL's path ("" or "/k8s/clusters/c-1"), without trailing '/'
  std::string ca_pem;        // empty: the system trust store
  std::string tls_server_name;  // the name the server's certificate is checked against (and SNI)
  std::string token;         // a fixed bearer token
  std::string token_file;    // a bearer token re-read when it changes (service account, tokenFile)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<ExecConfig> exec;  // used only when no token, token file or client certificate is set
  bool insecure_skip_tls_verify = false;
};

struct KubeConfigLoad {
  std::optional<KubeConfig> config;
  std::string error;      // set when a source exists but cannot be used
  std::string searched;   // without config or error: what was looked at ("$KUBECONFIG unset, ...")
};

// The in-cluster files (defaults: /var/run/secrets/kubernetes.io/serviceaccount) and environment.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};

// What the loader looks at: the flags, and the environment as read once at start (tests give
// their own). from_environment() fills kubeconfig_env and home from $KUBECONFIG and $HOME.
struct KubeConfigOptions {
  std::string explicit_path;                  // --kubeconfig (a missing file is an error)
  std::string context;                        // --context ("" : current-context)
  std::optional<std::string> kubeconfig_env;  // $KUBECONFIG; nullopt when unset
  std::string home;                           // $HOME, for ~/.kube/config ("" : none)
  InClusterPaths in_cluster;

  static KubeConfigOptions from_environment(std::string explicit_path, std::string context);
};

// The configuration per the order above. No config and no error when there is none at all
// (`searched` then says what was looked at).
KubeConfigLoad load_cluster_config(const KubeConfigOptions& options);

// No config and no error when KUBERNETES_SERVICE_HOST is unset (not in a pod).
KubeConfigLoad load_in_cluster(const InClusterPaths& paths = {});

// One kubeconfig file, its current context or `context`. Relative file names in it are resolved
// against the file's directory, as kubectl does.
KubeConfigLoad load_kubeconfig(const std::string& path, const std::string& context = "");

// The same from the text of a kubeconfig (`path` names it in messages and anchors relative files).
KubeConfigLoad parse_kubeconfig(std::string_view text, const std::string& path, const std::string& context = "");

// "https://host:port/prefix" -> host, port, prefix. Only https is accepted.
bool parse_server_url(std::string_view url, KubeConfig& out, std::string& error);

// The URL of `path` on the configured server ("https://10.0.0.1:443/api/v1/namespaces"), how
// logs name the endpoint a cluster-state error came from.
std::string endpoint_url(const KubeConfig& config, std::string_view path);

}  // namespace gpu_admission::webhook::cluster
