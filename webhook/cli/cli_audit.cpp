// `gpu-admission audit`: judges what already runs (the cluster, through paged lists, or files)
// and reports it as text, JSON or reports (wgpolicyk8s.io PolicyReports, OpenReports Reports);
// `--write-reports` keeps the reports in the cluster, in the report API it serves; `--interval`
// repeats the audit and serves its metrics. The engine is webhook/audit/.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "webhook/audit/audit_metrics.h"
#include "webhook/audit/audit_output.h"
#include "webhook/audit/audit_sources.h"
#include "webhook/audit/report_writer.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cluster/cluster_state.h"
#include "webhook/io/clock.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/io/yaml_json.h"
#include "webhook/ops/logger.h"
#include "webhook/server/https_server.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kAuditHelp = R"(Usage: gpu-admission audit [flags] [FILE...|-]

Judges the objects that already exist (Pods, workloads, ML jobs, DRA claims) as /validate
judges a stored object, and reports each violating object once, at the object a person edits,
with its pods. Without FILEs it reads the cluster, found as kubectl finds it (--kubeconfig, else
the files of $KUBECONFIG, else ~/.kube/config, else the in-cluster service account); FILEs are
manifests or `kubectl get -A -o json` output.

Flags:
  -p, --policy FILE         the policy (a policy file or the ConfigMap holding it; default: built-in)
      --kubeconfig FILE     the kubeconfig of the cluster to read (default: as kubectl, above)
      --context NAME        its context to use (default: its current-context)
  -n, --namespace NS,...    only these namespaces
  -o, --output FORMAT       text (default), json, policyreport (one wgpolicyk8s.io/v1alpha2
                            PolicyReport per namespace) or openreports (one openreports.io/v1alpha1
                            Report per namespace)
      --write-reports       create, update and delete the reports in the cluster (only changed ones)
      --report-api API      what --write-reports writes: openreports.io/v1alpha1 or
                            wgpolicyk8s.io/v1alpha2 (default: the one the cluster serves,
                            OpenReports first)
      --interval DURATION   repeat every DURATION (30s, 10m, 1h) and serve metrics
      --metrics-listen ADDR metrics address with --interval (default 0.0.0.0:9091)
      --page-size N         objects per list page (default 500)

Exit codes: 0 nothing denied, 1 some object has a deny finding, 2 unusable input or cluster error.
)";

struct AuditFlags {
  std::string policy_path;
  std::string kubeconfig;
  std::string context;
  audit::ClusterListOptions list;
  std::string output = "text";
  bool write_reports = false;
  std::optional<ReportApi> report_api;  // --report-api; else chosen by discovery
  long long interval_ms = 0;
  std::string metrics_listen = "0.0.0.0:9091";
  std::vector<std::string> files;
};

// An exec credential plugin may wait for a person at a terminal (a browser or device-code
// login), longer than serve's 30 s.
constexpr std::chrono::milliseconds kExecPluginTimeout{120'000};

int usage(const std::string& message) {
  std::fprintf(stderr, "gpu-admission audit: %s\nRun `gpu-admission audit --help` for the flags.\n", message.c_str());
  return 2;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string read_flags(const ParsedArgs& parsed, AuditFlags& f) {
  f.policy_path = parsed.get("--policy");
  f.kubeconfig = parsed.get("--kubeconfig");
  f.context = parsed.get("--context");
  f.list.namespaces = split_commas(parsed.get("--namespace"));
  f.output = parsed.get("--output", "text");
  f.write_reports = parsed.has("--write-reports");
  f.files = parsed.positional;
  f.metrics_listen = parsed.get("--metrics-listen", f.metrics_listen);
  if (f.output != "text" && f.output != "json" && f.output != "policyreport" && f.output != "openreports")
    return "--output must be text, json, policyreport or openreports";
  if (parsed.has("--report-api")) {
    f.report_api = report_api_named(parsed.get("--report-api"));
    if (!f.report_api) return "--report-api must be openreports.io/v1alpha1 or wgpolicyk8s.io/v1alpha2";
    if (!f.write_reports)
      return "--report-api chooses what --write-reports writes: give --write-reports too (to print reports, use "
             "-o openreports or -o policyreport)";
  }
  if (parsed.has("--interval")) {
    const auto ms = parse_duration_ms(parsed.get("--interval"));
    if (!ms || *ms < 1000) return "--interval must be a duration of at least 1s, such as 30s, 10m or 1h";
    f.interval_ms = *ms;
  }
  if (parsed.has("--page-size")) {
    const std::string text = parsed.get("--page-size");
    if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) == 0)
      return "--page-size must be a number from 1 to 99999";
    f.list.page_size = static_cast<size_t>(std::stoi(text));
  }
  if (!f.files.empty() && (f.write_reports || f.interval_ms))
    return "--write-reports and --interval read the cluster: give no FILEs with them";
  if (!f.files.empty() && (!f.kubeconfig.empty() || !f.context.empty()))
    return "give either FILEs or --kubeconfig/--context, not both";
  return "";
}

