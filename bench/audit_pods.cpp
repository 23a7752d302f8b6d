// Pod templates and the pods made from them, for the audit benchmark's cluster (audit_objects.h).
// A template is what a person wrote plus the API server's defaults; a pod is its template after
// /mutate (tenant labels, the default pool's nodeSelector, MIG slices, NVIDIA_VISIBLE_DEVICES=void
// in containers without GPUs), the API server (token volume, default tolerations), the scheduler
// (nodeName) and the kubelet (status).
#include <algorithm>

#include "bench/audit_objects.h"

namespace gpu_admission::bench::audit {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

Json env_value(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

Json env_field(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", path}}}}}};
}

Json env_secret(const std::string& name, const std::string& secret, const std::string& key) {
  return {{"name", name}, {"valueFrom", {{"secretKeyRef", {{"name", secret}, {"key", key}}}}}};
}

Json mount(const std::string& name, const std::string& path, bool read_only = false) {
  Json m = {{"name", name}, {"mountPath", path}};
  if (read_only) m["readOnly"] = true;
  return m;
}

Json http_probe(const std::string& path, int port, int initial_delay) {
  return {{"httpGet", {{"path", path}, {"port", port}, {"scheme", "HTTP"}}},
          {"initialDelaySeconds", initial_delay}, {"timeoutSeconds", 1}, {"periodSeconds", 10},
          {"successThreshold", 1}, {"failureThreshold", 3}};
}

Json resources(const std::string& cpu_request, const std::string& memory_request, const std::string& cpu_limit,
               const std::string& memory_limit, int gpus) {
  Json r = {{"limits", {{"cpu", cpu_limit}, {"memory", memory_limit}}},
            {"requests", {{"cpu", cpu_request}, {"memory", memory_request}}}};
  if (gpus > 0) {
    r["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
    r["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
  }
  return r;
}

// The API server's defaults of a container.
Json container(const std::string& name, const std::string& image) {
  return {{"name", name}, {"image", image}};
}

void finish_container(Json& c) {
  c["terminationMessagePath"] = "/dev/termination-log";
  c["terminationMessagePolicy"] = "File";
  c["imagePullPolicy"] = "IfNotPresent";
  if (c.contains("ports"))
    for (Json& p : c["ports"]) p["protocol"] = "TCP";
}

Json model_server(const TemplatePlan& p, Json& volumes) {
  const int g = std::max(p.gpus, 1);
  Json c = container("server", "vllm/vllm-openai:v0.6.3.post1");
  c["command"] = {"python3", "-m", "vllm.entrypoints.openai.api_server"};
  c["args"] = {"--model", "/models/" + p.app, "--served-model-name", p.app, "--tensor-parallel-size", std::to_string(g),
               "--port", "8000", "--max-model-len", "8192", "--gpu-memory-utilization", "0.92"};
  c["ports"] = Json::array({{{"name", "http"}, {"containerPort", 8000}}});
  c["env"] = {env_value("HF_HOME", "/models/.cache"), env_value("HF_HUB_OFFLINE", "1"),
              env_value("VLLM_WORKER_MULTIPROC_METHOD", "spawn"), env_value("VLLM_LOGGING_LEVEL", "INFO"),
              env_value("NCCL_DEBUG", "WARN"), env_value("OMP_NUM_THREADS", "8"),
              env_field("POD_NAME", "metadata.name"), env_field("POD_NAMESPACE", "metadata.namespace"),
              env_field("POD_IP", "status.podIP"),
              env_value("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector.monitoring.svc:4317"),
              env_value("OTEL_SERVICE_NAME", p.app)};
  c["resources"] = resources(std::to_string(4 * g), std::to_string(48 * g) + "Gi", std::to_string(8 * g),
                             std::to_string(64 * g) + "Gi", p.gpus);
  c["volumeMounts"] = {mount("models", "/models", true), mount("dshm", "/dev/shm"), mount("server-config", "/etc/vllm", true)};
  c["readinessProbe"] = http_probe("/health", 8000, 60);
  c["livenessProbe"] = http_probe("/health", 8000, 300);
  Json sidecar = container("metrics-exporter", "ghcr.io/example/vllm-metrics-bridge:1.4.2");
  sidecar["args"] = {"--listen=:9400", "--upstream=http://127.0.0.1:8000/metrics"};
  sidecar["ports"] = Json::array({{{"name", "metrics"}, {"containerPort", 9400}}});
  sidecar["resources"] = resources("50m", "64Mi", "200m", "128Mi", 0);
  volumes = {{{"name", "models"}, {"persistentVolumeClaim", {{"claimName", p.app + "-weights"}, {"readOnly", true}}}},
             {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "16Gi"}}}},
             {{"name", "server-config"}, {"configMap", {{"name", p.app + "-config"}, {"defaultMode", 420}}}}};
  return Json::array({c, sidecar});
}

Json trainer(const TemplatePlan& p, Json& volumes) {
  const int g = std::max(p.gpus, 1);
  const std::string tenant = p.tenant ? p.tenant->name : "platform";
  Json c = container("pytorch", "nvcr.io/nvidia/pytorch:24.08-py3");
  c["command"] = {"torchrun"};
  c["args"] = {"--nproc_per_node=" + std::to_string(g), "/workspace/train.py", "--config", "/etc/train/config.yaml",
               "--checkpoint-dir", "/checkpoints/" + p.app};
  c["ports"] = Json::array({{{"name", "pytorchjob-port"}, {"containerPort", 23456}}});
  c["env"] = {env_value("NCCL_IB_DISABLE", "0"), env_value("NCCL_SOCKET_IFNAME", "eth0"), env_value("NCCL_DEBUG", "INFO"),
              env_value("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"), env_value("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
              env_value("HF_DATASETS_CACHE", "/datasets/.cache"), env_value("WANDB_PROJECT", tenant + "-" + p.app),
              env_secret("WANDB_API_KEY", "wandb", "api-key")};
  c["resources"] = resources(std::to_string(12 * g), std::to_string(120 * g) + "Gi", std::to_string(12 * g),
                             std::to_string(120 * g) + "Gi", p.gpus);
  c["volumeMounts"] = {mount("dshm", "/dev/shm"), mount("datasets", "/datasets", true), mount("checkpoints", "/checkpoints"),
                       mount("train-config", "/etc/train", true)};
  volumes = {{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "64Gi"}}}},
             {{"name", "datasets"}, {"persistentVolumeClaim", {{"claimName", tenant + "-datasets"}, {"readOnly", true}}}},
             {{"name", "checkpoints"}, {"persistentVolumeClaim", {{"claimName", p.app + "-checkpoints"}}}},
             {{"name", "train-config"}, {"configMap", {{"name", p.app + "-config"}, {"defaultMode", 420}}}}};
  return Json::array({c});
}

