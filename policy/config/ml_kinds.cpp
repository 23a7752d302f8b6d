// The built-in table of kinds judged by their pod template paths: the core PodTemplate, and the
// ML workloads of the Kubeflow training operator and MPI operator, Kubeflow Trainer v2, JobSet,
// LeaderWorkerSet, KubeRay and Volcano. More kinds come from the policy's spec.workloads
// (policy/config/policy_loader.cpp).
#include <utility>

#include "policy/config/template_paths.h"

namespace gpu_admission::policy {
namespace {

struct Row {
  const char* group;
  const char* kind;
  std::vector<const char*> paths;
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
      // Kubeflow Trainer v2: a runtime's JobSet template; a TrainJob's pod overrides (v2.1
      // podTemplateOverrides, each {targetJobs, metadata, spec}) and runtime patches (v2.2), judged
      // for the fields they set.
      {"trainer.kubeflow.org", "TrainingRuntime", {"spec.template.spec.replicatedJobs[*].template.spec.template"}},
      {"trainer.kubeflow.org", "TrainJob",
       {"spec.podTemplateOverrides[*]",
        "spec.runtimePatches[*].trainingRuntimeSpec.template.spec.replicatedJobs[*].template.spec.template"}},
  };
}

std::vector<WorkloadKindDef> build() {
  std::vector<WorkloadKindDef> out;
  for (const Row& row : rows()) {
    WorkloadKindDef def{row.group, row.kind, {}};
    for (const char* text : row.paths) {
      TemplatePath path;
      // The table is ours: a path that does not parse is a bug caught by the tests.
      if (!parse_template_path(text, path)) def.templates.push_back(std::move(path));
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
