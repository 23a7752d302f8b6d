// The fake API server's resource table and discovery (see fake_apiserver.h): the default table,
// adding and removing resources, resolving the names tests use, the discovery documents the
// real API server answers (APIVersions, APIGroupList, APIGroup, APIResourceList), and the
// mapping of a request path to the resource it names.
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <tuple>

#include "test/fake_apiserver/fake_apiserver.h"
#include "test/fake_apiserver/fake_apiserver_internal.h"

namespace cluster_test {
namespace {

const std::vector<std::string> kVerbs = {"create", "delete", "deletecollection", "get",
                                         "list", "patch", "update", "watch"};

ResourceType core(std::string resource, std::string kind, std::vector<std::string> short_names,
                  std::vector<std::string> categories, bool namespaced = true) {
  return {"", "v1", std::move(resource), std::move(kind), namespaced, std::move(short_names), std::move(categories)};
}

ResourceType workload(std::string group, std::string resource, std::string kind, std::vector<std::string> short_names) {
  return {std::move(group), "v1", std::move(resource), std::move(kind), true, std::move(short_names), {"all"}};
}

ResourceType report(std::string resource, std::string kind, std::string short_name, bool namespaced) {
  return {"wgpolicyk8s.io", "v1alpha2", std::move(resource), std::move(kind), namespaced, {std::move(short_name)},
          {}, true, policy_report_problems};
}

ResourceType open_report(std::string resource, std::string kind, std::string short_name, bool namespaced) {
  return {"openreports.io", "v1alpha1", std::move(resource), std::move(kind), namespaced, {std::move(short_name)},
          {}, true, open_report_problems};
}

// How Kubernetes orders versions (GA before beta before alpha, then the higher number first):
// the larger rank is preferred. Names outside that scheme rank lowest.
std::tuple<int, int, int> version_rank(std::string_view version) {
  const auto number = [&](size_t& at) {
    int value = -1;
    const auto [end, error] = std::from_chars(version.data() + at, version.data() + version.size(), value);
    at = static_cast<size_t>(end - version.data());
    return error == std::errc() ? value : -1;
  };
  if (version.size() < 2 || version[0] != 'v') return {0, 0, 0};
  size_t at = 1;
  const int major = number(at);
  if (major < 0) return {0, 0, 0};
  if (at == version.size()) return {3, major, 0};
  const std::string_view rest = version.substr(at);
  const int level = rest.rfind("beta", 0) == 0 ? 2 : rest.rfind("alpha", 0) == 0 ? 1 : 0;
  at += level == 2 ? 4 : 5;
  const int minor = level == 0 ? -1 : number(at);
  if (minor < 0 || at != version.size()) return {0, 0, 0};
  return {level, major, minor};
}

Json group_version_entry(const std::string& group, const std::string& version) {
  return {{"groupVersion", group + "/" + version}, {"version", version}};
}

// Whether `name` is type.name() ("pods", "deployments.apps"), without making that string: every
// put() asks, and a stand-in puts hundreds of thousands of objects.
bool named(const ResourceType& type, std::string_view name) {
  if (type.group.empty()) return name == type.resource;
  return name.size() == type.resource.size() + 1 + type.group.size() && name.starts_with(type.resource) &&
         name[type.resource.size()] == '.' && name.ends_with(type.group);
}

Json resource_entry(const ResourceType& type) {
  std::string singular = type.kind;
  std::transform(singular.begin(), singular.end(), singular.begin(), [](unsigned char c) { return std::tolower(c); });
  Json entry = {{"name", type.resource}, {"singularName", singular}, {"namespaced", type.namespaced},
                {"kind", type.kind}, {"verbs", kVerbs}};
  if (!type.short_names.empty()) entry["shortNames"] = type.short_names;
  if (!type.categories.empty()) entry["categories"] = type.categories;
  return entry;
}

}  // namespace

std::vector<ResourceType> default_resources() {
  std::vector<ResourceType> table = {
      core("namespaces", "Namespace", {"ns"}, {}, false),
      core("pods", "Pod", {"po"}, {"all"}),
      core("replicationcontrollers", "ReplicationController", {"rc"}, {"all"}),
      core("podtemplates", "PodTemplate", {}, {}),
      workload("apps", "deployments", "Deployment", {"deploy"}),
      workload("apps", "replicasets", "ReplicaSet", {"rs"}),
      workload("apps", "statefulsets", "StatefulSet", {"sts"}),
      workload("apps", "daemonsets", "DaemonSet", {"ds"}),
      workload("batch", "jobs", "Job", {}),
      workload("batch", "cronjobs", "CronJob", {"cj"}),
  };
  // DRA in three versions, listed oldest-first out of order so a client has to pick the newest.
  for (const char* version : {"v1beta1", "v1", "v1beta2"}) {
    table.push_back({"resource.k8s.io", version, "resourceclaims", "ResourceClaim"});
    table.push_back({"resource.k8s.io", version, "resourceclaimtemplates", "ResourceClaimTemplate"});
  }
  table.push_back(report("policyreports", "PolicyReport", "polr", true));
  table.push_back(report("clusterpolicyreports", "ClusterPolicyReport", "cpolr", false));
  table.push_back(open_report("reports", "Report", "reps", true));
  table.push_back(open_report("clusterreports", "ClusterReport", "creps", false));
  for (ResourceType& type : admission_resources()) table.push_back(std::move(type));
  return table;
}

void FakeApiServer::add_resource(ResourceType type) {
  std::lock_guard lock(mutex_);
  for (ResourceType& existing : resources_) {
    if (existing.group == type.group && existing.version == type.version && existing.resource == type.resource) {
      existing = std::move(type);
      return;
    }
  }
  resources_.push_back(std::move(type));
}

bool FakeApiServer::remove_resource(const std::string& resource) {
  std::lock_guard lock(mutex_);
  std::string error;
  const std::string name = resolve_locked(resource, error);
  if (name.empty()) return false;
  std::erase_if(resources_, [&](const ResourceType& type) { return type.name() == name; });
  objects_.erase(name);
  key_index_.erase(name);
  return true;
}

std::vector<ResourceType> FakeApiServer::resources() const {
  std::lock_guard lock(mutex_);
  return resources_;
}

std::string FakeApiServer::resolve_locked(const std::string& resource, std::string& error) const {
  std::set<std::string> names;
  for (const ResourceType& type : resources_) {
    if (named(type, resource)) return resource;
    if (type.resource == resource) names.insert(type.name());
  }
  if (names.size() == 1) return *names.begin();
  if (names.empty()) {
    error = "no resource \"" + resource + "\" is served (add_resource() registers one)";
  } else {
    error = "\"" + resource + "\" is served by several groups; name it as one of:";
    for (const std::string& name : names) error += " " + name;
  }
  return "";
}

const ResourceType* FakeApiServer::preferred_locked(const std::string& name) const {
  const ResourceType* best = nullptr;
  for (const ResourceType& type : resources_)
    if (type.name() == name && (best == nullptr || version_rank(type.version) > version_rank(best->version)))
      best = &type;
  return best;
}

bool FakeApiServer::group_hidden(std::string_view group) const {
  return (group == "resource.k8s.io" && !serve_dra) || (group == "wgpolicyk8s.io" && !serve_policy_reports) ||
         (group == "openreports.io" && !serve_open_reports);
}

// Answers the discovery paths (true), 404 for those of groups or versions not served.
// A group's versions are listed in the table's order; its preferred version is the newest.
bool FakeApiServer::serve_discovery(const std::vector<std::string>& segments, httplib::Response& res) const {
  const bool core_path = !segments.empty() && segments[0] == "api";
  if (segments.empty() || segments.size() > (core_path ? 2u : 3u)) return false;
  std::lock_guard lock(mutex_);
  if (core_path && segments.size() == 1) {
    fake::reply(
        res, 200,
        {{"kind", "APIVersions"},
         {"versions", {"v1"}},
         {"serverAddressByClientCIDRs",
          Json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:" + std::to_string(port_)}}})}});
    return true;
  }
  // /api/v1 names the core group and its version; /apis, /apis/GROUP, /apis/GROUP/VERSION.
  std::optional<std::string> wanted_group, wanted_version;
  if (core_path) wanted_group = "";
  else if (segments.size() >= 2) wanted_group = segments[1];
  if (segments.size() == (core_path ? 2u : 3u)) wanted_version = segments.back();
  // The served groups (table order) with their versions, and the resources of the version asked for.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> versions;
  Json resources = Json::array();
  for (const ResourceType& type : resources_) {
    const bool visible = type.group.empty() ? core_path : !core_path && !group_hidden(type.group);
    if (!visible) continue;
    auto& listed = versions[type.group];
    if (listed.empty()) groups.push_back(type.group);
    if (std::find(listed.begin(), listed.end(), type.version) == listed.end()) listed.push_back(type.version);
    if (type.group == wanted_group && type.version == wanted_version) resources.push_back(resource_entry(type));
  }
  const auto group_entry = [&](const std::string& group) {
    const auto& listed = versions[group];
    const auto newest = std::max_element(listed.begin(), listed.end(), [](const std::string& a, const std::string& b) {
      return version_rank(a) < version_rank(b);
    });
    Json entry = {
        {"name", group}, {"versions", Json::array()}, {"preferredVersion", group_version_entry(group, *newest)}};
    for (const std::string& version : listed) entry["versions"].push_back(group_version_entry(group, version));
    return entry;
  };
  if (wanted_version) {
    if (resources.empty()) fake::reply(res, 404, fake::no_such_path());
    else fake::reply(res, 200, {{"kind", "APIResourceList"}, {"apiVersion", "v1"},
                                {"groupVersion", core_path ? *wanted_version : *wanted_group + "/" + *wanted_version},
                                {"resources", resources}});
  } else if (wanted_group && !versions.count(*wanted_group)) {
    fake::reply(res, 404, fake::no_such_path());
  } else if (wanted_group) {
    Json document = {{"kind", "APIGroup"}, {"apiVersion", "v1"}};
    document.update(group_entry(*wanted_group));
    fake::reply(res, 200, document);
  } else {
    Json list = Json::array();
    for (const std::string& group : groups) list.push_back(group_entry(group));
    fake::reply(res, 200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
  }
  return true;
}

// A resource path: /api/v1/[namespaces/NS/]RESOURCE[/NAME] or the same under /apis/GROUP/VERSION.
bool FakeApiServer::find_target(const std::vector<std::string>& segments, Target& target) const {
  size_t first = 0;
  std::string group, version;
  if (segments.size() >= 3 && segments[0] == "api" && segments[1] == "v1") {
    version = "v1";
    first = 2;
  } else if (segments.size() >= 4 && segments[0] == "apis" && !group_hidden(segments[1])) {
    group = segments[1];
    version = segments[2];
    first = 3;
  } else {
    return false;
  }
  const std::vector<std::string> rest(segments.begin() + static_cast<long>(first), segments.end());
  std::string resource;
  if (rest.size() <= 2) {
    resource = rest[0];
    target.object_name = rest.size() == 2 ? rest[1] : "";
  } else if (rest.size() <= 4 && rest[0] == "namespaces") {
    target.namespace_name = rest[1];
    resource = rest[2];
    target.object_name = rest.size() == 4 ? rest[3] : "";
  } else {
    return false;
  }
  std::lock_guard lock(mutex_);
  for (const ResourceType& type : resources_) {
    if (type.group != group || type.version != version || type.resource != resource) continue;
    // A namespaced object needs its namespace; a cluster-scoped resource has none.
    if (type.namespaced ? target.namespace_name.empty() && !target.object_name.empty() : !target.namespace_name.empty())
      return false;
    target.type = type;
    target.name = type.name();
    return true;
  }
  return false;
}

}  // namespace cluster_test