// One audit: the result, or an error message (the audit is then incomplete).
struct RunOutcome {
  std::optional<audit::AuditResult> result;
  std::string error;
  audit::WriteCounts writes;
  ReportApi report_api = ReportApi::WgPolicy;  // what --write-reports wrote
};

RunOutcome audit_once(const policy::CompiledPolicy& policy, const AuditFlags& flags,
                      const cluster::KubeClient* client) {
  RunOutcome out;
  const auto started = std::chrono::steady_clock::now();
  const int64_t now = unix_now();
  audit::Auditor auditor(policy, now);
  std::vector<audit::AuditKind> kinds = audit::wanted_kinds(policy);
  std::optional<std::string> error;
  std::string source;
  if (client == nullptr) {
    error = audit::read_files_into(flags.files, kinds, auditor);
    source = "files";
    for (const auto& f : flags.files) source += " " + f;
  } else {
    source = "cluster " + client->url("/");
    error = audit::discover_kinds(*client, kinds, auditor);
    if (!error) error = audit::list_into(*client, kinds, flags.list, auditor);
  }
  if (error) {
    out.error = *error;
    return out;
  }
  audit::AuditResult result = auditor.finish();
  result.source = source;
  result.started_at = now;
  result.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (flags.write_reports && client != nullptr) {
    if (auto write_error = audit::write_reports(*client, flags.list.namespaces, flags.report_api, result, now,
                                                out.report_api, out.writes)) {
      out.error = *write_error;
      return out;
    }
  }
  out.result = std::move(result);
  return out;
}

void print_result(const audit::AuditResult& result, const std::string& output) {
  if (output == "json") {
    std::printf("%s\n", audit::audit_json(result).dump(2).c_str());
  } else if (output == "policyreport" || output == "openreports") {
    bool first = true;
    audit::for_each_policy_report(
        result, result.started_at,
        [&](Json&& report) {
          std::printf("%s%s", first ? "" : "---\n", to_yaml(report).c_str());
          first = false;
        },
        output == "openreports" ? ReportApi::OpenReports : ReportApi::WgPolicy);
  } else {
    std::fputs(audit::audit_text(result).c_str(), stdout);
  }
}

bool has_deny(const audit::AuditResult& result) {
  for (const auto& t : result.totals)
    if (t.label == FindingLabel::Deny) return true;
  return false;
}

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }

