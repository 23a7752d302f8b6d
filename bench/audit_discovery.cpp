// Discovery documents and list routing of the audit benchmark's stand-in (audit_discovery.h).
// The groups and resources are those of a Kubernetes 1.34 API server (core and the built-in
// groups, resource.k8s.io in three versions), plus kubeflow.org (the training operator),
// monitoring.coreos.com and wgpolicyk8s.io. Resources the cluster's table holds (some with no
// objects) can be listed; the others appear in discovery only (the audit never lists them).
#include "bench/audit_discovery.h"

#include <algorithm>

namespace gpu_admission::bench::audit {
namespace {

const Json kAllVerbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
const Json kSubVerbs = {"get", "patch", "update"};

struct Group {
  std::string name;
  std::vector<std::string> versions;  // the first is preferred
};

const std::vector<Group>& groups() {
  static const std::vector<Group> table = {
      {"apiregistration.k8s.io", {"v1"}}, {"apps", {"v1"}}, {"events.k8s.io", {"v1"}},
      {"authentication.k8s.io", {"v1"}}, {"authorization.k8s.io", {"v1"}}, {"autoscaling", {"v2", "v1"}},
      {"batch", {"v1"}}, {"certificates.k8s.io", {"v1"}}, {"networking.k8s.io", {"v1"}}, {"policy", {"v1"}},
      {"rbac.authorization.k8s.io", {"v1"}}, {"storage.k8s.io", {"v1"}}, {"admissionregistration.k8s.io", {"v1"}},
      {"apiextensions.k8s.io", {"v1"}}, {"scheduling.k8s.io", {"v1"}}, {"coordination.k8s.io", {"v1"}},
      {"node.k8s.io", {"v1"}}, {"discovery.k8s.io", {"v1"}}, {"flowcontrol.apiserver.k8s.io", {"v1"}},
      {"resource.k8s.io", {"v1", "v1beta2", "v1beta1"}}, {"kubeflow.org", {"v1"}},
      {"monitoring.coreos.com", {"v1"}}, {"wgpolicyk8s.io", {"v1alpha2"}}};
  return table;
}

const Group* find_group(const std::string& name) {
  for (const Group& g : groups())
    if (g.name == name) return &g;
  return nullptr;
}

std::string singular_of(const std::string& plural) {
  if (plural.size() > 3 && plural.compare(plural.size() - 3, 3, "ses") == 0) return plural.substr(0, plural.size() - 2);
  return plural.empty() ? plural : plural.substr(0, plural.size() - 1);
}

Json resource(const std::string& name, const std::string& kind, bool namespaced, const Json& verbs,
              const Json& short_names = Json::array()) {
  Json r = {{"name", name}, {"singularName", name.find('/') == std::string::npos ? singular_of(name) : ""},
            {"namespaced", namespaced}, {"kind", kind}, {"verbs", verbs}};
  if (!short_names.empty()) r["shortNames"] = short_names;
  if (name.find('/') == std::string::npos) r["storageVersionHash"] = std::to_string(std::hash<std::string>{}(name) % 100000000000ull);
  return r;
}

// Resources listed in discovery besides those the cluster holds objects of, with sub-resources.
void extra_resources(const std::string& group, Json& out) {
  auto add = [&](const char* name, const char* kind, bool namespaced, const Json& verbs) {
    out.push_back(resource(name, kind, namespaced, verbs));
  };
  if (group.empty()) {
    add("bindings", "Binding", true, {"create"});
    add("configmaps", "ConfigMap", true, kAllVerbs);
    add("endpoints", "Endpoints", true, kAllVerbs);
    add("events", "Event", true, kAllVerbs);
    add("limitranges", "LimitRange", true, kAllVerbs);
    add("namespaces/finalize", "Namespace", false, {"update"});
    add("namespaces/status", "Namespace", false, kSubVerbs);
    add("nodes", "Node", false, kAllVerbs);
    add("nodes/proxy", "NodeProxyOptions", false, {"create", "delete", "get", "patch", "update"});
    add("nodes/status", "Node", false, kSubVerbs);
    add("persistentvolumeclaims", "PersistentVolumeClaim", true, kAllVerbs);
    add("persistentvolumes", "PersistentVolume", false, kAllVerbs);
    for (const char* sub : {"pods/attach", "pods/exec", "pods/portforward", "pods/proxy"})
      add(sub, "PodProxyOptions", true, {"create", "get"});
    add("pods/binding", "Binding", true, {"create"});
    add("pods/ephemeralcontainers", "Pod", true, kSubVerbs);
    add("pods/eviction", "Eviction", true, {"create"});
    add("pods/log", "Pod", true, {"get"});
    add("pods/resize", "Pod", true, kSubVerbs);
    add("pods/status", "Pod", true, kSubVerbs);
    add("replicationcontrollers/scale", "Scale", true, kSubVerbs);
    add("replicationcontrollers/status", "ReplicationController", true, kSubVerbs);
    add("resourcequotas", "ResourceQuota", true, kAllVerbs);
    add("secrets", "Secret", true, kAllVerbs);
    add("serviceaccounts", "ServiceAccount", true, kAllVerbs);
    add("serviceaccounts/token", "TokenRequest", true, {"create"});
    add("services", "Service", true, kAllVerbs);
    add("services/status", "Service", true, kSubVerbs);
  } else if (group == "apps") {
    add("controllerrevisions", "ControllerRevision", true, kAllVerbs);
    for (const char* kind : {"Deployment", "ReplicaSet", "StatefulSet"}) {
      std::string plural = kind;
      std::transform(plural.begin(), plural.end(), plural.begin(), ::tolower);
      add((plural + "s/scale").c_str(), "Scale", true, kSubVerbs);
      add((plural + "s/status").c_str(), kind, true, kSubVerbs);
    }
    add("daemonsets/status", "DaemonSet", true, kSubVerbs);
  } else if (group == "batch") {
    add("cronjobs/status", "CronJob", true, kSubVerbs);
    add("jobs/status", "Job", true, kSubVerbs);
  } else if (group == "resource.k8s.io") {
    add("deviceclasses", "DeviceClass", false, kAllVerbs);
    add("resourceclaims/status", "ResourceClaim", true, kSubVerbs);
    add("resourceslices", "ResourceSlice", false, kAllVerbs);
  } else if (group == "wgpolicyk8s.io") {
    add("policyreports", "PolicyReport", true, kAllVerbs);
    add("clusterpolicyreports", "ClusterPolicyReport", false, kAllVerbs);
  } else if (group == "networking.k8s.io") {
    add("ingresses", "Ingress", true, kAllVerbs);
    add("networkpolicies", "NetworkPolicy", true, kAllVerbs);
  }
}

std::string resource_list(const GeneratedCluster& cluster, const std::string& group, const std::string& version) {
  Json resources = Json::array();
  for (const Resource& r : cluster.resources) {
    if (r.group != group) continue;
    Json short_names = Json::array();
    if (r.plural == "pods") short_names = {"po"};
    if (r.plural == "namespaces") short_names = {"ns"};
    if (r.plural == "deployments") short_names = {"deploy"};
    resources.push_back(resource(r.plural, r.kind, r.namespaced, kAllVerbs, short_names));
    if (group == "kubeflow.org") resources.push_back(resource(r.plural + "/status", r.kind, true, kSubVerbs));
  }
  extra_resources(group, resources);
  std::sort(resources.begin(), resources.end(), [](const Json& a, const Json& b) { return a["name"] < b["name"]; });
  const std::string group_version = group.empty() ? version : group + "/" + version;
  Json out = {{"kind", "APIResourceList"}, {"groupVersion", group_version}, {"resources", resources}};
  if (!group.empty()) out["apiVersion"] = "v1";
  return out.dump();
}

Json group_json(const Group& g) {
  Json versions = Json::array();
  for (const auto& v : g.versions) versions.push_back({{"groupVersion", g.name + "/" + v}, {"version", v}});
  return {{"name", g.name}, {"versions", versions}, {"preferredVersion", versions[0]}};
}

}  // namespace

bool discovery_document(const GeneratedCluster& cluster, const std::vector<std::string>& path, std::string& out) {
  if (path.size() == 1 && path[0] == "api") {
    out = Json{{"kind", "APIVersions"}, {"versions", {"v1"}},
               {"serverAddressByClientCIDRs", Json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "10.0.0.1:6443"}}})}}
              .dump();
    return true;
  }
  if (path.size() == 2 && path[0] == "api" && path[1] == "v1") {
    out = resource_list(cluster, "", "v1");
    return true;
  }
  if (path.empty() || path[0] != "apis") return false;
  if (path.size() == 1) {
    Json list = Json::array();
    for (const Group& g : groups()) list.push_back(group_json(g));
    out = Json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}}.dump();
    return true;
  }
  const Group* g = find_group(path[1]);
  if (!g) return false;
  if (path.size() == 2) {
    Json doc = {{"kind", "APIGroup"}, {"apiVersion", "v1"}};
    const Json group = group_json(*g);
    for (const auto& [k, v] : group.items()) doc[k] = v;
    out = doc.dump();
    return true;
  }
  if (path.size() != 3 || std::find(g->versions.begin(), g->versions.end(), path[2]) == g->versions.end()) return false;
  out = resource_list(cluster, g->name, path[2]);
  return true;
}

ListTarget list_target(const GeneratedCluster& cluster, const std::vector<std::string>& path) {
  std::string group, plural, ns;
  size_t rest = 0;
  if (path.size() >= 3 && path[0] == "api" && path[1] == "v1") {
    rest = 2;
  } else if (path.size() >= 4 && path[0] == "apis") {
    const Group* g = find_group(path[1]);
    if (!g || std::find(g->versions.begin(), g->versions.end(), path[2]) == g->versions.end()) return {};
    group = g->name;
    rest = 3;
  } else {
    return {};
  }
  if (path.size() == rest + 1) {
    plural = path[rest];
  } else if (path.size() == rest + 3 && path[rest] == "namespaces") {
    ns = path[rest + 1];
    plural = path[rest + 2];
  } else {
    return {};
  }
  for (const Resource& r : cluster.resources)
    if (r.group == group && r.plural == plural && (r.namespaced || ns.empty())) return {&r, ns};
  return {};
}

}  // namespace gpu_admission::bench::audit
