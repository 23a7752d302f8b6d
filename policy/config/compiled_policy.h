// A policy compiled once into an immutable, shareable object (cel-cpp style): matchers, pool
// and tenant tables, MIG tables, rule actions. Compilation problems (unknown pool references,
// duplicates, invalid MIG profiles) are returned as data; lint warnings likewise.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/glob.h"
#include "policy/views/host_path.h"
#include "policy/base/ids.h"
#include "policy/views/mig.h"
#include "policy/config/policy_config.h"
#include "policy/base/source.h"
#include "policy/base/string_map.h"
#include "policy/config/template_paths.h"

namespace gpu_admission::policy {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

struct MigProfileEntry {
  std::string name;      // "1g.10gb+me"
  std::string resource;  // "nvidia.com/mig-1g.10gb.me"
  int slices = 0;        // compute slices: the leading <g>
  std::string single_product;  // single strategy node label value: "<gpuModel>-MIG-1g.10gb.me"
};

struct Pool {
  int index = 0;
  std::string name;
  StringPairs node_selector;
  Trust trust = Trust::Cooperative;
  std::string gpu_model;
  const MigModelTable* mig_table = nullptr;  // nullptr: model unknown or not MIG capable
  int compute_slices = 7;                    // slices per whole GPU of this model
  MigStrategy mig_strategy = MigStrategy::None;
  Sharing sharing = Sharing::None;
  std::vector<Taint> taints;
  std::vector<MigProfileEntry> mig_profiles;  // every profile of the model's table
  int default_profile = -1;                   // index into mig_profiles
  std::vector<std::string> runtime_classes;   // the pool's own runtimeClasses (empty: spec.runtimeClasses)

  const MigProfileEntry* find_profile(std::string_view profile) const;
  const MigProfileEntry* find_profile_by_resource(std::string_view resource) const;
};

struct Tenant {
  int index = 0;
  std::array<Action, kRuleCount> actions{};  // spec.rules with tenants[].rules over them, capped by `mode`
  std::array<Action, kRuleCount> enforced_actions{};  // the same, as enforcement would act
  // tenants[].enforcement (else spec.enforcement), capped by serve --enforcement.
  Enforcement mode = Enforcement::Enforce;
  std::string name;
  std::optional<LabelSelector> namespace_selector;
  StringPairs labels;
  std::optional<int64_t> max_gpus_per_pod;
  std::vector<bool> allowed_pools;  // indexed by pool index
  int default_pool = -1;
};

// spec.exceptions[], compiled: the rules it turns off for what all its selectors match.
struct PolicyException {
  std::string name;
  std::string reason;
  std::array<bool, kRuleCount> rules{};
  GlobIndex namespaces;           // empty: any
  std::vector<bool> tenants;      // indexed by tenant index; empty: any
  GlobIndex usernames;            // empty: any
  StringPairs pod_labels;         // empty: any
  std::optional<int64_t> expires; // Unix seconds; inert from then on
  std::string expires_text;       // as written, for the finding it no longer covers
};

// Compile-time facts from outside the file: the time (exceptions about to expire are warned
// about) and the serve --enforcement cap.
struct CompileOptions {
  int64_t now = kUnknownTime;
  // The operator's brake: no tenant acts further than this (the weakest of it and a tenant's
  // mode applies); nullopt: no cap.
  std::optional<Enforcement> enforcement;
};

class CompiledPolicy {
 public:
  // Where compile() reports an error: at a field path, with the line it came from.
  struct CompileErrors;
  // Compiles `config`. Returns nullptr when `issues` gained errors; warnings never block.
  static std::shared_ptr<const CompiledPolicy> compile(const PolicyConfig& config, const SourceMap& marks,
                                                       Issues& issues, const CompileOptions& options = {});

  const PolicyConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  // Hex SHA-256-free content hash (FNV-1a 64) of the normalized policy, for the policy_info metric.
  const std::string& hash() const { return hash_; }