Json notebook(const TemplatePlan& p, Json& volumes) {
  Json c = container("notebook", "quay.io/jupyter/pytorch-notebook:cuda12-2024-10-07");
  c["ports"] = Json::array({{{"name", "notebook-port"}, {"containerPort", 8888}}});
  c["env"] = {env_value("JUPYTER_ENABLE_LAB", "yes"), env_value("NB_PREFIX", "/notebook/" + p.ns->name + "/" + p.app),
              env_secret("JUPYTER_TOKEN", p.app + "-token", "token"), env_value("HF_HOME", "/home/jovyan/.cache")};
  c["resources"] = resources("2", "16Gi", "8", "64Gi", p.gpus);
  c["volumeMounts"] = {mount("workspace", "/home/jovyan"), mount("dshm", "/dev/shm")};
  volumes = {{{"name", "workspace"}, {"persistentVolumeClaim", {{"claimName", p.app + "-workspace"}}}},
             {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "8Gi"}}}}};
  return Json::array({c});
}

Json batch(const TemplatePlan& p, Json& volumes) {
  const std::string tenant = p.tenant ? p.tenant->name : "platform";
  Json c = container("job", p.gpus > 0 ? "nvcr.io/nvidia/pytorch:24.08-py3" : "python:3.11-slim");
  c["command"] = {"python", "-m", "pipelines." + p.app};
  c["args"] = {"--date", "2026-11-20", "--output", "s3://" + tenant + "-artifacts/" + p.app + "/"};
  c["env"] = {env_value("AWS_REGION", "us-east-1"), env_value("S3_ENDPOINT", "https://s3.example.internal"),
              env_secret("AWS_ACCESS_KEY_ID", tenant + "-s3", "access-key"),
              env_secret("AWS_SECRET_ACCESS_KEY", tenant + "-s3", "secret-key"), env_value("LOG_LEVEL", "info")};
  c["resources"] = p.gpus > 0 ? resources("8", "64Gi", "8", "64Gi", p.gpus) : resources("2", "4Gi", "4", "8Gi", 0);
  c["volumeMounts"] = {mount("scratch", "/scratch")};
  volumes = {{{"name", "scratch"}, {"emptyDir", {{"sizeLimit", "100Gi"}}}}};
  return Json::array({c});
}

