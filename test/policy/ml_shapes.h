// Real shapes of the kinds judged by template paths, with field names as the projects document
// them (the core PodTemplate, Kubeflow training operator v1, MPI operator v2beta1, Kubeflow
// Trainer v2, JobSet, LeaderWorkerSet, KubeRay, Volcano), shared by the policy, admission and CLI tests. Each shape
// lists the field paths of its templates in the order they are found (Volcano's Job comes last: tests
// take it with back()); `ml_object` builds the
// object with a privileged container in exactly one template (or in none).
#pragma once

#include <string>
#include <vector>

#include "policy/base/json.h"

namespace ml_shapes {

using gpu_admission::Json;

struct MlShape {
  std::string api_version;
  std::string kind;
  std::string spec;  // JSON of spec with "@T0@", "@T1@", ... where the templates go ("@S<i>@": pod specs)
  std::vector<std::string> templates;
  std::string field = "spec";  // the top-level field `spec` is the JSON of
};

inline const std::vector<MlShape>& shapes() {
  static const std::vector<MlShape> all = {
      {"kubeflow.org/v1", "PyTorchJob",
       R"({"elasticPolicy": {"minReplicas": 1}, "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": "@T0@"},
            "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": "@T1@"}}})",
       {"spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"}},
      {"kubeflow.org/v1", "TFJob",
       R"({"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": {
            "Chief": {"replicas": 1, "template": "@T0@"},
            "PS": {"replicas": 2, "template": "@T1@"},
            "Worker": {"replicas": 4, "restartPolicy": "ExitCode", "template": "@T2@"}}})",
       {"spec.tfReplicaSpecs.Chief.template", "spec.tfReplicaSpecs.PS.template", "spec.tfReplicaSpecs.Worker.template"}},
      {"kubeflow.org/v1", "XGBoostJob",
       R"({"xgbReplicaSpecs": {"Master": {"replicas": 1, "template": "@T0@"},
                               "Worker": {"replicas": 2, "template": "@T1@"}}})",
       {"spec.xgbReplicaSpecs.Master.template", "spec.xgbReplicaSpecs.Worker.template"}},
      {"kubeflow.org/v1", "PaddleJob",
       R"({"paddleReplicaSpecs": {"Master": {"replicas": 1, "template": "@T0@"},
                                  "Worker": {"replicas": 2, "template": "@T1@"}}})",
       {"spec.paddleReplicaSpecs.Master.template", "spec.paddleReplicaSpecs.Worker.template"}},
      {"kubeflow.org/v1", "JAXJob",
       R"({"jaxReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": "@T0@"}}})",
       {"spec.jaxReplicaSpecs.Worker.template"}},
      {"kubeflow.org/v2beta1", "MPIJob",
       R"({"slotsPerWorker": 1, "runPolicy": {"cleanPodPolicy": "Running"}, "mpiImplementation": "OpenMPI",
           "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": "@T0@"},
                               "Worker": {"replicas": 2, "template": "@T1@"}}})",
       {"spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template"}},
      {"jobset.x-k8s.io/v1alpha2", "JobSet",
       R"({"failurePolicy": {"maxRestarts": 3}, "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1, "template": "@T0@"}}},
            {"name": "workers", "replicas": 2, "template": {"spec": {"backoffLimit": 0, "template": "@T1@"}}}]})",
       {"spec.replicatedJobs[0].template.spec.template", "spec.replicatedJobs[1].template.spec.template"}},
      {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
       R"({"replicas": 2, "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": {
            "size": 4, "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": "@T0@", "workerTemplate": "@T1@"}})",
       {"spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"}},
      {"ray.io/v1", "RayCluster",
       R"({"rayVersion": "2.9.0", "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}, "template": "@T0@"},
           "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 4,
                                 "rayStartParams": {}, "template": "@T1@"},
                                {"groupName": "big", "replicas": 1, "rayStartParams": {}, "template": "@T2@"}]})",
       {"spec.headGroupSpec.template", "spec.workerGroupSpecs[0].template", "spec.workerGroupSpecs[1].template"}},
      {"ray.io/v1", "RayJob",
       R"({"entrypoint": "python train.py", "shutdownAfterJobFinishes": true, "rayClusterSpec": {
            "rayVersion": "2.9.0", "headGroupSpec": {"rayStartParams": {}, "template": "@T0@"},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "rayStartParams": {}, "template": "@T1@"}]},
           "submissionMode": "K8sJobMode", "submitterPodTemplate": "@T2@"})",
       {"spec.rayClusterSpec.headGroupSpec.template", "spec.rayClusterSpec.workerGroupSpecs[0].template",
        "spec.submitterPodTemplate"}},
      {"ray.io/v1", "RayService",
       R"({"serveConfigV2": "applications: []", "rayClusterConfig": {
            "rayVersion": "2.9.0", "headGroupSpec": {"rayStartParams": {}, "template": "@T0@"},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "rayStartParams": {}, "template": "@T1@"}]}})",
       {"spec.rayClusterConfig.headGroupSpec.template", "spec.rayClusterConfig.workerGroupSpecs[0].template"}},
      {"v1", "PodTemplate", R"("@T0@")", {"template"}, "template"},
      {"trainer.kubeflow.org/v1alpha1", "TrainingRuntime",
       R"({"mlPolicy": {"numNodes": 2, "torch": {"numProcPerNode": "auto"}}, "template": {"spec": {
            "replicatedJobs": [{"name": "dataset-initializer", "template": {"spec": {"template": "@T0@"}}},
                               {"name": "node", "template": {"spec": {"template": "@T1@"}}}]}}})",
       {"spec.template.spec.replicatedJobs[0].template.spec.template",
        "spec.template.spec.replicatedJobs[1].template.spec.template"}},
      // Every Trainer version's overrides in one object: v2.0 podSpecOverrides (a pod spec's
      // fields: "@S0@"), v2.1 podTemplateOverrides, v2.2 runtimePatches.
      {"trainer.kubeflow.org/v1alpha1", "TrainJob",
       R"({"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2},
           "podSpecOverrides": ["@S0@"],
           "podTemplateOverrides": ["@T1@"],
           "runtimePatches": [{"manager": "trainer.kubeflow.org/kubeflow-sdk", "trainingRuntimeSpec": {"template": {
             "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": "@T2@"}}}]}}}}]})",
       {"spec.podSpecOverrides[0]", "spec.podTemplateOverrides[0]",
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template"}},
      {"batch.volcano.sh/v1alpha1", "Job",
       R"({"schedulerName": "volcano", "minAvailable": 3, "plugins": {"ssh": [], "svc": []}, "tasks": [
            {"name": "ps", "replicas": 1, "template": "@T0@"},
            {"name": "worker", "replicas": 2, "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
             "template": "@T1@"}]})",
       {"spec.tasks[0].template", "spec.tasks[1].template"}},
  };
  return all;
}

