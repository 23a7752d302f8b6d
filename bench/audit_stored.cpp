// Stored objects of the audit benchmark's cluster (audit_objects.h): pods made from a template as
// the API server holds them after /mutate, admission and scheduling, with the kubelet's status;
// object metadata with managedFields; Namespaces.
#include <algorithm>

#include "bench/audit_objects.h"

namespace gpu_admission::bench::audit {
namespace {

// Server-side apply's field sets (managedFields[].fieldsV1), written as JSON text: "f:NAME" per
// field, "." for a map or list item that is itself owned, and list items with a key (name,
// type, containerPort, uid) one by one; other lists, and the kubelet's container statuses, are
// atomic.
void field_value(const std::string& key, const Json& child, std::string& out);

std::string quoted(const std::string& text) { return Json(text).dump(); }

// The key of a list item, or "" when the list is atomic.
std::string item_key(const Json& item) {
  if (!item.is_object()) return "";
  if (item.contains("containerPort"))
    return "k:{\"containerPort\":" + item["containerPort"].dump() + ",\"protocol\":\"TCP\"}";
  for (const char* key : {"name", "type", "uid"})
    if (item.contains(key) && item[key].is_string()) return "k:{\"" + std::string(key) + "\":" + item[key].dump() + "}";
  return "";
}

// The members of object `value` ("f:a":{...},"f:b":{}), each preceded by a comma unless first.
void field_members(const Json& value, std::string& out, bool first) {
  for (const auto& [key, child] : value.items()) {
    if (!first) out += ',';
    first = false;
    out += quoted("f:" + key);
    out += ':';
    field_value(key, child, out);
  }
}

void field_value(const std::string& key, const Json& child, std::string& out) {
  if (child.is_object() && !child.empty()) {
    out += R"({".":{})";
    field_members(child, out, false);
    out += '}';
    return;
  }
  if (!child.is_array() || key == "containerStatuses" || key == "initContainerStatuses") {
    out += "{}";
    return;
  }
  std::string items;
  for (const Json& item : child) {
    const std::string item_name = item_key(item);
    if (item_name.empty()) {
      out += "{}";
      return;
    }
    items += items.empty() ? "{" : ",";
    items += quoted(item_name) + R"(:{".":{})";
    field_members(item, items, false);
    items += '}';
  }
  out += items.empty() ? "{}" : items + "}";
}

std::string field_set(const Json& value) {
  std::string out = "{";
  field_members(value, out, true);
  return out + "}";
}

bool asks_for_gpu(const Json& c) {
  for (const char* list : {"limits", "requests"}) {
    if (!c.contains("resources") || !c["resources"].contains(list)) continue;
    for (const auto& [name, quantity] : c["resources"][list].items())
      if (name == "nvidia.com/gpu" || name.rfind("nvidia.com/mig-", 0) == 0) return true;
  }
  return false;
}

bool sets_env(const Json& c, const std::string& name) {
  if (!c.contains("env")) return false;
  return std::any_of(c["env"].begin(), c["env"].end(), [&](const Json& e) { return e["name"] == name; });
}

// What /mutate adds to a pod of `plan` (bench/audit-policy.yaml, every mutation on): MIG slices in
// place of whole GPUs (with the annotation that records it), the tenant's labels, the default
// pool's nodeSelector, and NVIDIA_VISIBLE_DEVICES=void in every container without a GPU.
void mutate(const TemplatePlan& plan, Json& pod) {
  Json& spec = pod["spec"];
  if (plan.pool >= 0 && pools()[plan.pool].mig) {
    Json converted = Json::array();
    for (Json& c : spec["containers"]) {
      bool changed = false;
      for (const char* list : {"requests", "limits"}) {
        Json& resources = c["resources"][list];
        if (!resources.contains("nvidia.com/gpu")) continue;
        Json count = resources["nvidia.com/gpu"];  // copied: the insertion below may move it
        resources.erase("nvidia.com/gpu");
        resources[std::string(kMigSlice)] = std::move(count);
        changed = true;
      }
      if (changed) converted.push_back(c["name"]);
    }
    if (!converted.empty())
      pod["metadata"]["annotations"]["gpu-admission.io/mig-injected"] =
          Json{{"strategy", "mixed"}, {"profile", "1g.10gb"}, {"containers", converted}}.dump();
  }
  if (plan.tenant) {
    pod["metadata"]["labels"]["gpu-admission.io/tenant"] = plan.tenant->name;
    pod["metadata"]["labels"]["cost-center"] = plan.tenant->cost_center;
  }
  if (plan.pool >= 0 && !spec.contains("nodeSelector"))
    spec["nodeSelector"] = {{std::string(kPoolLabel), pools()[plan.pool].name}};
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list)) continue;
    for (Json& c : spec[list]) {
      if (asks_for_gpu(c) || sets_env(c, "NVIDIA_VISIBLE_DEVICES")) continue;
      if (!c.contains("env")) c["env"] = Json::array();
      c["env"].push_back({{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "void"}});
    }
  }
}

