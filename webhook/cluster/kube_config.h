// Where the Kubernetes API server is and how to authenticate to it: the in-cluster
// service account (token file, CA bundle, KUBERNETES_SERVICE_HOST/_PORT) or a kubeconfig file's
// current context (server, certificate-authority file or -data, token or tokenFile, or a client
// certificate and key, file or -data). Loading never throws; failures are reported as a value
// with a message naming the file and the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpu_admission::webhook::cluster {

struct KubeConfig {
  std::string source;        // "in-cluster service account" or the kubeconfig path and context
  std::string host;          // host name or IP address (IPv6 without brackets)
  int port = 443;
  std::string path_prefix;   // a server URL's path ("" or "/k8s/clusters/c-1"), without trailing '/'
  std::string ca_pem;        // empty: the system trust store
  std::string token;         // a fixed bearer token
  std::string token_file;    // a bearer token re-read when it changes (service account, tokenFile)
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;
};

struct KubeConfigLoad {
  std::optional<KubeConfig> config;
  std::string error;  // set when a source exists but cannot be used
};

// The in-cluster files (defaults: /var/run/secrets/kubernetes.io/serviceaccount) and environment.
struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};

// No config and no error when KUBERNETES_SERVICE_HOST is unset (not in a pod).
KubeConfigLoad load_in_cluster(const InClusterPaths& paths = {});

// The current context of a kubeconfig file. Relative file names in it are resolved against the
// file's directory, as kubectl does.
KubeConfigLoad load_kubeconfig(const std::string& path);

// The same from the text of a kubeconfig (`path` names it in messages and anchors relative files).
KubeConfigLoad parse_kubeconfig(std::string_view text, const std::string& path);

// "https://host:port/prefix" -> host, port, prefix. Only https is accepted.
bool parse_server_url(std::string_view url, KubeConfig& out, std::string& error);

// The URL of `path` on the configured server ("https://10.0.0.1:443/api/v1/namespaces"), how
// logs name the endpoint a cluster-state error came from.
std::string endpoint_url(const KubeConfig& config, std::string_view path);

// Standard base64 (padding optional, whitespace ignored); nullopt when invalid.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace gpu_admission::webhook::cluster
