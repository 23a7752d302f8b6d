// The audit benchmark cluster's storage, nodes, pods and independent count (audit_builder.h).
#include "bench/audit_builder.h"

#include <algorithm>
#include <cmath>

namespace gpu_admission::bench::audit {
namespace {

constexpr const char* kFinishedPods = "finished pods (Succeeded or Failed)";
// As `gpu-admission audit` says it of the objects spec.exemptions.namespaces leaves out.
constexpr const char* kExempt = "objects in exempt namespaces (spec.exemptions.namespaces)";

std::string ip_of(size_t base, size_t i) {
  return "10." + std::to_string(base + i / 65024) + "." + std::to_string((i / 254) % 256) + "." + std::to_string(i % 254 + 1);
}

}  // namespace

ClusterBuilder::ClusterBuilder(long pods, uint64_t seed) : rng_(seed), budget_(pods) {
  // The resources the stand-in serves objects of (in this order, which the audit does not see).
  add_resource("", "v1", "Namespace", "namespaces", false);
  add_resource("", "v1", "Pod", "pods", true);
  add_resource("", "v1", "ReplicationController", "replicationcontrollers", true);
  add_resource("", "v1", "PodTemplate", "podtemplates", true);
  add_resource("apps", "v1", "Deployment", "deployments", true);
  add_resource("apps", "v1", "ReplicaSet", "replicasets", true);
  add_resource("apps", "v1", "StatefulSet", "statefulsets", true);
  add_resource("apps", "v1", "DaemonSet", "daemonsets", true);
  add_resource("batch", "v1", "Job", "jobs", true);
  add_resource("batch", "v1", "CronJob", "cronjobs", true);
  add_resource("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", true);
  add_resource("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", true);
  for (const char* kind : {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"}) {
    std::string plural = kind;
    std::transform(plural.begin(), plural.end(), plural.begin(), [](unsigned char c) { return std::tolower(c); });
    add_resource("kubeflow.org", "v1", kind, (plural + "s").c_str(), true);
  }
  // A 5,000-node cluster at 150,000 pods: 30 pods per node (upstream's scale tests), a tenth
  // of the nodes without GPUs.
  node_count_ = static_cast<size_t>(std::max(8L, pods / 30));
  const size_t cpu = std::max<size_t>(1, node_count_ / 10), gpu = node_count_ - cpu;
  size_t index = 0;
  for (const Pool& pool : pools()) {
    std::vector<Node> nodes;
    const size_t n = std::max<size_t>(1, static_cast<size_t>(std::llround(static_cast<double>(gpu) * pool.node_share)));
    for (size_t i = 0; i < n; ++i, ++index) {
      char suffix[24];
      std::snprintf(suffix, sizeof suffix, "%05zu", i);
      nodes.push_back({pool.name + "-node-" + suffix, ip_of(0, index)});
    }
    pool_nodes_.push_back(std::move(nodes));
  }
  for (size_t i = 0; i < cpu; ++i, ++index) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, "%05zu", i);
    cpu_nodes_.push_back({std::string("cpu-node-") + suffix, ip_of(0, index)});
  }
  node_count_ = index;
  for (const Namespace& ns : namespaces()) {
    Json object = namespace_object(ns, rng_.uid(), kNow - 200 * 86400);
    store("namespaces", object);
  }
}

void ClusterBuilder::add_resource(const char* group, const char* version, const char* kind, const char* plural,
                                  bool namespaced) {
  resource_index_[plural] = resources_.size();
  resources_.push_back({group, version, kind, plural, namespaced, {}, 0});
}

std::string ClusterBuilder::store(const std::string& plural, Json& object, const std::string& managed_fields) {
  Json& meta = object["metadata"];
  constexpr const char* kMark = "\x01managedFields";  // replaced by `managed_fields` in the text
  if (!managed_fields.empty()) meta["managedFields"] = kMark;
  std::string text = object.dump();
  if (!managed_fields.empty()) {
    const std::string mark = Json(kMark).dump();
    text.replace(text.find(mark), mark.size(), managed_fields);
  }
  resources_[resource_index_.at(plural)].items.push_back({meta.value("namespace", ""), meta["name"].get<std::string>(), text});
  return text;
}

const ClusterBuilder::Node& ClusterBuilder::node_for(const TemplatePlan& plan) {
  if (plan.pool >= 0) return rng_.pick(pool_nodes_[static_cast<size_t>(plan.pool)]);
  return rng_.pick(cpu_nodes_);
}

std::string ClusterBuilder::pod_ip() { return ip_of(64, pod_ips_++); }

int64_t ClusterBuilder::created_before_now() { return kNow - rng_.between(2 * 3600, 45 * 86400); }

std::string ClusterBuilder::unique_name(const std::string& ns, const std::string& base) {
  return base + "-" + std::to_string(++names_[ns + "/" + base]);
}

