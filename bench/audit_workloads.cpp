// The workloads of the audit benchmark's cluster (audit_builder.h): each top-level kind with the
// objects its controller makes (ReplicaSets, Jobs, pods), as the API server stores them.
#include <algorithm>

#include "bench/audit_builder.h"

namespace gpu_admission::bench::audit {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A stored object's text as a whole object (with apiVersion and kind), for a sample.
Json with_kind(const char* api_version, const char* kind, const std::string& text) {
  Json out = {{"apiVersion", api_version}, {"kind", kind}};
  const Json object = Json::parse(text);
  for (const auto& [k, v] : object.items()) out[k] = v;
  return out;
}

// kubectl apply's record of what was applied (the object as written, without status).
std::string last_applied(const char* api_version, const char* kind, const std::string& name, const std::string& ns,
                         const Json& labels, const Json& spec) {
  return Json{{"apiVersion", api_version}, {"kind", kind},
              {"metadata", {{"labels", labels}, {"name", name}, {"namespace", ns}}}, {"spec", spec}}
             .dump();
}

// managedFields of a top-level object: who applied the spec, and the controller's status.
std::string top_managed_fields(const Json& object, const char* api_version, int64_t created) {
  Json applied = {{"metadata", {{"annotations", object["metadata"].value("annotations", Json::object())},
                                {"labels", object["metadata"].value("labels", Json::object())}}},
                  {"spec", object["spec"]}};
  std::string fields = "[" + managed_entry("kubectl-client-side-apply", api_version, created, applied);
  if (object.contains("status"))
    fields += "," + managed_entry("kube-controller-manager", api_version, created + 30, {{"status", object["status"]}}, "status");
  return fields + "]";
}

Json condition(const char* type, const std::string& reason, const std::string& message, int64_t at) {
  return {{"type", type}, {"status", "True"}, {"lastUpdateTime", rfc3339(at)}, {"lastTransitionTime", rfc3339(at)},
          {"reason", reason}, {"message", message}};
}

Json job_labels(const std::string& uid, const std::string& name) {
  return {{"batch.kubernetes.io/controller-uid", uid}, {"batch.kubernetes.io/job-name", name},
          {"controller-uid", uid}, {"job-name", name}};
}

Labels pairs_of(const Json& labels) {
  Labels out;
  for (const auto& [k, v] : labels.items()) out.emplace_back(k, v.get<std::string>());
  return out;
}

}  // namespace

