#include "bench/bench_reviews.h"

#include "policy/base/json.h"

#include <cstdio>

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
              {"namespace", object["metadata"]["namespace"]},
              {"operation", "CREATE"},
              {"userInfo", {{"username", "system:serviceaccount:" + object["metadata"]["namespace"].get<std::string>() + ":pipeline"}, {"uid", "1c2d"}, {"groups", {"system:serviceaccounts", "system:authenticated"}}}},
              {"object", object},
              {"oldObject", nullptr},
              {"dryRun", false},
              {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
  return r.dump();
}

Json env_list(const std::string& prefix, int count) {
  Json env = Json::array();
  for (int i = 0; i < count; ++i)
    env.push_back({{"name", prefix + std::to_string(i)}, {"value", "value-" + std::to_string(i)}});
  return env;
}

Json resources(const char* cpu, const char* memory) {
  return {{"requests", {{"cpu", cpu}, {"memory", memory}}}, {"limits", {{"cpu", cpu}, {"memory", memory}}}};
}

Json simple_container(const std::string& name, const std::string& image, const char* cpu, const char* memory, int envs) {
  return {{"name", name},
          {"image", image},
          {"env", env_list("SETTING_", envs)},
          {"resources", resources(cpu, memory)},
          {"securityContext", {{"allowPrivilegeEscalation", false}, {"runAsNonRoot", true}}}};
}

Json claim_object(const std::string& name, const std::string& namespace_name, Json devices, int i) {
  char uid[40];
  std::snprintf(uid, sizeof uid, "7d3c%04x-2f1e-4b6a-9c8d-%012x", static_cast<unsigned>(i) & 0xffffu, static_cast<unsigned>(i));
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata",
           {{"name", name},
            {"namespace", namespace_name},
            {"uid", uid},
            {"creationTimestamp", "2026-11-20T10:00:00Z"},
            {"labels", {{"app.kubernetes.io/name", "job-" + std::to_string(i / 7)}, {"app.kubernetes.io/managed-by", "kubeflow"}}}}},
          {"spec", {{"devices", std::move(devices)}}}};
}

Json gpu_request(const std::string& name, int count, const char* selector = nullptr) {
  Json exactly = {{"deviceClassName", "gpu.nvidia.com"}};
  if (count != 1) exactly["count"] = count;
  if (selector) exactly["selectors"] = {{{"cel", {{"expression", selector}}}}};
  return {{"name", name}, {"exactly", exactly}};
}

constexpr const char* kH100Selector = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'";

}  // namespace

Json dra_pod_claims() {
  return Json::array({claim_object("llm-finetune-gpus-a", kDraNamespace, {{"requests", {gpu_request("gpus", 2)}}}, 1'000'001),
                      claim_object("llm-finetune-gpus-b", kDraNamespace, {{"requests", {gpu_request("eval", 1, kH100Selector)}}}, 1'000'002)});
}

Json cluster_namespace(int i, int count) {
  const bool platform = i < (count + 1) / 2;
  char name[40];
  std::snprintf(name, sizeof name, platform ? "ml-team-%03d" : "research-team-%03d", platform ? i : i - (count + 1) / 2);
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata",
           {{"name", name},
            {"labels", {{"kubernetes.io/metadata.name", name}, {"gpu-admission.io/tenant", platform ? "platform" : "research"}, {"team", "team-" + std::to_string(i % 97)}}}}}};
}