// What the API server's admission adds: the service account's token volume and its mounts, the
// default not-ready/unreachable tolerations, priority, and the spec's remaining defaults.
void admit(Json& spec, const std::string& token_volume) {
  Json account = spec["serviceAccountName"];  // copied: inserting a key may move the others
  spec["serviceAccount"] = std::move(account);
  spec["volumes"].push_back(
      {{"name", token_volume},
       {"projected",
        {{"sources",
          Json::array({{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
                       {{"configMap", {{"name", "kube-root-ca.crt"}, {"items", Json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
                       {{"downwardAPI",
                         {{"items", Json::array({{{"path", "namespace"},
                                                  {"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}})}}}}})},
         {"defaultMode", 420}}}});
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list)) continue;
    for (Json& c : spec[list]) {
      if (!c.contains("volumeMounts")) c["volumeMounts"] = Json::array();
      c["volumeMounts"].push_back(
          {{"name", token_volume}, {"readOnly", true}, {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}});
    }
  }
  if (!spec.contains("tolerations")) spec["tolerations"] = Json::array();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
    spec["tolerations"].push_back({{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}});
  spec["priority"] = 0;
  spec["enableServiceLinks"] = true;
  spec["preemptionPolicy"] = "PreemptLowerPriority";
}

Json container_status(const Json& c, Rng& rng, const std::string& started, const std::string& finished, bool init) {
  Json s = {{"name", c["name"]}, {"image", c["image"]},
            {"imageID", c["image"].get<std::string>() + "@sha256:" + rng.hex(64)},
            {"containerID", "containerd://" + rng.hex(64)}, {"lastState", Json::object()}, {"restartCount", 0}};
  if (init || !finished.empty()) {
    s["state"] = {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", started},
                                  {"finishedAt", finished.empty() ? started : finished},
                                  {"containerID", s["containerID"]}}}};
    s["ready"] = init;
    s["started"] = false;
  } else {
    s["state"] = {{"running", {{"startedAt", started}}}};
    s["ready"] = true;
    s["started"] = true;
  }
  return s;
}

Json pod_status(const Json& spec, const PodInstance& pod) {
  Rng rng(pod.seed);
  const std::string scheduled = rfc3339(pod.created + 1), started = rfc3339(pod.created + 4);
  const std::string finished = pod.succeeded ? rfc3339(pod.created + 1800) : "";
  Json conditions = Json::array();
  auto condition = [&](const char* type, bool status, const std::string& at, const char* reason = nullptr) {
    Json c = {{"type", type}, {"status", status ? "True" : "False"}, {"lastProbeTime", nullptr}, {"lastTransitionTime", at}};
    if (reason) c["reason"] = reason;
    conditions.push_back(std::move(c));
  };
  condition("PodReadyToStartContainers", !pod.succeeded, started);
  condition("Initialized", true, started, pod.succeeded ? "PodCompleted" : nullptr);
  condition("Ready", !pod.succeeded, pod.succeeded ? finished : started, pod.succeeded ? "PodCompleted" : nullptr);
  condition("ContainersReady", !pod.succeeded, pod.succeeded ? finished : started, pod.succeeded ? "PodCompleted" : nullptr);
  condition("PodScheduled", true, scheduled);
  Json status = {{"phase", pod.succeeded ? "Succeeded" : "Running"}, {"conditions", conditions},
                 {"hostIP", pod.node_ip}, {"hostIPs", Json::array({{{"ip", pod.node_ip}}})}};
  if (!pod.succeeded) {
    status["podIP"] = pod.pod_ip;
    status["podIPs"] = Json::array({{{"ip", pod.pod_ip}}});
  }
  status["startTime"] = scheduled;
  if (spec.contains("initContainers")) {
    Json init = Json::array();
    for (const Json& c : spec["initContainers"]) init.push_back(container_status(c, rng, started, started, true));
    status["initContainerStatuses"] = std::move(init);
  }
  Json containers = Json::array();
  for (const Json& c : spec["containers"]) containers.push_back(container_status(c, rng, started, finished, false));
  status["containerStatuses"] = std::move(containers);
  status["qosClass"] = "Burstable";
  return status;
}

// Marks a placeholder value in a pod's tree; its dumped text is replaced by the real value.
constexpr const char* kManagedFieldsMark = "\x01managedFields";
constexpr const char* kStatusMark = "\x01status";

void replace_mark(std::string& text, const char* mark, const std::string& value) {
  const std::string dumped = Json(mark).dump();
  const size_t at = text.find(dumped);
  if (at != std::string::npos) text.replace(at, dumped.size(), value);
}

// One managedFields entry of an Update by `manager`, its field set given as text.
std::string entry_text(const std::string& manager, const std::string& api_version, int64_t time,
                       const std::string& fields, const std::string& subresource) {
  std::string out = R"({"manager":)" + quoted(manager) + R"(,"operation":"Update","apiVersion":)" + quoted(api_version) +
                    R"(,"time":")" + rfc3339(time) + R"(","fieldsType":"FieldsV1","fieldsV1":)" + fields;
  if (!subresource.empty()) out += R"(,"subresource":)" + quoted(subresource);
  return out + "}";
}

}  // namespace

Json object_meta(const std::string& name, const std::string& ns, const std::string& uid, int64_t created, Json labels,
                 Json annotations, const OwnerRef& owner) {
  Json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  meta["uid"] = uid;
  meta["generation"] = 1;
  meta["creationTimestamp"] = rfc3339(created);
  if (!labels.empty()) meta["labels"] = std::move(labels);
  if (!annotations.empty()) meta["annotations"] = std::move(annotations);
  if (!owner.kind.empty())
    meta["ownerReferences"] = Json::array({{{"apiVersion", owner.api_version}, {"kind", owner.kind}, {"name", owner.name},
                                            {"uid", owner.uid}, {"controller", true}, {"blockOwnerDeletion", true}}});
  return meta;
}

std::string managed_entry(const std::string& manager, const std::string& api_version, int64_t time, const Json& fields,
                          const std::string& subresource) {
  return entry_text(manager, api_version, time, field_set(fields), subresource);
}

Json namespace_object(const Namespace& ns, const std::string& uid, int64_t created) {
  Json labels = {{"kubernetes.io/metadata.name", ns.name}};
  if (ns.tenant >= 0) {
    const Tenant& t = tenants()[ns.tenant];
    labels["example.com/team"] = t.name;
    labels["example.com/cost-center"] = t.cost_center;
  }
  Json meta = object_meta(ns.name, "", uid, created, labels);
  meta.erase("generation");
  meta["managedFields"] = Json::parse("[" + managed_entry("kubectl-create", "v1", created, {{"metadata", {{"labels", labels}}}}) + "]");
  return {{"metadata", meta}, {"spec", {{"finalizers", {"kubernetes"}}}}, {"status", {{"phase", "Active"}}}};
}

PodMaker::PodMaker(const TemplatePlan& plan, const Json& pod_template, OwnerRef owner, std::string manager,
                   std::vector<std::pair<std::string, std::string>> pod_labels)
    : manager_(std::move(manager)) {
  Json labels = pod_template["metadata"]["labels"];
  for (const auto& [k, v] : pod_labels) labels[k] = v;
  Json annotations = pod_template["metadata"].value("annotations", Json::object());
  Json pod = {{"metadata", object_meta("", plan.ns->name, "", 0, labels, annotations, owner)},
              {"spec", pod_template["spec"]}};
  pod["metadata"].erase("generation");
  if (!owner.kind.empty()) pod["metadata"]["generateName"] = "";
  // Placeholders, replaced in the text of each pod: managedFields and status are built as text.
  pod["metadata"]["managedFields"] = kManagedFieldsMark;
  pod["status"] = kStatusMark;
  if (plan.ns->role != NamespaceRole::System) mutate(plan, pod);
  admit(pod["spec"], "kube-api-access-" + Rng(std::hash<std::string>{}(plan.ns->name + plan.app)).suffix(5));
  base_env_ = pod["spec"]["containers"][0].value("env", Json::array()).size();
  pod_ = std::move(pod);
}

std::string PodMaker::make(const PodInstance& pod) {
  // Only the values of keys every pod of this maker has change, so no reference below moves.
  Json& meta = pod_["metadata"];
  meta["name"] = pod.name;
  if (meta.contains("generateName")) meta["generateName"] = pod.generate_name;
  meta["uid"] = pod.uid;
  meta["creationTimestamp"] = rfc3339(pod.created);
  for (const auto& [k, v] : pod.labels) meta["labels"][k] = v;
  const bool tracked = !pod.succeeded && meta.contains("ownerReferences") && meta["ownerReferences"][0]["kind"] == "Job";
  if (tracked) meta["finalizers"] = {"batch.kubernetes.io/job-tracking"};
  else meta.erase("finalizers");
  Json& spec = pod_["spec"];
  if (!pod.env.empty()) {
    Json& env = spec["containers"][0]["env"];
    if (!env.is_array()) env = Json::array();
    while (env.size() > base_env_) env.erase(env.size() - 1);
    for (const auto& [k, v] : pod.env) env.push_back({{"name", k}, {"value", v}});
  }
  if (!pod.hostname.empty()) {
    spec["hostname"] = pod.hostname;
    spec["subdomain"] = pod.subdomain;
  }
  if (pod.pin_to_node)
    spec["affinity"] = {{"nodeAffinity",
                         {{"requiredDuringSchedulingIgnoredDuringExecution",
                           {{"nodeSelectorTerms",
                             Json::array({{{"matchFields", Json::array({{{"key", "metadata.name"}, {"operator", "In"},
                                                                         {"values", {pod.node}}}})}}})}}}}}};
  const Json status = pod_status(spec, pod);
  std::string& status_fields = status_fields_[pod.succeeded ? 1 : 0];
  if (spec_fields_.empty()) {
    Json fields = {{"metadata", {{"labels", meta["labels"]}}}, {"spec", spec}};
    if (meta.contains("ownerReferences")) fields["metadata"]["ownerReferences"] = meta["ownerReferences"];
    if (!meta.value("generateName", "").empty()) fields["metadata"]["generateName"] = "";
    fields["spec"].erase("nodeName");
    spec_fields_ = field_set(fields);
  }
  if (status_fields.empty()) status_fields = field_set({{"status", status}});
  spec["nodeName"] = pod.node;

  std::string text = pod_.dump();
  const std::string managed = "[" + entry_text(manager_, "v1", pod.created, spec_fields_, "") + "," +
                              entry_text("kubelet", "v1", pod.created + 5, status_fields, "status") + "]";
  replace_mark(text, kManagedFieldsMark, managed);
  replace_mark(text, kStatusMark, status.dump());
  return text;
}

Json PodMaker::make_object(const PodInstance& pod) {
  Json out = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  const Json object = Json::parse(make(pod));
  for (const auto& [k, v] : object.items()) out[k] = v;
  return out;
}

}  // namespace gpu_admission::bench::audit