void ClusterBuilder::deployment(const TemplatePlan& plan, int replicas) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid();
  const int64_t created = created_before_now();
  Json labels = {{"app", name}, {"app.kubernetes.io/name", name}};
  const Json tmpl = pod_template(plan);
  Json spec = {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", name}}}}}, {"template", tmpl},
               {"strategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", "25%"}, {"maxSurge", "25%"}}}}},
               {"revisionHistoryLimit", 10}, {"progressDeadlineSeconds", 600}};
  Json annotations = {{"deployment.kubernetes.io/revision", "3"},
                      {"kubectl.kubernetes.io/last-applied-configuration",
                       last_applied("apps/v1", "Deployment", name, ns, labels, {{"replicas", replicas}, {"template", tmpl}})}};
  Json object = {{"metadata", object_meta(name, ns, uid, created, labels, annotations)}, {"spec", spec}};
  const int64_t rolled = created + 600;
  object["status"] = {{"observedGeneration", 3}, {"replicas", replicas}, {"updatedReplicas", replicas},
                      {"readyReplicas", replicas}, {"availableReplicas", replicas},
                      {"conditions", Json::array({condition("Available", "MinimumReplicasAvailable", "Deployment has minimum availability.", rolled),
                                                  condition("Progressing", "NewReplicaSetAvailable", "ReplicaSet has successfully progressed.", rolled)})}};
  object["metadata"]["generation"] = 3;
  const std::string top = store("deployments", object, top_managed_fields(object, "apps/v1", created));

  // Two old ReplicaSets scaled to 0 (their template before the last two rollouts), then the current one.
  const OwnerRef owner{"apps/v1", "Deployment", name, uid};
  Json first_pod;
  int made = 0;
  for (int revision = 1; revision <= 3; ++revision) {
    const bool current = revision == 3;
    TemplatePlan rs_plan = plan;
    if (!current) rs_plan.violation = Violation::None;
    const std::string hash = rng_.suffix(10), rs_name = name + "-" + hash, rs_uid = rng_.uid();
    const Json rs_template = pod_template(rs_plan, {{"pod-template-hash", hash}});
    const int rs_replicas = current ? replicas : 0;
    Json rs_labels = rs_template["metadata"]["labels"];
    Json rs = {{"metadata", object_meta(rs_name, ns, rs_uid, created + revision * 200, rs_labels,
                                        {{"deployment.kubernetes.io/desired-replicas", std::to_string(replicas)},
                                         {"deployment.kubernetes.io/max-replicas", std::to_string(replicas + (replicas + 3) / 4)},
                                         {"deployment.kubernetes.io/revision", std::to_string(revision)}},
                                        owner)},
               {"spec", {{"replicas", rs_replicas},
                         {"selector", {{"matchLabels", {{"app", name}, {"pod-template-hash", hash}}}}},
                         {"template", rs_template}}},
               {"status", {{"replicas", rs_replicas}, {"fullyLabeledReplicas", rs_replicas}, {"readyReplicas", rs_replicas},
                           {"availableReplicas", rs_replicas}, {"observedGeneration", 2}}}};
    const std::string rs_fields =
        "[" +
        managed_entry("kube-controller-manager", "apps/v1", created + revision * 200,
                      {{"metadata", {{"annotations", rs["metadata"]["annotations"]}, {"labels", rs_labels},
                                     {"ownerReferences", rs["metadata"]["ownerReferences"]}}},
                       {"spec", rs["spec"]}}) +
        "," + managed_entry("kube-controller-manager", "apps/v1", created + revision * 200 + 30, {{"status", rs["status"]}}, "status") +
        "]";
    store("replicasets", rs, rs_fields);
    ++skipped_["workloads with a controller (judged through their pods)"];
    if (!current) continue;
    PodMaker maker(rs_plan, rs_template, {"apps/v1", "ReplicaSet", rs_name, rs_uid}, "kube-controller-manager");
    made = make_pods(plan, maker, replicas, rs_name + "-", false, rolled, wants_sample(plan, "Deployment") ? &first_pod : nullptr);
  }
  count_judged(plan, "Deployment", 1);
  expect(plan, "apps/v1", "Deployment", name, {made, true});
  if (!first_pod.is_null()) sample(plan, "Deployment", with_kind("apps/v1", "Deployment", top), first_pod);
}

void ClusterBuilder::stateful_set(const TemplatePlan& plan, int replicas) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid(), revision = name + "-" + rng_.suffix(10);
  const int64_t created = created_before_now();
  Json labels = {{"app", name}, {"app.kubernetes.io/name", name}};
  const Json tmpl = pod_template(plan);
  Json object = {
      {"metadata", object_meta(name, ns, uid, created, labels)},
      {"spec", {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", name}}}}}, {"template", tmpl},
                {"serviceName", name}, {"podManagementPolicy", "OrderedReady"},
                {"updateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 0}}}}},
                {"revisionHistoryLimit", 10},
                {"persistentVolumeClaimRetentionPolicy", {{"whenDeleted", "Retain"}, {"whenScaled", "Retain"}}}}},
      {"status", {{"observedGeneration", 1}, {"replicas", replicas}, {"readyReplicas", replicas},
                  {"currentReplicas", replicas}, {"updatedReplicas", replicas}, {"currentRevision", revision},
                  {"updateRevision", revision}, {"collisionCount", 0}, {"availableReplicas", replicas}}}};
  const std::string top = store("statefulsets", object, top_managed_fields(object, "apps/v1", created));
  PodMaker maker(plan, tmpl, {"apps/v1", "StatefulSet", name, uid}, "kube-controller-manager",
                       {{"controller-revision-hash", revision}});
  Json first_pod;
  const int made = make_pods(plan, maker, replicas, "", false, created, wants_sample(plan, "StatefulSet") ? &first_pod : nullptr,
                             [&](PodInstance& pod, int i) {
                               pod.name = name + "-" + std::to_string(i);
                               pod.hostname = pod.name;
                               pod.subdomain = name;
                               pod.labels = {{"statefulset.kubernetes.io/pod-name", pod.name},
                                             {"apps.kubernetes.io/pod-index", std::to_string(i)}};
                             });
  count_judged(plan, "StatefulSet", 1);
  expect(plan, "apps/v1", "StatefulSet", name, {made, true});
  if (!first_pod.is_null()) sample(plan, "StatefulSet", with_kind("apps/v1", "StatefulSet", top), first_pod);
}