  // A rule's action for a tenant's object (nullptr: a namespace of no tenant): tenants[].rules
  // over spec.rules, capped by the tenant's mode (audit: deny and warn become audit; warn: deny
  // becomes warn).
  Action action(RuleId id, const Tenant* tenant = nullptr) const {
    return (tenant ? tenant->actions : actions_)[static_cast<size_t>(id)];
  }
  // The same as enforcement would act on it: what "would be denied" means while observing.
  Action enforced_action(RuleId id, const Tenant* tenant = nullptr) const {
    return (tenant ? tenant->enforced_actions : enforced_actions_)[static_cast<size_t>(id)];
  }
  // How far the guard acts on a tenant's objects (nullptr: a namespace of no tenant): the tenant's
  // enforcement, else spec.enforcement, capped by serve --enforcement.
  Enforcement mode_for(const Tenant* tenant) const { return tenant ? tenant->mode : mode_; }
  // Under warn and audit nothing about the object changes: mutations are found, never applied.
  bool mutations_withheld(const Tenant* tenant) const { return mode_for(tenant) != Enforcement::Enforce; }
  // serve --enforcement, when given.
  std::optional<Enforcement> enforcement_cap() const { return cap_; }
  const std::vector<PolicyException>& exceptions() const { return exceptions_; }
  bool mutation_enabled(MutationId id) const { return config_.mutations[static_cast<size_t>(id)]; }

  bool namespace_exempt(std::string_view ns) const { return exempt_namespaces_.first_match(ns) != GlobIndex::kNoMatch; }
  bool username_exempt(std::string_view user) const { return exempt_usernames_.first_match(user) != GlobIndex::kNoMatch; }

  // First tenant (in policy order) whose namespace globs match `ns` or whose namespaceSelector
  // matches its labels (`labels` may be null: labels unknown, no selector matches); nullptr for
  // unmapped namespaces.
  // `unknown`, when given, is set when the tenant depends on labels that could not be read (a
  // namespaceSelector tenant listed before any tenant whose globs match): the result is then
  // nullptr, and the caller must not treat the namespace as one of no tenant.
  const Tenant* tenant_for_namespace(std::string_view ns, const NamespaceLabels* labels = nullptr,
                                     bool* unknown = nullptr) const;
  const Tenant* tenant_by_name(std::string_view name) const;

  const std::vector<Pool>& pools() const { return pools_; }
  const std::vector<Tenant>& tenants() const { return tenants_; }

  // What a resource name asks for; the one classification every counter and rule uses.
  // Fractional: a sharing layer's slice of a GPU (HAMi's nvidia.com/gpumem, ...): it makes a GPU
  // pod and counts no GPUs itself. DeviceClassFull / DeviceClassMig: the extended resource
  // kDeviceClassResourcePrefix + <class> (Kubernetes 1.34+ DRA) of a spec.deviceClasses.full /
  // .mig class, one device per unit.
  enum class GpuKind : uint8_t { NotGpu, Full, Shared, Mig, Fractional, DeviceClassFull, DeviceClassMig };
  static constexpr std::string_view kDeviceClassResourcePrefix = "deviceclass.resource.kubernetes.io/";
  GpuKind classify_resource(std::string_view resource) const {
    // "cpu", "memory" and the like are shorter than every GPU resource name: answered inline.
    return resource.size() < shortest_gpu_resource_ ? GpuKind::NotGpu : classify_long_resource(resource);
  }
  const std::string& mig_prefix() const { return config_.mig_prefix; }
  const std::vector<std::string>& full_resources() const { return config_.gpu_full; }
  // DRA: a DeviceClass that hands out whole GPUs (Full) or MIG slices (Mig); others are NotGpu.
  GpuKind classify_device_class(std::string_view device_class) const;

  const std::vector<Taint>& gpu_taints() const { return gpu_taints_; }
  std::optional<int64_t> max_gpus_for(const Tenant* tenant) const;

