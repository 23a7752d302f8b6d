// Exec credential plugins (see exec_credentials.h): the plugin's environment, its output decoded
// through the project's one YAML/JSON reader, and the kept credential.
#include "webhook/cluster/exec_credentials.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "policy/config/rollout_fields.h"
#include "webhook/cluster/plugin_process.h"
#include "webhook/io/yaml_json.h"

extern char** environ;

namespace gpu_admission::webhook::cluster {
namespace {

constexpr int64_t kMaxRefreshMarginMs = 30'000;
constexpr int64_t kRetryFailedRefreshMs = 5'000;
constexpr size_t kStderrInMessage = 2'000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A string field of `object`: "" when absent; false when present but not a string.
bool text_field(const Json& object, const char* key, std::string& out) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

// Our environment with `added` set over it (a name set twice: the last wins).
std::vector<std::string> plugin_environment(const std::vector<std::pair<std::string, std::string>>& added) {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [key, value] : added) replaced = replaced || key == name;
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [key, value] : added) out.push_back(key + "=" + value);
  return out;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.size() > kStderrInMessage) text = "..." + text.substr(text.size() - kStderrInMessage);
  return text;
}

// Why a run failed, in words; "" when it succeeded.
std::string run_failure(const ExecConfig& exec, const ProcessResult& run, const ExecRunOptions& options) {
  const std::string plugin = "exec plugin \"" + exec.command + "\"";
  if (run.spawn_error == ENOENT)
    return plugin + " was not found" + (exec.command.find('/') == std::string::npos ? " on PATH" : "") +
           (exec.install_hint.empty() ? "" : ": " + trimmed(exec.install_hint));
  if (run.spawn_error != 0) return plugin + " could not be started: " + std::strerror(run.spawn_error);
  if (run.timed_out)
    return plugin + " did not finish within " + std::to_string(options.timeout.count() / 1000) + " s";
  if (run.stdout_too_large) return plugin + " wrote more than 1 MiB to its standard output";
  if (run.signal != 0) return plugin + " was killed by signal " + std::to_string(run.signal);
  if (run.exit_code != 0) {
    const std::string said = trimmed(run.err);
    return plugin + " exited " + std::to_string(run.exit_code) + (said.empty() ? "" : ": " + said);
  }
  return "";
}

}  // namespace

std::optional<ExecCredential> parse_exec_credential(std::string_view text, std::string_view api_version,
                                                    std::string& error) {
  YamlLimits limits;
  limits.max_depth = 32;
  limits.max_nodes = 10'000;
  limits.record_marks = false;
  const YamlParse parse = parse_yaml_or_json(text, limits);
  if (parse.error || parse.documents.size() != 1 || !parse.documents.front().value.is_object()) {
    error = "its output is not an ExecCredential" + (parse.error ? " (" + parse.error->message + ")" : std::string());
    return std::nullopt;
  }
  const Json& root = parse.documents.front().value;
  std::string kind, version, expiration;
  if (!text_field(root, "kind", kind) || kind != "ExecCredential" || !text_field(root, "apiVersion", version)) {
    error = "its output is not an ExecCredential (kind \"" + kind + "\")";
    return std::nullopt;
  }
  if (version != api_version) {
    error = "it is configured for " + std::string(api_version) + " but answered in \"" + version + "\"";
    return std::nullopt;
  }
  const auto status = root.find("status");
  if (status == root.end() || !status->is_object()) {
    error = "its ExecCredential has no status";
    return std::nullopt;
  }
  ExecCredential credential;
  if (!text_field(*status, "token", credential.token) ||
      !text_field(*status, "clientCertificateData", credential.client_cert_pem) ||
      !text_field(*status, "clientKeyData", credential.client_key_pem) ||
      !text_field(*status, "expirationTimestamp", expiration)) {
    error = "its ExecCredential status has a field that is not a string";
    return std::nullopt;
  }
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    error = "it returned a client certificate without its key (or a key without its certificate)";
    return std::nullopt;
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    error = "it returned neither a token nor a client certificate and key";
    return std::nullopt;
  }
  if (!expiration.empty()) {
    const auto seconds = policy::parse_rfc3339(expiration);
    if (!seconds) {
      error = "its expirationTimestamp \"" + expiration + "\" is not an RFC 3339 time";
      return std::nullopt;
    }
    credential.expires_ms = *seconds * 1000;
  }
  return credential;
}