void ClusterBuilder::daemon_set(const TemplatePlan& plan, bool gpu_nodes_only) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid(), hash = rng_.suffix(10);
  const int64_t created = created_before_now();
  std::vector<const Node*> nodes;
  for (const auto& pool : pool_nodes_)
    for (const Node& n : pool) nodes.push_back(&n);
  if (!gpu_nodes_only)
    for (const Node& n : cpu_nodes_) nodes.push_back(&n);
  const int count = static_cast<int>(nodes.size());
  Json labels = {{"app", name}, {"app.kubernetes.io/name", name}};
  const Json tmpl = pod_template(plan);
  Json object = {
      {"metadata", object_meta(name, ns, uid, created, labels)},
      {"spec", {{"selector", {{"matchLabels", {{"app", name}}}}}, {"template", tmpl},
                {"updateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 1}, {"maxSurge", 0}}}}},
                {"revisionHistoryLimit", 10}}},
      {"status", {{"currentNumberScheduled", count}, {"numberMisscheduled", 0}, {"desiredNumberScheduled", count},
                  {"numberReady", count}, {"observedGeneration", 1}, {"updatedNumberScheduled", count},
                  {"numberAvailable", count}}}};
  const std::string top = store("daemonsets", object, top_managed_fields(object, "apps/v1", created));
  PodMaker maker(plan, tmpl, {"apps/v1", "DaemonSet", name, uid}, "kube-controller-manager",
                       {{"controller-revision-hash", hash}, {"pod-template-generation", "1"}});
  Json first_pod;
  const int made = make_pods(plan, maker, count, name + "-", false, created, wants_sample(plan, "DaemonSet") ? &first_pod : nullptr,
                             [&](PodInstance& pod, int i) {
                               pod.node = nodes[static_cast<size_t>(i)]->name;
                               pod.node_ip = nodes[static_cast<size_t>(i)]->ip;
                               pod.pin_to_node = true;
                             });
  count_judged(plan, "DaemonSet", 1);
  expect(plan, "apps/v1", "DaemonSet", name, {made, true});
  if (!first_pod.is_null()) sample(plan, "DaemonSet", with_kind("apps/v1", "DaemonSet", top), first_pod);
}

