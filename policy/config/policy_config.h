// The policy file as typed data, before compilation. Produced by the policy
// loader from a JSON tree; printed back by `policy show`.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/base/ids.h"
#include "policy/config/label_selector.h"

namespace gpu_admission::policy {

enum class Trust : uint8_t { Cooperative, Adversarial };
enum class MigStrategy : uint8_t { None, Single, Mixed };
enum class Sharing : uint8_t { None, Mps, TimeSlicing };
enum class UnmappedGpuPods : uint8_t { Deny, Allow };
// A time not known (no clock given): exceptions that expire are treated as expired.
inline constexpr int64_t kUnknownTime = std::numeric_limits<int64_t>::min();


inline constexpr std::array<std::string_view, 2> kTrustNames = {"cooperative", "adversarial"};
inline constexpr std::array<std::string_view, 3> kMigStrategyNames = {"none", "single", "mixed"};
inline constexpr std::array<std::string_view, 3> kSharingNames = {"none", "mps", "time-slicing"};
inline constexpr std::array<std::string_view, 2> kUnmappedGpuPodsNames = {"deny", "allow"};

using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct TaintConfig {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

// spec.deviceTolerations[]: a DRA device toleration tenants' GPU requests may carry (or any
// toleration that tolerates no more than it does).
struct TolerationConfig {
  std::string key;           // "" only with Exists: every key
  std::string op = "Equal";  // Exists | Equal
  std::string value;
  std::string effect;        // "" (every effect) | NoSchedule | NoExecute
};

struct PoolConfig {
  std::string name;
  StringPairs node_selector;
  Trust trust = Trust::Cooperative;
  std::string gpu_model;
  MigStrategy mig_strategy = MigStrategy::None;
  std::string mig_default_profile;
  Sharing sharing = Sharing::None;
  std::vector<TaintConfig> taints;
  // runtimeClasses: nullopt when left out; set but empty inherits spec.runtimeClasses too.
  std::optional<std::vector<std::string>> runtime_classes;
};

struct TenantConfig {
  std::string name;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;  // namespaces chosen by their labels
  StringPairs labels;
  std::optional<int64_t> max_gpus_per_pod;
  std::vector<std::string> pools;
  std::string default_pool;
  std::vector<std::pair<RuleId, Action>> rules;  // tenants[].rules: this tenant's actions over spec.rules
  std::optional<Enforcement> enforcement;        // tenants[].enforcement: this tenant's mode over spec.enforcement
};

// spec.exceptions[]: rules turned off for the objects every selector matches, until `expires`.
struct ExceptionConfig {
  std::string name;
  std::string reason;
  std::vector<RuleId> rules;
  std::vector<std::string> namespaces;  // globs; empty: any
  std::vector<std::string> tenants;     // tenant names; empty: any
  std::vector<std::string> usernames;   // globs; empty: any
  StringPairs pod_labels;               // every pair must be on the pod; empty: any
  std::optional<int64_t> expires;       // Unix seconds; nullopt: never
  std::string expires_text;             // as written (RFC 3339), for messages and `policy show`
};

// spec.workloads[]: a kind whose pod templates are judged, by template paths.
struct WorkloadConfig {
  std::string api_version;  // "example.com/v1": the group is what matters
  std::string kind;
  std::vector<std::string> templates;  // "spec.roles[*].template"
};

struct PolicyConfig {
  std::string name;
  std::vector<std::string> exempt_namespaces;
  std::vector<std::string> exempt_usernames;
  std::vector<std::string> gpu_full = {"nvidia.com/gpu"};
  std::string mig_prefix = "nvidia.com/mig-";
  std::vector<std::string> gpu_shared = {"nvidia.com/gpu.shared"};
  std::vector<std::string> gpu_fractional;  // a sharing layer's per-GPU fractions: GPU pods, no GPUs counted
  std::vector<std::string> device_classes_full = {"gpu.nvidia.com", "vfio.gpu.nvidia.com"};  // DRA
  std::vector<std::string> device_classes_mig = {"mig.nvidia.com"};
  // DRA classes of the compute-domain driver: IMEX channels and daemons (Multi-Node NVLink). A
  // request that reaches every channel of a domain is refused in adversarial pools unless its
  // class is in device_classes_imex_allowed.
  std::vector<std::string> device_classes_imex = {"compute-domain-default-channel.nvidia.com",
                                                  "compute-domain-daemon.nvidia.com", "imex.nvidia.com"};
  std::vector<std::string> device_classes_imex_allowed;
  std::vector<std::string> gpu_host_paths;                           // added to the built-in list
  // Annotations that inject devices or host mounts: CDI, NVIDIA's CDI, NRI's device injector
  // (devices, CDI devices, and mounts of any host path), and CRI-O's device list.
  std::vector<std::string> device_annotation_prefixes = {
      "cdi.k8s.io/",     "nvidia.cdi.k8s.io/", "devices.noderesource.dev/", "cdi-devices.noderesource.dev/",
      "devices.nri.io/", "cdi-devices.nri.io/", "mounts.noderesource.dev/", "mounts.nri.io/",
      "io.kubernetes.cri-o.Devices"};
  // Pod annotations with which a scheduler shares GPUs between pods (KAI Scheduler, Run:ai: a
  // fraction or an amount of memory of a GPU, no isolation between the pods); exact keys.
  std::vector<std::string> gpu_sharing_annotations = {"gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"};
  std::vector<std::string> runtime_classes;              // GPU pods' runtimeClassName; empty: any
  std::vector<TolerationConfig> device_tolerations;      // DRA device tolerations tenants may carry
  std::optional<int64_t> default_max_gpus_per_pod;
  UnmappedGpuPods unmapped_gpu_pods = UnmappedGpuPods::Deny;
  std::vector<TaintConfig> gpu_taints;
  std::array<Action, kRuleCount> rule_actions{};        // all Deny (value 0)
  std::array<bool, kMutationCount> mutations = {true, true, true, true};
  std::vector<PoolConfig> pools;
  std::vector<TenantConfig> tenants;
  std::vector<WorkloadConfig> workloads;
  std::vector<std::string> gpu_env_vars;  // spec.gpuEnvVars: added to the built-in env names
  Enforcement enforcement = Enforcement::Enforce;
  std::vector<ExceptionConfig> exceptions;
};

}  // namespace gpu_admission::policy
