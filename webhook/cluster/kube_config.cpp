// In-cluster and kubeconfig loading (see kube_config.h). The kubeconfig goes through the
// project's one YAML reader (io/yaml_json.h) and is then read as a JSON tree.
#include "webhook/cluster/kube_config.h"

#include <cstdlib>
#include <filesystem>

#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr size_t kMaxKubeconfigBytes = 4u << 20;
constexpr size_t kMaxCredentialBytes = 1u << 20;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// A field of a kubeconfig map: its string value, "" when absent or not a string.
std::string string_field(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// The `entry_key` object of the entry named `name` in the list `list_key` (clusters, users, contexts).
const Json* named_entry(const Json& root, const char* list_key, const std::string& name, const char* entry_key) {
  const auto list = root.find(list_key);
  if (list == root.end() || !list->is_array()) return nullptr;
  for (const Json& item : *list) {
    if (!item.is_object() || string_field(item, "name") != name) continue;
    const auto entry = item.find(entry_key);
    return entry != item.end() && entry->is_object() ? &*entry : nullptr;
  }
  return nullptr;
}

std::string resolve(const std::string& file, const std::string& kubeconfig_path) {
  if (file.empty() || file.front() == '/') return file;
  return (std::filesystem::path(kubeconfig_path).parent_path() / file).string();
}

// Reads `data_key` (base64) or else `file_key` (a file) of `object` into `out`.
bool read_data_or_file(const Json& object, const char* data_key, const char* file_key, const std::string& path,
                       std::string& out, std::string& error) {
  if (const std::string data = string_field(object, data_key); !data.empty()) {
    const auto decoded = decode_base64(data);
    if (!decoded) {
      error = std::string(data_key) + " is not valid base64";
      return false;
    }
    out = *decoded;
    return true;
  }
  const std::string file = resolve(string_field(object, file_key), path);
  if (file.empty()) return true;
  const TextFile read = read_text_file(file, kMaxCredentialBytes);
  if (!read.error.empty()) {
    error = std::string(file_key) + " " + file + ": " + read.error;
    return false;
  }
  out = read.text;
  return true;
}

bool read_user(const Json& user, const std::string& path, KubeConfig& config, std::string& error) {
  if (user.contains("exec") || user.contains("auth-provider")) {
    error = "the user authenticates with an exec plugin or auth-provider, which is not supported; use a token, "
            "tokenFile or client certificate";
    return false;
  }
  config.token = string_field(user, "token");
  config.token_file = resolve(string_field(user, "tokenFile"), path);
  if (!read_data_or_file(user, "client-certificate-data", "client-certificate", path, config.client_cert_pem, error) ||
      !read_data_or_file(user, "client-key-data", "client-key", path, config.client_key_pem, error))
    return false;
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    error = "the user has a client certificate without its key (or a key without its certificate)";
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t bits = 0;
  int count = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    const int value = base64_value(c);
    if (value < 0 || padding) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>(bits >> 16));
      out.push_back(static_cast<char>(bits >> 8));
      out.push_back(static_cast<char>(bits));
      bits = 0;
      count = 0;
    }
  }
  if (count == 1) return std::nullopt;
  if (count == 2) out.push_back(static_cast<char>(bits >> 4));
  if (count == 3) {
    out.push_back(static_cast<char>(bits >> 10));
    out.push_back(static_cast<char>(bits >> 2));
  }
  return out;
}

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

KubeConfigLoad parse_kubeconfig(std::string_view text, const std::string& path) {
  KubeConfigLoad load;
  YamlLimits limits;
  limits.record_marks = false;
  const YamlParse parse = parse_yaml_or_json(text, limits);
  if (parse.error) {
    load.error = "kubeconfig " + path + ": " + parse.error->message;
    return load;
  }
  if (parse.documents.empty() || !parse.documents.front().value.is_object()) {
    load.error = "kubeconfig " + path + " is empty or not a mapping";
    return load;
  }
  const Json& root = parse.documents.front().value;
  const std::string context_name = string_field(root, "current-context");
  if (context_name.empty()) {
    load.error = "kubeconfig " + path + " has no current-context";
    return load;
  }
  const Json* context = named_entry(root, "contexts", context_name, "context");
  if (context == nullptr) {
    load.error = "kubeconfig " + path + ": current-context \"" + context_name + "\" is not among its contexts";
    return load;
  }
  const std::string cluster_name = string_field(*context, "cluster");
  const Json* cluster = named_entry(root, "clusters", cluster_name, "cluster");
  if (cluster == nullptr) {
    load.error = "kubeconfig " + path + ": cluster \"" + cluster_name + "\" of context \"" + context_name +
                 "\" is not among its clusters";
    return load;
  }
  KubeConfig config;
  config.source = path + " (context " + context_name + ")";
  std::string error;
  if (!parse_server_url(string_field(*cluster, "server"), config, error) ||
      !read_data_or_file(*cluster, "certificate-authority-data", "certificate-authority", path, config.ca_pem, error)) {
    load.error = "kubeconfig " + path + ": cluster \"" + cluster_name + "\": " + error;
    return load;
  }
  const auto insecure = cluster->find("insecure-skip-tls-verify");
  config.insecure_skip_tls_verify = insecure != cluster->end() && insecure->is_boolean() && insecure->get<bool>();
  const std::string user_name = string_field(*context, "user");
  if (!user_name.empty()) {
    const Json* user = named_entry(root, "users", user_name, "user");
    if (user == nullptr) {
      load.error = "kubeconfig " + path + ": user \"" + user_name + "\" is not among its users";
      return load;
    }
    if (!read_user(*user, path, config, error)) {
      load.error = "kubeconfig " + path + ": user \"" + user_name + "\": " + error;
      return load;
    }
  }
  load.config = std::move(config);
  return load;
}

KubeConfigLoad load_kubeconfig(const std::string& path) {
  const TextFile file = read_text_file(path, kMaxKubeconfigBytes);
  if (!file.error.empty()) {
    KubeConfigLoad load;
    load.error = "kubeconfig " + path + ": " + file.error;
    return load;
  }
  return parse_kubeconfig(file.text, path);
}

}  // namespace gpu_admission::webhook::cluster