Json cluster_claim(int i, int namespaces) {
  const int ns = i % namespaces;
  const Json namespace_object = cluster_namespace(ns, namespaces);
  const std::string namespace_name = namespace_object["metadata"]["name"];
  const std::string name = "claim-" + std::to_string(i);
  const int k = i / namespaces;  // the claim's place in its namespace
  const int variant = k % 10;
  const int size = (k / 10 + ns) % 4;
  Json requests = Json::array();
  Json devices = Json::object();
  if (namespace_object["metadata"]["labels"]["gpu-admission.io/tenant"] == "platform") {
    static constexpr int kCounts[] = {1, 2, 4, 8};
    if (variant <= 5) {
      requests.push_back(gpu_request("gpus", kCounts[size], variant == 5 ? kH100Selector : nullptr));
    } else if (variant <= 7) {
      requests.push_back(gpu_request("train", kCounts[size % 3]));
      requests.push_back(gpu_request("eval", 1));
    } else if (variant == 8) {
      requests.push_back({{"name", "gpus"},
                          {"firstAvailable",
                           {{{"name", "h100"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 2}, {"selectors", {{{"cel", {{"expression", kH100Selector}}}}}}},
                            {{"name", "any"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 4}}}}});
    } else {
      requests.push_back(gpu_request("gpus", 1));
      devices["config"] = {{{"requests", {"gpus"}},
                            {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "GpuConfig"}, {"sharing", {{"strategy", "TimeSlicing"}}}}}}}}};
    }
  } else {
    static constexpr const char* kProfiles[] = {"1g.10gb", "2g.20gb", "3g.40gb"};
    Json exactly = {{"deviceClassName", "mig.nvidia.com"},
                    {"selectors", {{{"cel", {{"expression", std::string("device.attributes['gpu.nvidia.com'].profile == '") + kProfiles[size % 3] + "'"}}}}}}};
    if (variant % 2) exactly["count"] = 2;
    requests.push_back({{"name", "mig"}, {"exactly", exactly}});
  }
  devices["requests"] = std::move(requests);
  // "requests" first, as the API server writes it.
  Json ordered = {{"requests", devices["requests"]}};
  if (devices.contains("config")) ordered["config"] = devices["config"];
  return claim_object(name, namespace_name, std::move(ordered), i);
}

std::string dra_pod_review() {
  Json meta = metadata("llm-finetune-0");
  meta["namespace"] = kDraNamespace;
  meta["labels"] = {{"app.kubernetes.io/name", "llm-finetune"}, {"app.kubernetes.io/part-of", "llm-platform"}, {"team", "nlp"}};
  Json trainer = container("trainer", 12, false);
  trainer["resources"]["claims"] = {{{"name", "gpus-a"}}};
  Json evaluator = simple_container("evaluator", "nvcr.io/nvidia/pytorch:24.08-py3", "4", "32Gi", 4);
  evaluator["resources"]["claims"] = {{{"name", "gpus-b"}}};
  Json shipper = simple_container("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1", "250m", "256Mi", 2);
  Json spec = {{"restartPolicy", "Never"},
               {"serviceAccountName", "trainer"},
               {"tolerations",
                {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                 {{"key", "gpu-admission.io/pool"}, {"operator", "Equal"}, {"value", "h100-shared"}, {"effect", "NoSchedule"}}}},
               {"resourceClaims",
                {{{"name", "gpus-a"}, {"resourceClaimName", "llm-finetune-gpus-a"}},
                 {{"name", "gpus-b"}, {"resourceClaimName", "llm-finetune-gpus-b"}}}},
               {"containers", {trainer, evaluator, shipper}},
               {"volumes",
                {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "corpus"}}}},
                 {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "16Gi"}}}}}}};
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
  return review(pod, "Pod", "", "pods");
}

std::string cpu_pod_review() {
  Json meta = metadata("data-prep-0");
  meta["namespace"] = kDraNamespace;
  meta["labels"] = {{"app.kubernetes.io/name", "data-prep"}, {"app.kubernetes.io/part-of", "llm-platform"}, {"team", "nlp"}};
  Json fetch = simple_container("fetch-shards", "registry.example.com/tools/gsutil:5.30", "1", "2Gi", 4);
  fetch["command"] = {"sh", "-c", "gsutil -m cp -r gs://corpus/shards /data"};
  Json spec = {{"restartPolicy", "OnFailure"},
               {"serviceAccountName", "data-prep"},
               {"initContainers", {fetch}},
               {"containers",
                {simple_container("tokenizer", "registry.example.com/nlp/tokenizer:2.4", "8", "16Gi", 8),
                 simple_container("loader", "registry.example.com/nlp/shard-loader:2.4", "2", "4Gi", 6),
                 simple_container("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1", "250m", "256Mi", 2),
                 simple_container("metrics-exporter", "registry.example.com/ops/exporter:1.9", "100m", "128Mi", 2)}},
               {"volumes", {{{"name", "data"}, {"emptyDir", {{"sizeLimit", "200Gi"}}}}}}};
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
  return review(pod, "Pod", "", "pods");
}

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
