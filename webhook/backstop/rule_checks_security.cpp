// The backstop's checks of privileged, host-namespaces and gpu-device-access (see rule_checks.h),
// and the dispatch over rules.
#include <vector>

#include "webhook/backstop/cel_text.h"
#include "webhook/backstop/host_path_regex.h"
#include "webhook/backstop/pod_cel.h"
#include "webhook/backstop/pool_cel.h"
#include "webhook/backstop/rule_checks.h"
#include "webhook/backstop/tenancy_cel.h"

namespace gpu_admission::webhook::backstop {
namespace {

using policy::RuleId;

std::string labels_of(const std::string& meta_owner) {
  return "(has(" + meta_owner + ".metadata) && has(" + meta_owner + ".metadata.labels) ? " + meta_owner +
         ".metadata.labels : {})";
}

// Covered by an exception selecting by pod labels, `labels` being the pod's.
std::string label_excepted(const PlanContext& ctx, const std::string& labels) {
  std::vector<std::string> any;
  for (const auto* e : ctx.label_exceptions)
    any.push_back(all_of({exception_matches_request(ctx.policy, *e), exception_labels_match(ctx.policy, *e, labels)}));
  return any_of(any);
}

// A container an UPDATE of pods/ephemeralcontainers adds breaks `body` (about `c`).
std::string new_ephemeral(const PlanContext& ctx, const std::string& body) {
  std::string out = "variables.newEphemeralContainers.exists(c, " + body + ")";
  if (!ctx.label_exceptions.empty()) out += " && " + not_excepted_pod(ctx, "object");
  return out;
}

// The NVIDIA container toolkit's device list root (gpu_device_access.cpp), matched as a name
// prefix after normalization.
PathRegex device_list_mount_regex(std::vector<std::string>& notes) {
  policy::HostPathTable table;
  table.add("/run/nvidia-container-devices", policy::HostPathMatch::NamePrefix, "device lists");
  return host_path_regex(table, notes);
}

constexpr const char* kSuffix = " (gpu-admission backstop: a ValidatingAdmissionPolicy that acts while the webhook cannot)";

std::vector<std::string> normalization_notes() {
  return {"gpu-device-access: host paths and mount paths whose \"..\" climbs more than one directory at a time, or "
          "out of /var/run after anything but the path's start (the API server refuses \"..\" in hostPath.path)"};
}

// Runtime classes of GPU pods (gpu_runtime_and_tolerations.cpp), for pods judged in a pool.
std::string runtime_class_violation(const PlanContext& ctx) {
  std::vector<std::string> pools;
  for (const auto& p : ctx.policy.pools()) {
    const auto& classes = ctx.policy.runtime_classes_for(&p);
    if (classes.empty()) continue;
    pools.push_back("pool == " + quote(p.name) + " && !(has(t.spec.runtimeClassName) && t.spec.runtimeClassName in " +
                    quote_list(classes) + ")");
  }
  if (pools.empty()) return "";
  return pod_asks_gpu(ctx.policy, "t.spec") + " &&\n" + with_pools(ctx.policy, "t.spec", any_of(pools));
}

}  // namespace

std::string over_templates(const PlanContext& ctx, const std::string& body) {
  std::string test = "has(t.spec) && (" + body + ")";
  if (!ctx.label_exceptions.empty()) test += " && !(" + label_excepted(ctx, labels_of("t")) + ")";
  return "variables.isCreate && variables.templates.exists(g, g.exists(t, " + test + "))";
}

std::string not_excepted_pod(const PlanContext& ctx, const std::string& object) {
  if (ctx.label_exceptions.empty()) return "true";
  return "!(" + label_excepted(ctx, labels_of(object)) + ")";
}

RulePlan plan_privileged(const PlanContext& ctx) {
  RulePlan plan;
  const std::string message = "[privileged] a container (app, init or ephemeral) sets securityContext.privileged: true";
  plan.checks.push_back({over_templates(ctx, any_container("t.spec", container_privileged("c"))), message + kSuffix});
  plan.checks.push_back({new_ephemeral(ctx, container_privileged("c")), message + " (kubectl debug)" + kSuffix});
  plan.pod_updates = {"pods/ephemeralcontainers"};
  return plan;
}

RulePlan plan_host_namespaces(const PlanContext& ctx) {
  RulePlan plan;
  plan.checks.push_back({over_templates(ctx, host_namespaces("t.spec")),
                         std::string("[host-namespaces] hostPID, hostIPC or hostNetwork is true: the pod would share the "
                                     "node's process, IPC or network namespace") + kSuffix});
  return plan;
}

RulePlan plan_gpu_device_access(const PlanContext& ctx) {
  RulePlan plan;
  const auto& policy = ctx.policy;
  const PathRegex mount = device_list_mount_regex(plan.notes);
  const PathRegex host_paths = host_path_regex(policy.gpu_host_paths(), plan.notes);
  const std::string env = container_device_env(policy, "c");
  const std::string mounts = container_mount_matches("c", mount);
  plan.checks.push_back({over_templates(ctx, any_container("t.spec", env)),
                         "[gpu-device-access] a container sets an env var that hands out GPUs or drops their isolation "
                         "(NVIDIA_VISIBLE_DEVICES and the like, value or valueFrom), or imports one through an envFrom "
                         "prefix" + std::string(kSuffix)});
  plan.checks.push_back({over_templates(ctx, host_path_matches("t.spec", host_paths)),
                         "[gpu-device-access] a hostPath volume reaches GPU device nodes or the GPU stack's control files "
                         "(or a directory above them)" + std::string(kSuffix)});
  plan.checks.push_back({over_templates(ctx, any_container("t.spec", mounts)),
                         "[gpu-device-access] a volume is mounted at /var/run/nvidia-container-devices, where the NVIDIA "
                         "container toolkit reads a device list" + std::string(kSuffix)});
  plan.checks.push_back({over_templates(ctx, "has(t.metadata) && " + device_annotation(policy, "t.metadata")),
                         "[gpu-device-access] a pod annotation asks a runtime to inject devices or host mounts "
                         "(deviceAnnotationPrefixes)" + std::string(kSuffix)});
  if (std::string rc = runtime_class_violation(ctx); !rc.empty())
    plan.checks.push_back({over_templates(ctx, rc), "[gpu-device-access] a GPU pod uses a runtime class its pool does "
                                                    "not allow (runtimeClasses)" + std::string(kSuffix)});
  if (!policy.config().runtime_classes.empty())
    plan.notes.push_back("gpu-device-access: the runtime class of a GPU pod pinned to no pool (spec.runtimeClasses)");
  // UPDATEs: containers kubectl debug adds, and annotations added to a running pod.
  plan.checks.push_back({new_ephemeral(ctx, "(" + env + ") || (" + mounts + ")"),
                         "[gpu-device-access] an ephemeral container sets a device env var or mounts a device list" +
                             std::string(kSuffix)});
  plan.checks.push_back(
      {"has(request.operation) && request.operation == 'UPDATE' && variables.kind == 'Pod' && "
       "has(object.metadata) && " + device_annotation(policy, "object.metadata") +
           " && !(oldObject != null && has(oldObject.metadata) && " + device_annotation(policy, "oldObject.metadata") +
           ")" + (ctx.label_exceptions.empty() ? "" : " && " + not_excepted_pod(ctx, "object")),
       "[gpu-device-access] an update adds a device-injecting annotation to a pod" + std::string(kSuffix)});
  plan.pod_updates = {"pods", "pods/ephemeralcontainers"};
  // Claims on their own admission.
  plan.checks.push_back({"variables.isCreate && (" + claim_admin_access(policy, "object") + ")",
                         "[gpu-device-access] a DRA GPU request asks for adminAccess, which reaches GPUs allocated to "
                         "other pods" + std::string(kSuffix)});
  plan.checks.push_back({"variables.isCreate && (" + claim_disallowed_toleration(policy, "object") + ")",
                         "[gpu-device-access] a DRA GPU request tolerates a device taint that spec.deviceTolerations "
                         "does not allow" + std::string(kSuffix)});
  plan.claims = true;
  for (auto& n : normalization_notes()) plan.notes.push_back(std::move(n));
  plan.notes.push_back("gpu-device-access: a pod's DRA claims (adminAccess, device tolerations; the claims are judged "
                       "when they are created), and NVIDIA_VISIBLE_DEVICES=void in a container whose GPUs come only from "
                       "a claim");
  return plan;
}

std::optional<RulePlan> plan_rule(const PlanContext& ctx, std::vector<std::string>& notes) {
  switch (ctx.rule) {
    case RuleId::Privileged: return plan_privileged(ctx);
    case RuleId::HostNamespaces: return plan_host_namespaces(ctx);
    case RuleId::GpuDeviceAccess: return plan_gpu_device_access(ctx);
    case RuleId::GpuTolerations: return plan_gpu_tolerations(ctx);
    case RuleId::GpuCap: return plan_gpu_cap(ctx);
    case RuleId::TenantPool: return plan_tenant_pool(ctx);
    case RuleId::TenantLabel: return plan_tenant_label(ctx);
    case RuleId::MpsAdversarial:
      notes.push_back("mps-adversarial: not exported (it judges a pod in its pool, after whole GPUs became MIG slices, "
                      "with its DRA claims)");
      return std::nullopt;
    case RuleId::GpuSharing:
      notes.push_back("gpu-sharing: not exported (it judges a pod in its pool, with its DRA claims)");
      return std::nullopt;
    case RuleId::MigProfile:
      notes.push_back("mig-profile: not exported (mig-resources turns whole GPUs into MIG slices first)");
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::backstop
