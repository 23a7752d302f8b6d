#include "webhook/audit/report_writer.h"

#include <algorithm>

#include <simdjson.h>

#include "webhook/audit/audit_output.h"
#include "webhook/cluster/informer.h"
#include "webhook/io/policy_report.h"

namespace gpu_admission::webhook::audit {
namespace {

constexpr std::chrono::milliseconds kWriteTimeout{30'000};
constexpr std::string_view kManagedBy = "app.kubernetes.io/managed-by=gpu-admission";

std::string api_path(const ReportApiInfo& api) {
  return "/apis/" + std::string(api.group) + "/" + std::string(api.version);
}

// Where each API's CRD comes from.
std::string_view crd_source(ReportApi api) {
  return api == ReportApi::OpenReports
             ? "OpenReports' openreports.io_reports.yaml from github.com/openreports/reports-api, or Kyverno's chart"
             : "the Kubernetes policy working group's wgpolicyk8s.io_policyreports.yaml";
}

std::string crd_missing(const cluster::KubeClient& client, ReportApi api) {
  const ReportApiInfo& info = report_api_info(api);
  return "the " + std::string(info.title) + " CRD (" + std::string(info.resource) + "." + std::string(info.group) + ", " +
         std::string(info.version) + ") is not installed in the cluster at " + client.url("/") + ": install it (" +
         std::string(crd_source(api)) + "), choose the other report API with --report-api, or run the audit without "
         "--write-reports";
}

// Whether the cluster serves `api`'s namespaced reports (its group version lists the resource).
std::optional<std::string> serves(const cluster::KubeClient& client, ReportApi api, bool& out) {
  const ReportApiInfo& info = report_api_info(api);
  const std::string path = api_path(info);
  const cluster::HttpResult result = client.get(path, kWriteTimeout, 8u << 20);
  out = false;
  if (result.status == 404) return std::nullopt;
  if (!result.ok()) return "discovery " + client.url(path) + ": " + result.describe();
  const Json list = Json::parse(result.body, nullptr, false);
  if (!list.is_object() || !list.contains("resources") || !list["resources"].is_array())
    return "discovery " + client.url(path) + ": not an APIResourceList";
  for (const Json& resource : list["resources"])
    if (resource.is_object() && resource.value("name", "") == info.resource) out = true;
  return std::nullopt;
}

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace

uint64_t report_fingerprint(const Json& report) {
  Json content = {{"summary", report.value("summary", Json::object())}, {"results", Json::array()}};
  if (report.contains("metadata") && report["metadata"].contains("annotations"))
    content["annotations"] = report["metadata"]["annotations"];
  if (report.contains("results") && report["results"].is_array())
    for (Json result : report["results"]) {
      if (result.is_object()) result.erase("timestamp");
      content["results"].push_back(std::move(result));
    }
  return fnv1a(content.dump());
}

std::optional<std::string> choose_report_api(const cluster::KubeClient& client, std::optional<ReportApi> asked,
                                             ReportApi& out) {
  if (asked) {
    out = *asked;
    return std::nullopt;
  }
  for (const ReportApi api : kReportApisByPreference) {
    bool served = false;
    if (auto err = serves(client, api, served)) return err;
    if (!served) continue;
    out = api;
    return std::nullopt;
  }
  return "neither report CRD is installed in the cluster at " + client.url("/") +
         " (reports.openreports.io, v1alpha1; policyreports.wgpolicyk8s.io, v1alpha2): install one (" +
         std::string(crd_source(ReportApi::OpenReports)) + "; or " + std::string(crd_source(ReportApi::WgPolicy)) +
         ") or run the audit without --write-reports";
}

ReportWriter::ReportWriter(const cluster::KubeClient& client, std::vector<std::string> namespaces, ReportApi api)
    : client_(client), namespaces_(std::move(namespaces)), api_(api), api_path_(api_path(report_api_info(api))) {}

std::string ReportWriter::reports_path(std::string_view ns) const {
  return api_path_ + "/namespaces/" + std::string(ns) + "/" + std::string(report_api_info(api_).resource);
}

std::optional<std::string> ReportWriter::list_page(const std::string& path, std::string& continue_token) {
  std::string page_path = path + "?labelSelector=" + cluster::url_encode(kManagedBy) + "&limit=50";
  if (!continue_token.empty()) page_path += "&continue=" + cluster::url_encode(continue_token);
  const cluster::HttpResult result = client_.get(page_path, kWriteTimeout, 64u << 20);
  if (result.status == 404) return crd_missing(client_, api_);
  if (!result.ok()) return "list " + client_.url(page_path) + ": " + result.describe();
  const Json page = Json::parse(result.body, nullptr, false);
  if (page.is_discarded() || !page.is_object()) return "list " + client_.url(page_path) + ": not JSON";
  for (const Json& item : page.value("items", Json::array())) {
    const Json metadata = item.value("metadata", Json::object());
    if (metadata.value("name", "") != kPolicyReportName) continue;
    Existing& e = existing_[metadata.value("namespace", "")];
    e.resource_version = metadata.value("resourceVersion", "");
    e.fingerprint = report_fingerprint(item);
  }
  continue_token = page.value("metadata", Json::object()).value("continue", "");
  return std::nullopt;
}

std::optional<std::string> ReportWriter::begin() {
  std::vector<std::string> paths;
  if (namespaces_.empty()) paths.push_back(api_path_ + "/" + std::string(report_api_info(api_).resource));
  for (const auto& ns : namespaces_) paths.push_back(reports_path(ns));
  for (const auto& path : paths) {
    std::string continue_token;
    do {
      if (auto err = list_page(path, continue_token)) return err;
    } while (!continue_token.empty());
  }
  return std::nullopt;
}

std::optional<std::string> ReportWriter::update(const std::string& ns, Json report, Existing& existing) {
  const std::string path = reports_path(ns) + "/" + std::string(kPolicyReportName);
  for (int attempt = 0; attempt < 2; ++attempt) {
    report["metadata"]["resourceVersion"] = existing.resource_version;
    const cluster::HttpResult result = client_.send("PUT", path, report.dump(), kWriteTimeout);
    if (result.ok()) return std::nullopt;
    if (result.status != 409 || attempt > 0) return "update " + client_.url(path) + ": " + result.describe();
    // Changed meanwhile (a second audit, a person): write over it with its current version.
    const cluster::HttpResult current = client_.get(path, kWriteTimeout, 64u << 20);
    if (!current.ok()) return "get " + client_.url(path) + ": " + current.describe();
    const Json object = Json::parse(current.body, nullptr, false);
    if (object.is_discarded()) return "get " + client_.url(path) + ": not JSON";
    existing.resource_version = object.value("metadata", Json::object()).value("resourceVersion", "");
  }
  return std::nullopt;
}

std::optional<std::string> ReportWriter::write(const Json& report) {
  const std::string ns = report["metadata"].value("namespace", "");
  auto it = existing_.find(ns);
  if (it != existing_.end()) {
    it->second.kept = true;
    if (it->second.fingerprint == report_fingerprint(report)) {
      ++counts_.unchanged;
      return std::nullopt;
    }
    if (auto err = update(ns, report, it->second)) return err;
    ++counts_.updated;
    return std::nullopt;
  }
  const std::string path = reports_path(ns);
  const cluster::HttpResult result = client_.send("POST", path, report.dump(), kWriteTimeout);
  if (result.status == 404) return std::nullopt;  // the namespace went away (begin() found the CRD)
  if (result.status != 201 && !result.ok()) return "create " + client_.url(path) + ": " + result.describe();
  ++counts_.created;
  existing_[ns].kept = true;
  return std::nullopt;
}

std::optional<std::string> ReportWriter::finish() {
  for (const auto& [ns, existing] : existing_) {
    if (existing.kept) continue;
    const std::string path = reports_path(ns) + "/" + std::string(kPolicyReportName);
    const cluster::HttpResult result = client_.send("DELETE", path, "", kWriteTimeout);
    if (result.status == 404) continue;  // gone already
    if (!result.ok() && result.status != 202) return "delete " + client_.url(path) + ": " + result.describe();
    ++counts_.deleted;
  }
  return std::nullopt;
}

namespace {

// Deletes gpu-admission's reports of `api` (all of them: nothing is written there any more).
std::optional<std::string> retire(const cluster::KubeClient& client, const std::vector<std::string>& namespaces,
                                  ReportApi api, WriteCounts& counts) {
  bool served = false;
  if (auto err = serves(client, api, served)) return err;
  if (!served) return std::nullopt;
  ReportWriter old(client, namespaces, api);
  if (auto err = old.begin()) return err;
  if (auto err = old.finish()) return err;
  counts.deleted += old.counts().deleted;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> write_reports(const cluster::KubeClient& client, const std::vector<std::string>& namespaces,
                                         std::optional<ReportApi> asked, const AuditResult& result, int64_t timestamp,
                                         ReportApi& api, WriteCounts& counts) {
  if (auto err = choose_report_api(client, asked, api)) return err;
  ReportWriter writer(client, namespaces, api);
  std::optional<std::string> error = writer.begin();
  if (!error)
    for_each_policy_report(
        result, timestamp, [&](Json&& report) {
          if (!error) error = writer.write(report);
        },
        api);
  if (!error) error = writer.finish();
  if (error) return error;
  counts = writer.counts();
  if (asked) return std::nullopt;
  // Chosen by discovery: the reports of the API not chosen are retired (a cluster that gained
  // OpenReports keeps no stale PolicyReports of ours beside the new Reports).
  for (const ReportApi other : kReportApisByPreference)
    if (other != api)
      if (auto err = retire(client, namespaces, other, counts)) return err;
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::audit
