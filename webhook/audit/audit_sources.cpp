#include "webhook/audit/audit_sources.h"

#include <algorithm>
#include <map>
#include <set>

#include "webhook/cluster/cluster_state.h"
#include "webhook/cluster/informer.h"
#include "webhook/cluster/watch_decoder.h"

namespace gpu_admission::webhook::audit {
namespace {

constexpr std::chrono::milliseconds kDiscoveryTimeout{15'000};

std::optional<std::string> get_json(const cluster::KubeClient& client, const std::string& path, std::string& body) {
  const cluster::HttpResult result = client.get(path, kDiscoveryTimeout, 8u << 20);
  if (!result.ok()) return "discovery " + client.url(path) + ": " + result.describe();
  body = result.body;
  return std::nullopt;
}

// The newest version of scheduling.k8s.io that serves podgroups, "" when none does.
std::optional<std::string> pod_group_version(const cluster::KubeClient& client, std::string& version) {
  std::string body;
  if (auto err = get_json(client, "/apis/scheduling.k8s.io", body)) return err;
  version.clear();
  for (const std::string& candidate : cluster::pod_group_version_candidates(body)) {
    if (auto err = get_json(client, "/apis/scheduling.k8s.io/" + candidate, body)) return err;
    if (!cluster::serves_resource(body, "podgroups")) continue;
    version = candidate;
    return std::nullopt;
  }
  return std::nullopt;
}

// The version each needed group is read in: the preferred one, the newest of v1, v1beta2,
// v1beta1 for resource.k8s.io (the claim decoder reads all three), and for scheduling.k8s.io
// the newest that serves podgroups ("" when none: PodGroups are then not served).
std::optional<std::string> group_versions(const cluster::KubeClient& client, const std::set<std::string>& needed,
                                          std::map<std::string, std::string>& versions) {
  std::string body;
  if (auto err = get_json(client, "/apis", body)) return err;
  std::vector<std::pair<std::string, std::string>> groups;
  if (auto err = read_group_list(body, groups)) return "discovery " + client.url("/apis") + ": " + *err;
  for (const auto& [group, version] : groups) {
    if (!needed.count(group)) continue;
    versions[group] = version;
    if (group == "scheduling.k8s.io") {
      if (auto err = pod_group_version(client, versions[group])) return err;
      continue;
    }
    if (group != "resource.k8s.io") continue;
    if (auto err = get_json(client, "/apis/resource.k8s.io", body)) return err;
    versions[group] = cluster::pick_claims_version(body);
  }
  versions[""] = "v1";
  return std::nullopt;
}

void note_unserved(const std::vector<AuditKind>& unserved, Auditor& auditor) {
  if (unserved.empty()) return;
  std::string text = "not served by this cluster, so not audited:";
  for (size_t i = 0; i < unserved.size(); ++i)
    text += (i ? ", " : " ") + unserved[i].label();
  auditor.note(text);
}

// One kind, page by page.
std::optional<std::string> list_kind(const cluster::KubeClient& client, const AuditKind& kind, const std::string& path,
                                     const ClusterListOptions& options, simdjson::dom::parser& parser,
                                     Auditor& auditor) {
  std::string continue_token;
  size_t limit = std::max<size_t>(options.page_size, 1);
  while (true) {
    std::string page_path = path + "?limit=" + std::to_string(limit);
    if (!continue_token.empty()) page_path += "&continue=" + cluster::url_encode(continue_token);
    const cluster::HttpResult result = client.get(page_path, options.request_timeout, options.max_page_bytes);
    if (result.too_large && limit > 1) {
      limit = std::max<size_t>(limit / 2, 1);  // huge objects: the same page, fewer at a time
      continue;
    }
    if (result.status == 410)
      return "list " + client.url(page_path) + ": the list expired while it was read (HTTP 410): run the audit again";
    if (!result.ok()) return "list " + client.url(page_path) + ": " + result.describe();
    cluster::ListPage page;
    if (auto err = cluster::decode_list_page(parser, result.body, page)) return "list " + client.url(page_path) + ": " + *err;
    for (auto item : page.items) auditor.add(kind, item);
    if (page.continue_token.empty()) return std::nullopt;
    continue_token = std::string(page.continue_token);
  }
}

}  // namespace

std::optional<std::string> discover_kinds(const cluster::KubeClient& client, std::vector<AuditKind>& kinds,
                                          Auditor& auditor) {
  std::set<std::string> needed;
  for (const auto& k : kinds)
    if (!k.group.empty()) needed.insert(k.group);
  std::map<std::string, std::string> versions;
  if (auto err = group_versions(client, needed, versions)) return err;
  std::map<std::string, ServedResources> served;  // by group
  for (const auto& [group, version] : versions) {
    if (version.empty()) continue;
    const std::string path = group.empty() ? "/api/v1" : "/apis/" + group + "/" + version;
    std::string body;
    if (auto err = get_json(client, path, body)) return err;
    if (auto err = read_resource_list(body, served[group])) return "discovery " + client.url(path) + ": " + *err;
  }
  std::vector<AuditKind> kept, unserved;
  for (AuditKind& k : kinds) {
    auto it = served.find(k.group);
    const std::string* resource = it == served.end() ? nullptr : it->second.resource_of(k.kind);
    if (!resource) {
      unserved.push_back(std::move(k));
      continue;
    }
    k.version = versions[k.group];
    k.resource = *resource;
    kept.push_back(std::move(k));
  }
  kinds = std::move(kept);
  note_unserved(unserved, auditor);
  return std::nullopt;
}

std::optional<std::string> list_into(const cluster::KubeClient& client, const std::vector<AuditKind>& kinds,
                                     const ClusterListOptions& options, Auditor& auditor) {
  simdjson::dom::parser parser;
  if (cluster::allow_stored_depth(parser)) return std::string("out of memory for the JSON parser");
  for (const AuditKind& kind : kinds) {
    if (options.namespaces.empty()) {
      if (auto err = list_kind(client, kind, kind.list_path(), options, parser, auditor)) return err;
      continue;
    }
    for (const std::string& ns : options.namespaces) {
      if (kind.role == KindRole::Namespace) {
        // Only the namespaces asked for: each one's own object.
        const std::string path = kind.list_path() + "/" + ns;
        const cluster::HttpResult result = client.get(path, options.request_timeout, 8u << 20);
        if (result.status == 404) return "namespace " + ns + " does not exist (" + client.url(path) + ")";
        if (!result.ok()) return "get " + client.url(path) + ": " + result.describe();
        simdjson::dom::element object;
        if (parser.parse(result.body).get(object)) return "get " + client.url(path) + ": not JSON";
        auditor.add(kind, object);
        continue;
      }
      if (auto err = list_kind(client, kind, kind.list_path(ns), options, parser, auditor)) return err;
    }
  }
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::audit