void ClusterBuilder::count_judged(const TemplatePlan& plan, const std::string& kind, long n) {
  if (plan.ns->role == NamespaceRole::System) skipped_[kExempt] += n;  // bench/audit-policy.yaml exempts them
  else judged_[kind] += n;
}

int ClusterBuilder::make_pods(const TemplatePlan& plan, PodMaker& maker, int count, const std::string& generate_name,
                              bool succeeded, int64_t owner_created, Json* first,
                              const std::function<void(PodInstance&, int)>& shape) {
  const int n = static_cast<int>(std::min<long>(count, budget_));
  Resource& pods = resources_[resource_index_.at("pods")];
  for (int i = 0; i < n; ++i) {
    PodInstance pod;
    pod.generate_name = generate_name;
    if (!generate_name.empty()) {
      do pod.name = generate_name + rng_.suffix(5);
      while (!generated_names_.insert(plan.ns->name + "/" + pod.name).second);
    }
    pod.uid = rng_.uid();
    pod.seed = rng_.next();
    const Node& node = node_for(plan);
    pod.node = node.name;
    pod.node_ip = node.ip;
    pod.pod_ip = pod_ip();
    pod.created = std::min<int64_t>(owner_created + rng_.between(5, 600), kNow - 60);
    pod.succeeded = succeeded;
    if (shape) shape(pod, i);
    if (i == 0 && first) *first = maker.make_object(pod);
    pods.items.push_back({plan.ns->name, pod.name, maker.make(pod)});
  }
  budget_ -= n;
  if (succeeded) skipped_[kFinishedPods] += n;
  else count_judged(plan, "Pod", n);
  return n;
}

void ClusterBuilder::expect(const TemplatePlan& plan, const std::string& api_version, const std::string& kind,
                            const std::string& name, Judged judged) {
  if (plan.violation == Violation::None || (!judged.template_judged && judged.pods == 0)) return;
  const std::string tenant = plan.tenant ? plan.tenant->name : "none";
  const std::string rule(rule_of(plan.violation));
  auto& total = totals_[{tenant, rule}];
  total.first += 1;
  total.second += judged.pods;
  ++namespace_violations_[plan.ns->name];
  violating_pods_ += judged.pods;
  objects_.push_back({{"namespace", plan.ns->name}, {"apiVersion", api_version}, {"kind", kind}, {"name", name},
                      {"tenant", tenant}, {"rule", rule}, {"pods", judged.pods}, {"violatingPods", judged.pods}});
}

std::string ClusterBuilder::sample_key(const TemplatePlan& plan, const std::string& kind) {
  return kind + "/" + std::to_string(static_cast<int>(plan.shape)) + "/" + std::string(rule_of(plan.violation)) + "/" +
         (plan.tenant ? std::to_string(static_cast<int>(plan.tenant->kind)) : "none") + "/" +
         std::to_string(plan.pool) + "/" + (plan.pin_in_template ? "pinned" : "");
}

bool ClusterBuilder::wants_sample(const TemplatePlan& plan, const std::string& kind) {
  return !sampled_.count(sample_key(plan, kind));
}

void ClusterBuilder::sample(const TemplatePlan& plan, const std::string& kind, Json top, Json pod) {
  sampled_[sample_key(plan, kind)] = true;
  Json ns = namespace_object(*plan.ns, "00000000-0000-4000-a000-000000000000", kNow);
  Json objects = Json::array({{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", ns["metadata"]}}});
  if (!top.is_null()) objects.push_back(std::move(top));
  Json stored_pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  for (auto& [k, v] : pod.items()) stored_pod[k] = v;
  objects.push_back(std::move(stored_pod));
  const std::string name = std::to_string(samples_.size()) + "-" + plan.ns->name + "-" + kind + "-" + plan.app;
  samples_.push_back({{"name", name}, {"expect", std::string(rule_of(plan.violation))}, {"objects", objects}});
}

GeneratedCluster ClusterBuilder::finish() {
  GeneratedCluster out;
  long pods = 0;
  for (Resource& r : resources_) {
    for (const auto& item : r.items) r.bytes += item.text.size();
    if (r.plural == "pods") pods = static_cast<long>(r.items.size());
  }
  Json totals = Json::array();
  for (const auto& [key, counts] : totals_)
    totals.push_back({{"tenant", std::get<0>(key)}, {"rule", std::get<1>(key)}, {"action", "deny"},
                      {"objects", counts.first}, {"pods", counts.second}});
  Json per_namespace = Json::object();
  for (const auto& [ns, n] : namespace_violations_) per_namespace[ns] = n;
  out.expected = {{"pods", pods},
                  {"nodes", node_count_},
                  {"judged", judged_},
                  {"skipped", skipped_},
                  {"totals", totals},
                  {"namespaces", per_namespace},
                  {"violatingObjects", objects_.size()},
                  {"violatingPods", violating_pods_},
                  {"objects", objects_}};
  out.samples = std::move(samples_);
  out.resources = std::move(resources_);
  return out;
}

}  // namespace gpu_admission::bench::audit
