// The order in which a cluster configuration is looked for (see kube_config.h), the in-cluster
// service account, and server URLs. Reading and merging kubeconfig files is kubeconfig_merge.cpp;
// turning a context into a KubeConfig is kubeconfig_context.cpp.
#include "webhook/cluster/kube_config.h"

#include <cstdlib>

#include "webhook/cluster/kubeconfig_merge.h"
#include "webhook/io/text_file.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr size_t kMaxCredentialBytes = 1u << 20;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The files to read, in order, and how messages name them. A missing --kubeconfig file is an
// error; missing files of $KUBECONFIG are skipped, as kubectl skips them.
bool read_kubeconfigs(const KubeConfigOptions& options, MergedKubeconfig& merged, std::string& where,
                      std::string& searched, std::string& error) {
  bool missing = false;
  if (!options.explicit_path.empty()) {
    where = options.explicit_path;
    if (!merge_kubeconfig_file(options.explicit_path, merged, missing, error)) return false;
    if (missing) error = "kubeconfig " + options.explicit_path + ": cannot read: No such file or directory";
    return !missing;
  }
  const std::vector<std::string> listed =
      options.kubeconfig_env ? split_kubeconfig_list(*options.kubeconfig_env) : std::vector<std::string>();
  if (!listed.empty()) {
    where = listed.size() == 1 ? listed.front() : "$KUBECONFIG (" + *options.kubeconfig_env + ")";
    for (const std::string& file : listed)
      if (!merge_kubeconfig_file(file, merged, missing, error)) return false;
    if (merged.files.empty())
      searched = "no --kubeconfig, none of the files of $KUBECONFIG (" + *options.kubeconfig_env + ") exists";
    return true;
  }
  searched = options.kubeconfig_env ? "no --kubeconfig, $KUBECONFIG is empty" : "no --kubeconfig, $KUBECONFIG is unset";
  if (options.home.empty()) {
    searched += ", $HOME is unset";
    return true;
  }
  where = options.home + "/.kube/config";
  if (!merge_kubeconfig_file(where, merged, missing, error)) return false;
  if (missing) searched += ", there is no " + where;
  return true;
}

}  // namespace

std::string endpoint_url(const KubeConfig& config, std::string_view path) {
  const bool ipv6 = config.host.find(':') != std::string::npos;
  std::string url = "https://";
  url += ipv6 ? "[" + config.host + "]" : config.host;
  url += ':' + std::to_string(config.port);
  url += config.path_prefix;
  url += path;
  return url;
}

bool parse_server_url(std::string_view url, KubeConfig& out, std::string& error) {
  constexpr std::string_view kScheme = "https://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    error = "server \"" + std::string(url) + "\" is not an https:// URL";
    return false;
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  out.path_prefix = std::string(prefix);
  out.port = 443;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "server \"" + std::string(url) + "\": unterminated [IPv6] address";
      return false;
    }
    out.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port_text = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) {
    error = "server \"" + std::string(url) + "\" has no host";
    return false;
  }
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) port = 70000;
      else port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) {
      error = "server \"" + std::string(url) + "\" has an invalid port";
      return false;
    }
    out.port = port;
  }
  return true;
}

KubeConfigLoad load_in_cluster(const InClusterPaths& paths) {
  KubeConfigLoad load;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0') return load;
  KubeConfig config;
  config.source = "in-cluster service account";
  std::string url = std::string("https://") + (std::string_view(host).find(':') != std::string_view::npos
                                                   ? "[" + std::string(host) + "]"
                                                   : std::string(host));
  if (port != nullptr && *port != '\0') url += ":" + std::string(port);
  if (!parse_server_url(url, config, load.error)) return load;
  const TextFile ca = read_text_file(paths.ca_file, kMaxCredentialBytes);
  if (!ca.error.empty()) {
    load.error = "in-cluster CA bundle " + paths.ca_file + ": " + ca.error;
    return load;
  }
  config.ca_pem = ca.text;
  const TextFile token = read_text_file(paths.token_file, kMaxCredentialBytes);
  if (!token.error.empty()) {
    load.error = "in-cluster service account token " + paths.token_file + ": " + token.error;
    return load;
  }
  config.token_file = paths.token_file;
  load.config = std::move(config);
  return load;
}

KubeConfigOptions KubeConfigOptions::from_environment(std::string explicit_path, std::string context) {
  KubeConfigOptions options;
  options.explicit_path = std::move(explicit_path);
  options.context = std::move(context);
  if (const char* list = std::getenv("KUBECONFIG")) options.kubeconfig_env = list;
  options.home = env_or_empty("HOME");
  return options;
}

KubeConfigLoad load_cluster_config(const KubeConfigOptions& options) {
  KubeConfigLoad load;
  MergedKubeconfig merged;
  std::string where, searched;
  if (!read_kubeconfigs(options, merged, where, searched, load.error)) return load;
  if (!merged.files.empty()) {
    load = resolve_kubeconfig_context(merged, options.context, where);
    if (load.config || !load.error.empty()) return load;
    // No context chosen. kubectl then tries the service account; an explicit file without one
    // is more likely a mistake, and said so.
    if (!options.explicit_path.empty()) {
      load.error = "kubeconfig " + where + " has no current-context; give --context NAME";
      return load;
    }
    searched = "kubeconfig " + where + " has no current-context";
  }
  if (!options.context.empty()) {
    load.error = "--context " + options.context + ": there is no kubeconfig to find it in (" + searched + ")";
    return load;
  }
  load = load_in_cluster(options.in_cluster);
  if (!load.config && load.error.empty())
    load.searched = searched + ", and not in a pod (KUBERNETES_SERVICE_HOST is unset)";
  return load;
}

KubeConfigLoad parse_kubeconfig(std::string_view text, const std::string& path, const std::string& context) {
  KubeConfigLoad load;
  MergedKubeconfig merged;
  if (!merge_kubeconfig_text(text, path, merged, load.error)) return load;
  load = resolve_kubeconfig_context(merged, context, path);
  if (!load.config && load.error.empty()) load.error = "kubeconfig " + path + " has no current-context";
  return load;
}

KubeConfigLoad load_kubeconfig(const std::string& path, const std::string& context) {
  KubeConfigOptions options;
  options.explicit_path = path;
  options.context = context;
  MergedKubeconfig merged;
  KubeConfigLoad load;
  std::string where;
  if (!read_kubeconfigs(options, merged, where, load.searched, load.error)) return load;
  load = resolve_kubeconfig_context(merged, context, path);
  if (!load.config && load.error.empty()) load.error = "kubeconfig " + path + " has no current-context";
  return load;
}

}  // namespace gpu_admission::webhook::cluster
