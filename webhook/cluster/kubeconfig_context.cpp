// A merged kubeconfig's chosen context turned into a KubeConfig (see kubeconfig_merge.h): its
// cluster (server, CA, insecure-skip-tls-verify, tls-server-name) and its user (token, tokenFile,
// client certificate and key, exec plugin). What serve and audit cannot do is refused with what
// to use instead (auth-provider, basic auth, impersonation, proxy-url, interactiveMode Always).
#include <filesystem>

#include "webhook/cluster/kubeconfig_merge.h"
#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"
#include "webhook/ops/base64.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr size_t kMaxCredentialBytes = 1u << 20;
constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr std::string_view kExecExtension = "client.authentication.k8s.io/exec";

// The exec plugins that replace kubectl's removed auth-provider plugins.
struct Replacement {
  std::string_view provider;
  std::string_view plugin;
};
constexpr Replacement kAuthProviders[] = {
    {"gcp", "gke-gcloud-auth-plugin (`gcloud components install gke-gcloud-auth-plugin`, then "
            "`gcloud container clusters get-credentials` writes the exec entry)"},
    {"azure", "kubelogin (`kubelogin convert-kubeconfig -l azurecli` rewrites the user)"},
    {"oidc", "kubelogin (`kubectl oidc-login`, configured as an exec plugin: `command: kubectl`, "
             "`args: [oidc-login, get-token, ...]`)"},
};

// Reads an optional string field; false with `error` when it is there but not a string.
bool get_string(const Json& object, const char* key, std::string& out, std::string& error) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) {
    error = std::string(key) + " is not a string";
    return false;
  }
  out = it->get<std::string>();
  return true;
}

bool get_bool(const Json& object, const char* key, bool& out, std::string& error) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_boolean()) {
    error = std::string(key) + " is not true or false";
    return false;
  }
  out = it->get<bool>();
  return true;
}

// A file named in a kubeconfig: relative names are relative to that kubeconfig's folder.
std::string resolve(const std::string& file, const std::string& kubeconfig) {
  if (file.empty() || file.front() == '/') return file;
  return (std::filesystem::path(kubeconfig).parent_path() / file).string();
}

// Reads `data_key` (base64) or else `file_key` (a file) of `object` into `out`.
bool read_data_or_file(const Json& object, const char* data_key, const char* file_key, const std::string& kubeconfig,
                       std::string& out, std::string& error) {
  std::string data, file;
  if (!get_string(object, data_key, data, error) || !get_string(object, file_key, file, error)) return false;
  if (!data.empty()) {
    const auto decoded = base64_decode(data);
    if (!decoded) {
      error = std::string(data_key) + " is not valid base64";
      return false;
    }
    out = *decoded;
    return true;
  }
  file = resolve(file, kubeconfig);
  if (file.empty()) return true;
  const TextFile read = read_text_file(file, kMaxCredentialBytes);
  if (!read.error.empty()) {
    error = std::string(file_key) + " " + file + ": " + read.error;
    return false;
  }
  out = read.text;
  return true;
}

// The cluster's server, CA and TLS settings; `exec_cluster` gets what provideClusterInfo hands
// an exec plugin (the fields of client.authentication.k8s.io's Cluster).
bool read_cluster(const KubeconfigEntry& entry, KubeConfig& config, Json& exec_cluster, std::string& error) {
  const Json& cluster = entry.value;
  std::string server, proxy;
  if (!get_string(cluster, "server", server, error) || !get_string(cluster, "proxy-url", proxy, error) ||
      !get_string(cluster, "tls-server-name", config.tls_server_name, error) ||
      !get_bool(cluster, "insecure-skip-tls-verify", config.insecure_skip_tls_verify, error))
    return false;
  if (server.empty()) {
    error = "no server";
    return false;
  }
  if (!proxy.empty()) {
    error = "proxy-url " + proxy + " is not supported: reach the API server directly";
    return false;
  }
  if (!parse_server_url(server, config, error) ||
      !read_data_or_file(cluster, "certificate-authority-data", "certificate-authority", entry.file, config.ca_pem,
                         error))
    return false;
  if (config.insecure_skip_tls_verify && !config.ca_pem.empty()) {
    error = "certificate-authority and insecure-skip-tls-verify are both set (kubectl refuses this too)";
    return false;
  }
  exec_cluster = {{"server", server}};
  if (!config.tls_server_name.empty()) exec_cluster["tls-server-name"] = config.tls_server_name;
  if (config.insecure_skip_tls_verify) exec_cluster["insecure-skip-tls-verify"] = true;
  if (!config.ca_pem.empty()) exec_cluster["certificate-authority-data"] = base64_encode(config.ca_pem);
  const auto extensions = cluster.find("extensions");
  if (extensions != cluster.end() && extensions->is_array())
    for (const Json& item : *extensions) {
      std::string name, ignored;
      if (!item.is_object() || !get_string(item, "name", name, ignored) || name != kExecExtension) continue;
      if (const auto extension = item.find("extension"); extension != item.end()) exec_cluster["config"] = *extension;
    }
  return true;
}