// --interval: audits until SIGTERM or SIGINT, metrics and /healthz on flags.metrics_listen.
int audit_forever(const policy::CompiledPolicy& policy, const AuditFlags& flags, const cluster::KubeClient& client) {
  Logger logger;
  std::string error;
  const auto address = parse_listen_address(flags.metrics_listen, error);
  if (!address) return usage("--metrics-listen: " + error);
  audit::AuditMetrics metrics;
  httplib::Server server;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.serialize(), "text/plain; version=0.0.4");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  const std::string host = address->host.empty() ? "0.0.0.0" : address->host;
  if (!server.bind_to_port(host.c_str(), address->port)) {
    logger.error("audit: cannot listen on " + flags.metrics_listen + " for metrics: is the port in use?",
                 {{"exit_code", 2}});
    return 2;
  }
  std::thread serving([&] { server.listen_after_bind(); });
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  logger.info("audit: running every " + std::to_string(flags.interval_ms / 1000) + " s",
              {{"cluster", client.url("/")}, {"metrics", flags.metrics_listen}, {"write_reports", flags.write_reports}});
  while (!g_stop) {
    const auto started = std::chrono::steady_clock::now();
    RunOutcome outcome = audit_once(policy, flags, &client);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (outcome.result) {
      const audit::AuditResult& r = *outcome.result;
      metrics.succeeded(r, unix_now());
      Json totals = Json::array();
      for (const auto& t : r.totals)
        totals.push_back({{"tenant", t.tenant}, {"rule", std::string(policy::name_of(t.rule))},
                          {"action", std::string(name_of(t.label))}, {"objects", t.objects}, {"pods", t.pods}});
      const std::string api =
          flags.write_reports ? std::string(report_api_info(outcome.report_api).api_version) : "none";
      logger.info("audit: run complete", {{"seconds", seconds}, {"judged", r.judged}, {"violating_objects", r.violating()},
                                          {"objects_with_errors", r.errors()}, {"totals", totals},
                                          {"reports", {{"api", api},
                                                       {"created", outcome.writes.created}, {"updated", outcome.writes.updated},
                                                       {"deleted", outcome.writes.deleted},
                                                       {"unchanged", outcome.writes.unchanged}}}});
    } else {
      metrics.failed(seconds, unix_now());
      logger.error("audit: run failed; the next run tries again", {{"error", outcome.error}, {"seconds", seconds}});
    }
    const auto next = started + std::chrono::milliseconds(flags.interval_ms);
    while (!g_stop && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  server.stop();
  serving.join();
  logger.info("audit: stopped");
  return 0;
}

}  // namespace

int run_audit(const Args& args) {
  const ParsedArgs parsed = parse_args(args, {{"--policy", "-p"}, {"--kubeconfig", ""}, {"--context", ""},
                                              {"--namespace", "-n"}, {"--output", "-o"}, {"--write-reports", "", false}, {"--report-api", ""}, {"--interval", ""},
                                              {"--metrics-listen", ""}, {"--page-size", ""}, {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kAuditHelp, stdout);
    return 0;
  }
  if (parsed.error) return usage(*parsed.error);
  AuditFlags flags;
  if (const std::string error = read_flags(parsed, flags); !error.empty()) return usage(error);
  PolicyLoad load = load_policy_document(flags.policy_path);
  if (!load.ok()) {
    std::fprintf(stderr, "%sgpu-admission audit: the policy is invalid\n", load.report().c_str());
    return 2;
  }
  Logger plugin_log;  // an exec plugin's standard error, under --interval (else it goes to stderr as it is)
  std::unique_ptr<cluster::KubeClient> client;
  if (flags.files.empty()) {
    auto choice = cluster::choose_cluster_config(
        cluster::ClusterMode::Auto, cluster::KubeConfigOptions::from_environment(flags.kubeconfig, flags.context));
    if (!choice.config)
      return usage("no cluster to read: " + (choice.error.empty() ? choice.reason : choice.error) +
                   (choice.error.empty() ? " (give --kubeconfig, run in a pod, or give FILEs)" : ""));
    client = std::make_unique<cluster::KubeClient>(std::move(*choice.config));
    client->set_exec_timeout(kExecPluginTimeout);
    if (flags.interval_ms) client->set_logger(&plugin_log);
    if (std::string error; !client->init(error)) return usage("cluster " + client->url("/") + ": " + error);
    if (client->config().insecure_skip_tls_verify)
      std::fprintf(stderr, "gpu-admission audit: WARNING: insecure-skip-tls-verify is set for %s: the API server's "
                           "certificate is not verified\n", client->config().source.c_str());
  }
  if (flags.interval_ms) return audit_forever(*load.policy, flags, *client);
  RunOutcome outcome = audit_once(*load.policy, flags, client.get());
  if (!outcome.result) {
    std::fprintf(stderr, "gpu-admission audit: %s\n", outcome.error.c_str());
    return 2;
  }
  print_result(*outcome.result, flags.output);
  if (flags.write_reports) {
    const ReportApiInfo& api = report_api_info(outcome.report_api);
    std::fprintf(stderr, "%ss (%s): %zu created, %zu updated, %zu deleted, %zu unchanged\n", std::string(api.title).c_str(),
                 std::string(api.api_version).c_str(), outcome.writes.created, outcome.writes.updated,
                 outcome.writes.deleted, outcome.writes.unchanged);
  }
  return has_deny(*outcome.result) ? 1 : 0;
}

}  // namespace gpu_admission::webhook