  // gpu-device-access: the built-in host path table plus spec.gpuHostPaths (policy/views/host_path.h).
  const HostPathTable& gpu_host_paths() const { return gpu_host_paths_; }
  // Env names denied besides the built-in ones (spec.gpuEnvVars): every decode of a pod this
  // policy judges takes them (policy/decoding/pod_decoder.h), so that env entries naming them are read.
  const std::vector<std::string>& gpu_env_vars() const { return config_.gpu_env_vars; }
  // Pod annotation prefixes that inject devices (spec.deviceAnnotationPrefixes).
  const std::vector<std::string>& device_annotation_prefixes() const { return config_.device_annotation_prefixes; }
  // Pod annotation keys with which a scheduler shares a GPU between pods (spec.gpuSharingAnnotations).
  const std::vector<std::string>& gpu_sharing_annotations() const { return config_.gpu_sharing_annotations; }
  // DRA: the compute-domain driver's IMEX classes (spec.deviceClasses.imex) and those whose
  // every-channel requests adversarial pools accept (spec.deviceClasses.imexAllowed).
  bool imex_device_class(std::string_view device_class) const;
  bool imex_device_class_allowed(std::string_view device_class) const;
  // The runtimeClassName values a GPU pod in `pool` (nullptr: no pool) may use: the pool's
  // runtimeClasses when it lists some, else spec.runtimeClasses; empty: any.
  const std::vector<std::string>& runtime_classes_for(const Pool* pool) const {
    return pool && !pool->runtime_classes.empty() ? pool->runtime_classes : config_.runtime_classes;
  }
  // DRA device tolerations tenants' GPU requests may carry (spec.deviceTolerations).
  const std::vector<TolerationConfig>& device_tolerations() const { return config_.device_tolerations; }

  // A kind whose pod templates are judged by template paths: spec.workloads first, then
  // the built-in ML kinds; nullptr for others. `group` is the apiVersion's group.
  const WorkloadKindDef* workload_kind(std::string_view group, std::string_view kind) const;
  const std::vector<WorkloadKindDef>& policy_workload_kinds() const { return workload_kinds_; }

 private:
  GpuKind classify_long_resource(std::string_view resource) const;
  // compile(), section by section (compiled_policy.cpp; the rollout in compiled_rollout.cpp).
  void compile_matching();
  void compile_workloads(const CompileErrors& error);
  StringMap<int> compile_pools(const CompileErrors& error);
  void compile_tenants(const StringMap<int>& pool_index, const CompileErrors& error);
  // Rule actions and exceptions (compiled_rollout.cpp).
  void compile_rollout(const SourceMap& marks, Issues& issues);

  PolicyConfig config_;
  std::string hash_;
  GlobIndex exempt_namespaces_;
  GlobIndex exempt_usernames_;
  GlobIndex tenant_namespaces_;
  std::vector<int> selector_tenants_;  // tenants with a namespaceSelector, in policy order
  std::vector<Pool> pools_;
  std::vector<Tenant> tenants_;
  StringMap<int> tenant_by_name_;
  // Resource names and device classes with their kind: a handful each, compared by length and
  // bytes (cheaper than hashing the name on every lookup).
  std::vector<std::pair<std::string, GpuKind>> resource_kinds_;
  std::vector<std::pair<std::string, GpuKind>> device_class_kinds_;
  size_t shortest_gpu_resource_ = 0;  // of resource_kinds_ and the MIG prefix
  std::vector<Taint> gpu_taints_;
  HostPathTable gpu_host_paths_;
  std::vector<WorkloadKindDef> workload_kinds_;  // spec.workloads, compiled
  std::array<Action, kRuleCount> actions_{};     // spec.rules capped by mode_
  std::array<Action, kRuleCount> enforced_actions_{};  // spec.rules
  Enforcement mode_ = Enforcement::Enforce;      // spec.enforcement, capped by cap_
  std::optional<Enforcement> cap_;               // serve --enforcement
  std::vector<PolicyException> exceptions_;
};

using PolicyPtr = std::shared_ptr<const CompiledPolicy>;

}  // namespace gpu_admission::policy