bool read_exec_env(const Json& exec, ExecConfig& out, std::string& error) {
  const auto env = exec.find("env");
  if (env == exec.end() || env->is_null()) return true;
  if (!env->is_array()) {
    error = "exec: env is not a list";
    return false;
  }
  for (const Json& item : *env) {
    std::string name, value;
    if (!item.is_object() || !get_string(item, "name", name, error) || !get_string(item, "value", value, error) ||
        name.empty() || name.find('=') != std::string::npos) {
      error = "exec: env: every entry needs a name (without '=') and a string value";
      return false;
    }
    out.env.emplace_back(std::move(name), std::move(value));
  }
  return true;
}

// The exec plugin of a user, as kubectl reads it (apiVersion v1 or v1beta1; interactiveMode
// required in v1, IfAvailable by default in v1beta1).
bool read_exec(const Json& exec, const std::string& kubeconfig, const Json& exec_cluster, ExecConfig& out,
               std::string& error) {
  if (!exec.is_object()) {
    error = "exec is not a mapping";
    return false;
  }
  if (!get_string(exec, "apiVersion", out.api_version, error) || !get_string(exec, "command", out.command, error) ||
      !get_string(exec, "interactiveMode", out.interactive_mode, error) ||
      !get_string(exec, "installHint", out.install_hint, error) ||
      !get_bool(exec, "provideClusterInfo", out.provide_cluster_info, error)) {
    error = "exec: " + error;
    return false;
  }
  if (out.api_version != kExecV1 && out.api_version != kExecV1beta1) {
    error = "exec: apiVersion \"" + out.api_version + "\" is not client.authentication.k8s.io/v1 or v1beta1" +
            (out.api_version.find("v1alpha1") != std::string::npos ? " (v1alpha1 was removed in Kubernetes 1.24)" : "");
    return false;
  }
  if (out.command.empty()) {
    error = "exec: no command";
    return false;
  }
  if (out.command.find('/') != std::string::npos) out.command = resolve(out.command, kubeconfig);
  if (const auto args = exec.find("args"); args != exec.end() && !args->is_null()) {
    if (!args->is_array()) {
      error = "exec: args is not a list";
      return false;
    }
    for (const Json& arg : *args) {
      if (!arg.is_string()) {
        error = "exec: args holds something that is not a string";
        return false;
      }
      out.args.push_back(arg.get<std::string>());
    }
  }
  if (!read_exec_env(exec, out, error)) return false;
  if (out.interactive_mode.empty() && out.api_version == kExecV1beta1) out.interactive_mode = "IfAvailable";
  if (out.interactive_mode == "Always") {
    error = "exec plugin \"" + out.command + "\" has interactiveMode Always, but serve and audit run without a "
            "terminal to give it: log in first (so that the plugin has a cached credential) and set "
            "interactiveMode: IfAvailable";
    return false;
  }
  if (out.interactive_mode != "Never" && out.interactive_mode != "IfAvailable") {
    error = out.interactive_mode.empty() ? "exec: interactiveMode must be set for " + std::string(kExecV1) +
                                               " (Never or IfAvailable)"
                                         : "exec: interactiveMode \"" + out.interactive_mode +
                                               "\" is not Never, IfAvailable or Always";
    return false;
  }
  if (out.provide_cluster_info) out.cluster_json = to_json_text(exec_cluster);  // never throws
  return true;
}