// A CPU-only pod spec; `privileged`: its container is privileged.
inline std::string pod_spec(bool privileged) {
  return std::string(R"({"restartPolicy": "OnFailure",
      "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1"])") +
         (privileged ? R"(, "securityContext": {"privileged": true})" : "") + "}]}";
}

// A CPU-only pod template; `privileged`: its container is privileged.
inline std::string pod_template(bool privileged) {
  return R"({"metadata": {"labels": {"app": "train"}}, "spec": )" + pod_spec(privileged) + "}";
}

// Whether template `i` of `shape` is a pod spec ("@S<i>@"), not a template ("@T<i>@").
inline bool is_pod_spec(const MlShape& shape, size_t i) {
  return shape.spec.find("\"@S" + std::to_string(i) + "@\"") != std::string::npos;
}

constexpr size_t kNone = static_cast<size_t>(-1);

// The object of `shape` in `ns` with a privileged container in template `bad` only (kNone: none).
inline Json ml_object(const MlShape& shape, size_t bad, const std::string& ns, const std::string& name = "train") {
  std::string spec = shape.spec;
  for (size_t i = 0; i < shape.templates.size(); ++i) {
    const bool pod_spec_only = is_pod_spec(shape, i);
    const std::string mark = std::string(pod_spec_only ? "\"@S" : "\"@T") + std::to_string(i) + "@\"";
    spec.replace(spec.find(mark), mark.size(), pod_spec_only ? pod_spec(i == bad) : pod_template(i == bad));
  }
  Json object = {{"apiVersion", shape.api_version},
                 {"kind", shape.kind},
                 {"metadata", {{"name", name}, {"namespace", ns}}}};
  object[shape.field] = Json::parse(spec);
  return object;
}

// Where the privileged finding of template `i` points.
inline std::string privileged_field(const MlShape& shape, size_t i) {
  return shape.templates[i] + (is_pod_spec(shape, i) ? "" : ".spec") + ".containers[0].securityContext.privileged";
}

}  // namespace ml_shapes
