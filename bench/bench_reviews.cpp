#include "bench/bench_reviews.h"

#include "policy/json.h"

namespace gpu_admission::bench {
namespace {

Json container(const std::string& name, int envs, bool gpu) {
  Json env = Json::array();
  for (int i = 0; i < envs; ++i)
    env.push_back({{"name", "ENV_VAR_NUMBER_" + std::to_string(i)}, {"value", "some-configuration-value-" + std::to_string(i)}});
  Json c = {{"name", name},
            {"image", "nvcr.io/nvidia/pytorch:24.08-py3"},
            {"command", {"torchrun", "--nproc_per_node=1", "train.py", "--epochs=10", "--batch-size=256"}},
            {"env", env},
            {"ports", {{{"containerPort", 29500}, {"name", "rendezvous"}}}},
            {"resources",
             {{"requests", {{"cpu", "8"}, {"memory", "64Gi"}}},
              {"limits", {{"cpu", "16"}, {"memory", "64Gi"}}}}},
            {"volumeMounts", {{{"name", "data"}, {"mountPath", "/data"}}, {{"name", "dshm"}, {"mountPath", "/dev/shm"}}}},
            {"securityContext", {{"allowPrivilegeEscalation", false}, {"runAsNonRoot", true}}}};
  if (gpu) {
    c["resources"]["requests"]["nvidia.com/gpu"] = "1";
    c["resources"]["limits"]["nvidia.com/gpu"] = "1";
  }
  return c;
}

Json pod_spec(int containers, int envs, int volumes) {
  Json spec = {{"restartPolicy", "Never"},
               {"serviceAccountName", "trainer"},
               {"nodeSelector", {{"gpu-admission.io/pool", "a100-mig"}}},
               {"tolerations",
                {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                 {{"key", "gpu-admission.io/pool"}, {"operator", "Equal"}, {"value", "a100-mig"}, {"effect", "NoSchedule"}}}},
               {"containers", Json::array()},
               {"volumes", Json::array()}};
  for (int i = 0; i < containers; ++i) spec["containers"].push_back(container(i == 0 ? "trainer" : "worker-" + std::to_string(i), envs, i == 0));
  spec["volumes"].push_back({{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "imagenet"}}}});
  spec["volumes"].push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "16Gi"}}}});
  for (int i = 2; i < volumes; ++i) spec["volumes"].push_back({{"name", "config-" + std::to_string(i)}, {"configMap", {{"name", "cfg-" + std::to_string(i)}}}});
  return spec;
}

Json metadata(const std::string& name) {
  return {{"name", name},
          {"namespace", "research"},
          {"uid", "2b8d4c6e-1f0a-4d3b-9c2e-7a6f5e4d3c2b"},
          {"creationTimestamp", nullptr},
          {"labels", {{"app.kubernetes.io/name", "resnet"}, {"app.kubernetes.io/part-of", "imagenet-training"}, {"team", "vision"}}},
          {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", std::string(900, 'x')}}}};
}

std::string review(const Json& object, const std::string& kind, const std::string& group, const std::string& resource) {
  Json r = {{"apiVersion", "admission.k8s.io/v1"},
            {"kind", "AdmissionReview"},
            {"request",
             {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
              {"kind", {{"group", group}, {"version", "v1"}, {"kind", kind}}},
              {"resource", {{"group", group}, {"version", "v1"}, {"resource", resource}}},
              {"requestKind", {{"group", group}, {"version", "v1"}, {"kind", kind}}},
              {"requestResource", {{"group", group}, {"version", "v1"}, {"resource", resource}}},
              {"name", object["metadata"]["name"]},
              {"namespace", "research"},
              {"operation", "CREATE"},
              {"userInfo", {{"username", "system:serviceaccount:research:pipeline"}, {"uid", "1c2d"}, {"groups", {"system:serviceaccounts", "system:authenticated"}}}},
              {"object", object},
              {"oldObject", nullptr},
              {"dryRun", false},
              {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
  return r.dump();
}

}  // namespace

std::string training_pod_review() {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata("resnet-train-0")}, {"spec", pod_spec(1, 12, 2)}};
  return review(pod, "Pod", "", "pods");
}

std::string large_pod_review() {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata("big-pipeline-0")}, {"spec", pod_spec(14, 28, 30)}};
  return review(pod, "Pod", "", "pods");
}

std::string deployment_review() {
  Json deploy = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", metadata("resnet-serving")},
                 {"spec",
                  {{"replicas", 4},
                   {"selector", {{"matchLabels", {{"app.kubernetes.io/name", "resnet"}}}}},
                   {"template", {{"metadata", {{"labels", {{"app.kubernetes.io/name", "resnet"}}}}}, {"spec", pod_spec(1, 12, 2)}}}}}};
  return review(deploy, "Deployment", "apps", "deployments");
}

std::string large_policy_yaml() {
  std::string y = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: large}
spec:
  exemptions: {namespaces: [kube-system, gpu-operator, "infra-*"]}
  defaults:
    maxGpusPerPod: 8
    gpuTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  pools:
)";
  for (int p = 0; p < 20; ++p) {
    std::string name = p == 0 ? "a100-mig" : "pool-" + std::to_string(p);
    y += "    - name: " + name + "\n      nodeSelector: {gpu-admission.io/pool: " + name + "}\n";
    y += p % 2 ? "      trust: cooperative\n      gpuModel: H100-SXM5-80GB\n      sharing: mps\n"
               : "      trust: adversarial\n      gpuModel: A100-SXM4-80GB\n      mig: {strategy: mixed, defaultProfile: 1g.10gb}\n";
    y += "      taints: [{key: gpu-admission.io/pool, value: " + name + ", effect: NoSchedule}]\n";
  }
  y += "  tenants:\n";
  for (int t = 0; t < 200; ++t) {
    std::string n = std::to_string(t);
    // 10 patterns per tenant: exact names and globs.
    y += "    - name: tenant-" + n + "\n      namespaces: [";
    for (int k = 0; k < 10; ++k) {
      if (k) y += ", ";
      y += k % 2 ? "\"t" + n + "-" + std::to_string(k) + "-*\"" : "team-" + n + "-" + std::to_string(k);
    }
    if (t == 199) y += ", research";
    y += "]\n      labels: {cost-center: cc-" + n + "}\n      maxGpusPerPod: 4\n";
    y += "      pools: [a100-mig, pool-" + std::to_string(1 + t % 19) + "]\n      defaultPool: a100-mig\n";
  }
  return y;
}

}  // namespace gpu_admission::bench