// The user's credentials; what cannot be used is refused with what to use instead.
bool read_user(const KubeconfigEntry& entry, KubeConfig& config, const Json& exec_cluster, std::string& error) {
  const Json& user = entry.value;
  if (const auto provider = user.find("auth-provider"); provider != user.end() && !provider->is_null()) {
    std::string name, ignored;
    if (provider->is_object()) get_string(*provider, "name", name, ignored);
    std::string_view plugin = "the exec credential plugin your provider documents";
    for (const Replacement& r : kAuthProviders)
      if (r.provider == name) plugin = r.plugin;
    error = "auth-provider \"" + name + "\" is not supported (kubectl removed it in 1.26): use the exec plugin " +
            std::string(plugin);
    return false;
  }
  if (user.contains("username") || user.contains("password")) {
    error = "basic authentication (username/password) is not supported; use a token, a client certificate or an "
            "exec plugin";
    return false;
  }
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"})
    if (user.contains(key)) {
      error = std::string("impersonation (") + key + ") is not supported; use a user of its own";
      return false;
    }
  std::string token_file;
  if (!get_string(user, "token", config.token, error) || !get_string(user, "tokenFile", token_file, error) ||
      !read_data_or_file(user, "client-certificate-data", "client-certificate", entry.file, config.client_cert_pem,
                         error) ||
      !read_data_or_file(user, "client-key-data", "client-key", entry.file, config.client_key_pem, error))
    return false;
  config.token_file = resolve(token_file, entry.file);
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    error = "a client certificate without its key (or a key without its certificate)";
    return false;
  }
  if (const auto exec = user.find("exec"); exec != user.end() && !exec->is_null()) {
    ExecConfig plugin;
    if (!read_exec(*exec, entry.file, exec_cluster, plugin, error)) return false;
    config.exec = std::move(plugin);
  }
  return true;
}

}  // namespace

KubeConfigLoad resolve_kubeconfig_context(const MergedKubeconfig& merged, const std::string& context,
                                          const std::string& where) {
  KubeConfigLoad load;
  const std::string name = context.empty() ? merged.current_context : context;
  if (name.empty()) return load;
  const auto found = merged.contexts.find(name);
  if (found == merged.contexts.end()) {
    load.error = "kubeconfig " + (context.empty() ? merged.current_context_file : where) + ": " +
                 (context.empty() ? "current-context" : "--context") + " \"" + name + "\" is not among its contexts";
    return load;
  }
  const std::string at = "kubeconfig " + found->second.file + ": context \"" + name + "\"";
  std::string cluster_name, user_name, error;
  if (!get_string(found->second.value, "cluster", cluster_name, error) ||
      !get_string(found->second.value, "user", user_name, error)) {
    load.error = at + ": " + error;
    return load;
  }
  const auto cluster = merged.clusters.find(cluster_name);
  if (cluster == merged.clusters.end()) {
    load.error = at + (cluster_name.empty() ? ": names no cluster"
                                            : ": cluster \"" + cluster_name + "\" is not among the clusters");
    return load;
  }
  KubeConfig config;
  config.source = found->second.file + " (context " + name + ")";
  config.origin = at;
  Json exec_cluster;
  if (!read_cluster(cluster->second, config, exec_cluster, error)) {
    load.error = "kubeconfig " + cluster->second.file + ": context \"" + name + "\": cluster \"" + cluster_name +
                 "\": " + error;
    return load;
  }
  if (!user_name.empty()) {
    const auto user = merged.users.find(user_name);
    if (user == merged.users.end()) {
      load.error = at + ": user \"" + user_name + "\" is not among the users";
      return load;
    }
    config.origin = "kubeconfig " + user->second.file + ": context \"" + name + "\" (user \"" + user_name + "\")";
    if (!read_user(user->second, config, exec_cluster, error)) {
      load.error = config.origin + ": " + error;
      return load;
    }
  }
  load.config = std::move(config);
  return load;
}

}  // namespace gpu_admission::webhook::cluster