Json cpu_service(const TemplatePlan& p, Json& volumes) {
  Json c = container("app", "registry.example.com/platform/" + p.app + ":2.14.3");
  c["args"] = {"--port=8080", "--log-format=json"};
  c["ports"] = Json::array({{{"name", "http"}, {"containerPort", 8080}}});
  c["env"] = {env_field("POD_NAME", "metadata.name"), env_field("POD_NAMESPACE", "metadata.namespace"),
              env_value("LOG_LEVEL", "info"), env_value("GOMAXPROCS", "2")};
  c["resources"] = resources("250m", "256Mi", "1", "1Gi", 0);
  c["volumeMounts"] = {mount("config", "/etc/" + p.app, true)};
  c["readinessProbe"] = http_probe("/readyz", 8080, 5);
  c["livenessProbe"] = http_probe("/healthz", 8080, 10);
  volumes = {{{"name", "config"}, {"configMap", {{"name", p.app}, {"defaultMode", 420}}}}};
  return Json::array({c});
}

Json node_agent(const TemplatePlan& p, Json& volumes) {
  Json c = container("agent", "registry.k8s.io/" + p.app + ":v1.31.2");
  c["securityContext"] = {{"privileged", true}};
  c["env"] = {env_field("NODE_NAME", "spec.nodeName")};
  c["resources"] = resources("100m", "128Mi", "500m", "512Mi", 0);
  c["volumeMounts"] = {mount("host-root", "/host", true), mount("run", "/run")};
  volumes = {{{"name", "host-root"}, {"hostPath", {{"path", "/"}, {"type", ""}}}},
             {{"name", "run"}, {"hostPath", {{"path", "/run"}, {"type", "Directory"}}}}};
  return Json::array({c});
}

// The GPU taints of bench/audit-policy.yaml a pod in `pool` must tolerate.
Json gpu_tolerations(const Pool& pool, bool global) {
  Json out = Json::array();
  if (global) out.push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  if (pool.tainted)
    out.push_back({{"key", std::string(kPoolLabel)}, {"operator", "Equal"}, {"value", pool.name}, {"effect", "NoSchedule"}});
  return out;
}

// A container with no GPU where a violation's env var goes (a debugging sidecar when the pod has none).
Json& non_gpu_container(Json& containers) {
  for (Json& c : containers)
    if (!c["resources"]["limits"].contains("nvidia.com/gpu")) return c;
  Json debug = container("gpu-debug", "nvidia/cuda:12.4.1-base-ubuntu22.04");
  debug["command"] = {"sleep", "infinity"};
  debug["resources"] = resources("10m", "32Mi", "100m", "64Mi", 0);
  finish_container(debug);
  containers.push_back(std::move(debug));
  return containers.back();
}