void ClusterBuilder::pytorch_job(const TemplatePlan& plan, int workers, bool finished) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid();
  const int64_t created = created_before_now();
  const Json tmpl = pod_template(plan);
  auto replica = [&](int replicas) { return Json{{"replicas", replicas}, {"restartPolicy", "OnFailure"}, {"template", tmpl}}; };
  Json labels = {{"app.kubernetes.io/name", name}};
  Json status_conditions = Json::array({condition("Created", "PyTorchJobCreated", "PyTorchJob " + name + " is created.", created)});
  status_conditions.push_back(finished ? condition("Succeeded", "PyTorchJobSucceeded", "PyTorchJob " + name + " is successfully completed.", created + 86400)
                                       : condition("Running", "PyTorchJobRunning", "PyTorchJob " + name + " is running.", created + 60));
  Json object = {
      {"metadata", object_meta(name, ns, uid, created, labels)},
      {"spec", {{"pytorchReplicaSpecs", {{"Master", replica(1)}, {"Worker", replica(workers)}}},
                {"runPolicy", {{"cleanPodPolicy", "None"}, {"suspend", false}}}}},
      {"status", {{"conditions", status_conditions},
                  {"replicaStatuses", {{"Master", {{finished ? "succeeded" : "active", 1}}},
                                       {"Worker", {{finished ? "succeeded" : "active", workers}}}}},
                  {"startTime", rfc3339(created + 5)}}}};
  const std::string top = store("pytorchjobs", object, top_managed_fields(object, "kubeflow.org/v1", created));

  const OwnerRef owner{"kubeflow.org/v1", "PyTorchJob", name, uid};
  const std::string master = name + "-master-0";
  Json worker_template = tmpl;  // the operator makes workers wait for the master's name to resolve
  Json init = {{"name", "init-pytorch"}, {"image", "alpine:3.10"},
               {"command", {"sh", "-c", "err=1;for i in $(seq 100); do if nslookup " + master +
                                            "; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"}},
               {"resources", {{"limits", {{"cpu", "100m"}, {"memory", "20Mi"}}}, {"requests", {{"cpu", "50m"}, {"memory", "10Mi"}}}}},
               {"terminationMessagePath", "/dev/termination-log"}, {"terminationMessagePolicy", "File"},
               {"imagePullPolicy", "IfNotPresent"}};
  worker_template["spec"]["initContainers"] = Json::array({init});
  auto role_labels = [&](const char* type) {
    return Labels{{"training.kubeflow.org/job-name", name}, {"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                  {"training.kubeflow.org/replica-type", type}};
  };
  TemplatePlan pod_plan = plan;
  pod_plan.restart_policy = "OnFailure";
  PodMaker master_maker(pod_plan, tmpl, owner, "training-operator", role_labels("master"));
  PodMaker worker_maker(pod_plan, worker_template, owner, "training-operator", role_labels("worker"));
  const std::string world = std::to_string(workers + 1);
  Json first_pod;
  int made = make_pods(plan, master_maker, 1, "", finished, created, wants_sample(plan, "PyTorchJob") ? &first_pod : nullptr,
                       [&](PodInstance& pod, int) {
                         pod.name = master;
                         pod.labels = {{"training.kubeflow.org/replica-index", "0"}, {"training.kubeflow.org/job-role", "master"}};
                         pod.env = {{"MASTER_PORT", "23456"}, {"MASTER_ADDR", master}, {"WORLD_SIZE", world},
                                    {"RANK", "0"}, {"PYTHONUNBUFFERED", "1"}};
                       });
  made += make_pods(plan, worker_maker, workers, "", finished, created, nullptr, [&](PodInstance& pod, int i) {
    pod.name = name + "-worker-" + std::to_string(i);
    pod.labels = {{"training.kubeflow.org/replica-index", std::to_string(i)}};
    pod.env = {{"MASTER_PORT", "23456"}, {"MASTER_ADDR", master}, {"WORLD_SIZE", world},
               {"RANK", std::to_string(i + 1)}, {"PYTHONUNBUFFERED", "1"}};
  });
  count_judged(plan, "PyTorchJob.kubeflow.org", 1);
  expect(plan, "kubeflow.org/v1", "PyTorchJob", name, {finished ? 0 : made, true});
  if (!first_pod.is_null()) sample(plan, "PyTorchJob", with_kind("kubeflow.org/v1", "PyTorchJob", top), first_pod);
}

void ClusterBuilder::job(const TemplatePlan& plan, int parallelism, bool finished) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid();
  const int64_t created = created_before_now();
  const Json labels = job_labels(uid, name);
  const Json tmpl = pod_template(plan, pairs_of(labels));
  Json object = {{"metadata", object_meta(name, ns, uid, created, labels,
                                          {{"batch.kubernetes.io/job-tracking", ""}})},
                 {"spec", {{"parallelism", parallelism}, {"completions", parallelism}, {"backoffLimit", 2},
                           {"completionMode", "NonIndexed"}, {"suspend", false},
                           {"podReplacementPolicy", "TerminatingOrFailed"},
                           {"selector", {{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}}},
                           {"template", tmpl}}}};
  if (finished)
    object["status"] = {{"conditions", Json::array({condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods", created + 1800),
                                                    condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods", created + 1800)})},
                        {"startTime", rfc3339(created)}, {"completionTime", rfc3339(created + 1800)},
                        {"succeeded", parallelism}, {"terminating", 0}, {"ready", 0}, {"uncountedTerminatedPods", Json::object()}};
  else
    object["status"] = {{"startTime", rfc3339(created)}, {"active", parallelism}, {"ready", parallelism},
                        {"terminating", 0}, {"uncountedTerminatedPods", Json::object()}};
  const std::string top = store("jobs", object, top_managed_fields(object, "batch/v1", created));
  PodMaker maker(plan, tmpl, {"batch/v1", "Job", name, uid}, "kube-controller-manager");
  Json first_pod;
  const int made = make_pods(plan, maker, parallelism, name + "-", finished, created,
                             !finished && wants_sample(plan, "Job") ? &first_pod : nullptr);
  if (finished) {
    ++skipped_["finished Jobs"];
    return;  // neither it nor its pods are judged
  }
  count_judged(plan, "Job", 1);
  expect(plan, "batch/v1", "Job", name, {made, true});
  if (!first_pod.is_null()) sample(plan, "Job", with_kind("batch/v1", "Job", top), first_pod);
}

void ClusterBuilder::cron_job(const TemplatePlan& plan, int history, bool running, int parallelism) {
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app, uid = rng_.uid();
  const int64_t created = created_before_now();
  const Json tmpl = pod_template(plan);
  Json labels = {{"app.kubernetes.io/name", name}};
  const int64_t last_run = (kNow / 86400) * 86400 + 3 * 3600 - (running ? 0 : 86400);
  Json object = {{"metadata", object_meta(name, ns, uid, created, labels)},
                 {"spec", {{"schedule", "0 3 * * *"}, {"concurrencyPolicy", "Forbid"}, {"suspend", false},
                           {"jobTemplate", {{"metadata", {{"creationTimestamp", nullptr}}},
                                            {"spec", {{"backoffLimit", 2}, {"template", tmpl}}}}},
                           {"successfulJobsHistoryLimit", 3}, {"failedJobsHistoryLimit", 1}}},
                 {"status", {{"lastScheduleTime", rfc3339(last_run)}, {"lastSuccessfulTime", rfc3339(last_run - (running ? 86400 : 0) + 1800)}}}};
  Json top_pod;
  int judged_pods = 0;
  const OwnerRef owner{"batch/v1", "CronJob", name, uid};
  Json active = Json::array();
  const int jobs = history + (running ? 1 : 0);
  std::vector<Json> job_objects;
  for (int j = 0; j < jobs; ++j) {
    const bool finished = j < history;
    const int64_t scheduled = last_run - static_cast<int64_t>(jobs - 1 - j) * 86400;
    const std::string job_name = name + "-" + std::to_string(scheduled / 60), job_uid = rng_.uid();
    const Json job_label = job_labels(job_uid, job_name);
    const Json job_template = pod_template(plan, pairs_of(job_label));
    const int pods = finished ? 1 : parallelism;
    Json job = {{"metadata", object_meta(job_name, ns, job_uid, scheduled, job_label, {{"batch.kubernetes.io/job-tracking", ""}}, owner)},
                {"spec", {{"parallelism", pods}, {"completions", pods}, {"backoffLimit", 2}, {"completionMode", "NonIndexed"},
                          {"suspend", false}, {"podReplacementPolicy", "TerminatingOrFailed"},
                          {"selector", {{"matchLabels", {{"batch.kubernetes.io/controller-uid", job_uid}}}}},
                          {"template", job_template}}}};
    job["status"] = finished
        ? Json{{"conditions", Json::array({condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods", scheduled + 1800),
                                          condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods", scheduled + 1800)})},
               {"startTime", rfc3339(scheduled)}, {"completionTime", rfc3339(scheduled + 1800)}, {"succeeded", pods},
               {"terminating", 0}, {"ready", 0}, {"uncountedTerminatedPods", Json::object()}}
        : Json{{"startTime", rfc3339(scheduled)}, {"active", pods}, {"ready", pods}, {"terminating", 0},
               {"uncountedTerminatedPods", Json::object()}};
    const std::string job_fields =
        "[" + managed_entry("kube-controller-manager", "batch/v1", scheduled, {{"spec", job["spec"]}}) + "," +
        managed_entry("kube-controller-manager", "batch/v1", scheduled + 60, {{"status", job["status"]}}, "status") + "]";
    if (!finished) active.push_back({{"kind", "Job"}, {"namespace", ns}, {"name", job_name}, {"uid", job_uid}, {"apiVersion", "batch/v1"}});
    store("jobs", job, job_fields);
    ++skipped_[finished ? "finished Jobs" : "workloads with a controller (judged through their pods)"];
    PodMaker maker(plan, job_template, {"batch/v1", "Job", job_name, job_uid}, "kube-controller-manager");
    const int made = make_pods(plan, maker, pods, job_name + "-", finished, scheduled,
                               !finished && wants_sample(plan, "CronJob") ? &top_pod : nullptr);
    if (!finished) judged_pods += made;
  }
  if (!active.empty()) object["status"]["active"] = active;
  const std::string top = store("cronjobs", object, top_managed_fields(object, "batch/v1", created));
  count_judged(plan, "CronJob", 1);
  expect(plan, "batch/v1", "CronJob", name, {judged_pods, true});
  if (!top_pod.is_null()) sample(plan, "CronJob", with_kind("batch/v1", "CronJob", top), top_pod);
}

void ClusterBuilder::notebook(const TemplatePlan& plan) {
  if (budget_ <= 0) return;
  const std::string& ns = plan.ns->name;
  const std::string name = plan.app;
  Json tmpl = pod_template(plan);
  tmpl["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration",
                                      last_applied("v1", "Pod", name, ns, tmpl["metadata"]["labels"], tmpl["spec"])}};
  PodMaker maker(plan, tmpl, {}, "kubectl-client-side-apply");
  Json pod;
  const int64_t created = created_before_now();
  make_pods(plan, maker, 1, "", false, created, &pod, [&](PodInstance& p, int) { p.name = name; });
  expect(plan, "v1", "Pod", name, {1, false});
  if (wants_sample(plan, "Pod")) sample(plan, "Pod", {}, pod);
}

}  // namespace gpu_admission::bench::audit
