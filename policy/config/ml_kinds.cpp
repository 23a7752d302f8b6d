// The built-in table of kinds judged by their pod template paths: the core PodTemplate, and the
// ML workloads of the Kubeflow training operator and MPI operator, Kubeflow Trainer v2, JobSet,
// LeaderWorkerSet, KubeRay and Volcano. More kinds come from the policy's spec.workloads
// (policy/config/policy_loader.cpp).
#include <utility>

#include "policy/config/template_paths.h"

namespace gpu_admission::policy {
namespace {

// A template path of the table; `pod_spec`: it names pod specs, not templates.
struct PathRow {
  PathRow(const char* path, bool names_pod_spec = false) : text(path), pod_spec(names_pod_spec) {}
  const char* text;
  bool pod_spec;
};

struct Row {
  const char* group;
  const char* kind;
  std::vector<PathRow> paths;
};

std::vector<Row> rows() {
  return {
      {"", "PodTemplate", {"template"}},
      {"kubeflow.org", "PyTorchJob", {"spec.pytorchReplicaSpecs.*.template"}},
      {"kubeflow.org", "TFJob", {"spec.tfReplicaSpecs.*.template"}},
      {"kubeflow.org", "XGBoostJob", {"spec.xgbReplicaSpecs.*.template"}},
      {"kubeflow.org", "PaddleJob", {"spec.paddleReplicaSpecs.*.template"}},
      {"kubeflow.org", "JAXJob", {"spec.jaxReplicaSpecs.*.template"}},
      {"kubeflow.org", "MPIJob", {"spec.mpiReplicaSpecs.*.template"}},
      {"jobset.x-k8s.io", "JobSet", {"spec.replicatedJobs[*].template.spec.template"}},
      {"leaderworkerset.x-k8s.io", "LeaderWorkerSet",
       {"spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"}},
      {"ray.io", "RayCluster", {"spec.headGroupSpec.template", "spec.workerGroupSpecs[*].template"}},
      {"ray.io", "RayJob",
       {"spec.rayClusterSpec.headGroupSpec.template", "spec.rayClusterSpec.workerGroupSpecs[*].template",
        "spec.submitterPodTemplate"}},
      {"ray.io", "RayService",
       {"spec.rayClusterConfig.headGroupSpec.template", "spec.rayClusterConfig.workerGroupSpecs[*].template"}},
      {"batch.volcano.sh", "Job", {"spec.tasks[*].template"}},
      // Kubeflow Trainer v2: a runtime's JobSet template; a TrainJob's pod overrides in every
      // version's spelling, judged for the fields they set: v2.0 podSpecOverrides (each a pod
      // spec's fields beside targetJobs: containers and initContainers by name with env and
      // volumeMounts, volumes, nodeSelector, tolerations, serviceAccountName, schedulingGates),
      // v2.1 podTemplateOverrides (each {targetJobs, metadata, spec}) and v2.2 runtime patches.
      {"trainer.kubeflow.org", "TrainingRuntime", {"spec.template.spec.replicatedJobs[*].template.spec.template"}},
      {"trainer.kubeflow.org", "TrainJob",
       {{"spec.podSpecOverrides[*]", true},
        "spec.podTemplateOverrides[*]",
        "spec.runtimePatches[*].trainingRuntimeSpec.template.spec.replicatedJobs[*].template.spec.template"}},
  };
}

std::vector<WorkloadKindDef> build() {
  std::vector<WorkloadKindDef> out;
  for (const Row& row : rows()) {
    WorkloadKindDef def{row.group, row.kind, {}};
    for (const PathRow& p : row.paths) {
      TemplatePath path;
      path.pod_spec = p.pod_spec;
      // The table is ours: a path that does not parse is a bug caught by the tests.
      if (!parse_template_path(p.text, path)) def.templates.push_back(std::move(path));
    }
    out.push_back(std::move(def));
  }
  return out;
}

}  // namespace

const std::vector<WorkloadKindDef>& builtin_ml_kinds() {
  static const std::vector<WorkloadKindDef> table = build();
  return table;
}

const WorkloadKindDef* find_builtin_ml_kind(std::string_view group, std::string_view kind) {
  for (const auto& def : builtin_ml_kinds())
    if (def.group == group && def.kind == kind) return &def;
  return nullptr;
}

}  // namespace gpu_admission::policy