void add_violation(const TemplatePlan& p, Json& spec) {
  Json& main = spec["containers"][0];
  switch (p.violation) {
    case Violation::Privileged:
      main["securityContext"] = {{"privileged", true}};
      break;
    case Violation::HostNetwork:
      spec["hostNetwork"] = true;
      spec["dnsPolicy"] = "ClusterFirstWithHostNet";
      break;
    case Violation::DeviceEnv: {
      Json& c = non_gpu_container(spec["containers"]);
      if (!c.contains("env")) c["env"] = Json::array();
      c["env"].push_back(env_value("NVIDIA_VISIBLE_DEVICES", "all"));
      c["env"].push_back(env_value("NVIDIA_DRIVER_CAPABILITIES", "utility"));
      break;
    }
    default:
      break;  // gpu-cap, gpu-tolerations and tenant-pool are in the plan (apply_violation) or the tolerations
  }
}

}  // namespace

void apply_violation(TemplatePlan& plan, Violation v) {
  plan.violation = v;
  if (!plan.tenant || plan.pool < 0) return;
  if (v == Violation::GpuCap) plan.gpus = 8;  // every GPU tenant that may get it has a cap below 8
  if (v == Violation::ForeignPool) {
    plan.pool = plan.tenant->foreign_pool;
    plan.pin_in_template = true;
  }
}

Json pod_template(const TemplatePlan& p, const Labels& extra_labels) {
  Json labels = {{"app", p.app}, {"app.kubernetes.io/name", p.app}};
  if (p.tenant) labels["app.kubernetes.io/part-of"] = p.tenant->name;
  for (const auto& [k, v] : extra_labels) labels[k] = v;
  Json volumes;
  Json containers;
  switch (p.shape) {
    case AppShape::ModelServer: containers = model_server(p, volumes); break;
    case AppShape::Trainer: containers = trainer(p, volumes); break;
    case AppShape::Notebook: containers = notebook(p, volumes); break;
    case AppShape::Batch: containers = batch(p, volumes); break;
    case AppShape::CpuService: containers = cpu_service(p, volumes); break;
    case AppShape::NodeAgent: containers = node_agent(p, volumes); break;
  }
  for (Json& c : containers) finish_container(c);
  Json spec = {{"volumes", volumes}, {"containers", containers}, {"restartPolicy", p.restart_policy},
               {"terminationGracePeriodSeconds", 30}, {"dnsPolicy", "ClusterFirst"}};
  if (p.pool >= 0 && p.pin_in_template) spec["nodeSelector"] = {{std::string(kPoolLabel), pools()[p.pool].name}};
  spec["serviceAccountName"] = p.shape == AppShape::NodeAgent ? p.app : "default";
  spec["securityContext"] = p.shape == AppShape::Notebook ? Json{{"runAsUser", 1000}, {"fsGroup", 100}} : Json::object();
  if (p.shape == AppShape::ModelServer)
    spec["affinity"] = {{"podAntiAffinity",
                         {{"preferredDuringSchedulingIgnoredDuringExecution",
                           Json::array({{{"weight", 100},
                                         {"podAffinityTerm", {{"labelSelector", {{"matchLabels", {{"app", p.app}}}}},
                                                              {"topologyKey", "kubernetes.io/hostname"}}}}})}}}};
  spec["schedulerName"] = "default-scheduler";
  if (p.shape == AppShape::NodeAgent) {
    spec["hostNetwork"] = true;
    spec["tolerations"] = Json::array({{{"operator", "Exists"}}});
  } else if (p.pool >= 0) {
    spec["tolerations"] = gpu_tolerations(pools()[p.pool], p.violation != Violation::Tolerations);
  }
  add_violation(p, spec);
  return {{"metadata", {{"labels", labels}}}, {"spec", spec}};
}

}  // namespace gpu_admission::bench::audit