std::string exec_info(const ExecConfig& exec) {
  Json spec = {{"interactive", false}};
  if (exec.provide_cluster_info && !exec.cluster_json.empty()) {
    Json cluster = Json::parse(exec.cluster_json, nullptr, false);
    if (!cluster.is_discarded()) spec["cluster"] = std::move(cluster);
  }
  const Json info = {{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}};
  return to_json_text(info);
}

std::optional<ExecCredential> run_exec_plugin(const ExecConfig& exec, const ExecRunOptions& options,
                                              std::string& error) {
  auto added = exec.env;
  added.emplace_back("KUBERNETES_EXEC_INFO", exec_info(exec));
  ProcessOptions process;
  process.timeout = options.timeout;
  if (!options.on_stderr) process.echo_stderr_fd = STDERR_FILENO;
  const ProcessResult run = run_process(exec.command, exec.args, plugin_environment(added), process);
  if (options.on_stderr && !trimmed(run.err).empty()) options.on_stderr(exec.command, trimmed(run.err));
  error = run_failure(exec, run, options);
  if (!error.empty()) return std::nullopt;
  auto credential = parse_exec_credential(run.out, exec.api_version, error);
  if (!credential) error = "exec plugin \"" + exec.command + "\": " + error;
  return credential;
}

ExecCredentials::ExecCredentials(ExecConfig exec, std::string origin, ExecRunOptions options)
    : exec_(std::move(exec)), origin_(std::move(origin)), options_(std::move(options)) {}

void ExecCredentials::set_stderr_sink(std::function<void(const std::string&, const std::string&)> sink) {
  options_.on_stderr = std::move(sink);
}

int ExecCredentials::runs() const {
  std::lock_guard lock(state_mutex_);
  return runs_;
}

bool ExecCredentials::fresh_locked(int64_t now) const {
  if (!kept_) return false;
  if (!kept_->expires_ms) return true;
  const int64_t lifetime = std::max<int64_t>(0, *kept_->expires_ms - fetched_ms_);
  const int64_t margin = std::min(kMaxRefreshMarginMs, lifetime / 5);
  return now < *kept_->expires_ms - margin || (now < *kept_->expires_ms && now < retry_after_ms_);
}

ExecCredentials::Use ExecCredentials::current() {
  {
    std::lock_guard lock(state_mutex_);
    const int64_t now = now_ms();
    if (fresh_locked(now)) return {kept_, generation_, ""};
    // Another caller is refreshing a credential that is still valid: use it meanwhile.
    if (fetching_ && kept_ && kept_->expires_ms && now < *kept_->expires_ms) return {kept_, generation_, ""};
  }
  return fetch_serialized(false, 0);
}

ExecCredentials::Use ExecCredentials::refresh(uint64_t refused_generation) {
  return fetch_serialized(true, refused_generation);
}

ExecCredentials::Use ExecCredentials::fetch_serialized(bool forced, uint64_t refused_generation) {
  std::lock_guard fetch(fetch_mutex_);
  {
    std::lock_guard lock(state_mutex_);
    // Someone fetched while this caller waited: theirs is the answer.
    if (forced ? (kept_ && generation_ != refused_generation) : fresh_locked(now_ms()))
      return {kept_, generation_, ""};
    fetching_ = true;
    ++runs_;
  }
  const int64_t started = now_ms();
  std::string error;
  std::optional<ExecCredential> credential = run_exec_plugin(exec_, options_, error);
  std::lock_guard lock(state_mutex_);
  fetching_ = false;
  if (!credential) {
    // A refresh ahead of expiry that failed: the kept credential is still good for a while.
    if (!forced && kept_ && kept_->expires_ms && now_ms() < *kept_->expires_ms) {
      retry_after_ms_ = now_ms() + kRetryFailedRefreshMs;
      return {kept_, generation_, ""};
    }
    return {nullptr, generation_, origin_ + ": " + error};
  }
  kept_ = std::make_shared<const ExecCredential>(std::move(*credential));
  fetched_ms_ = started;
  retry_after_ms_ = 0;
  return {kept_, ++generation_, ""};
}

}  // namespace gpu_admission::webhook::cluster
