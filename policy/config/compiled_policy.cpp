#include "policy/config/compiled_policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "policy/config/lint.h"
#include "policy/config/policy_loader.h"

namespace gpu_admission::policy {
namespace {

std::string fnv1a_hex(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool valid_label_value(std::string_view v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool valid_label_key(std::string_view k) {
  size_t slash = k.find('/');
  std::string_view name = slash == std::string_view::npos ? k : k.substr(slash + 1);
  if (slash != std::string_view::npos) {
    std::string_view prefix = k.substr(0, slash);
    if (prefix.empty() || prefix.size() > 253) return false;
    for (char c : prefix)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return !name.empty() && valid_label_value(name);
}

std::vector<Taint> to_taints(const std::vector<TaintConfig>& in) {
  std::vector<Taint> out;
  for (const auto& t : in) out.push_back({t.key, t.value, t.effect});
  return out;
}

}  // namespace

struct CompiledPolicy::CompileErrors {
  const SourceMap& marks;
  Issues& issues;
  void operator()(const std::string& path, std::string message) const {
    issues.push_back({Issue::Severity::Error, path, std::move(message), marks.find(path)});
  }
};

namespace {

Pool make_pool(const PoolConfig& pc, int index, const std::string& mig_prefix) {
  Pool pool;
  pool.index = index;
  pool.name = pc.name;
  pool.node_selector = pc.node_selector;
  pool.trust = pc.trust;
  pool.gpu_model = pc.gpu_model;
  pool.mig_strategy = pc.mig_strategy;
  pool.sharing = pc.sharing;
  pool.taints = to_taints(pc.taints);
  pool.runtime_classes = pc.runtime_classes.value_or(std::vector<std::string>{});
  pool.mig_table = mig_table_for_model(pc.gpu_model);
  if (pool.mig_table) {
    pool.compute_slices = pool.mig_table->compute_slices;
    for (auto profile : pool.mig_table->profiles) {
      pool.mig_profiles.push_back({std::string(profile), mig_prefix + mig_profile_resource_suffix(profile),
                                   mig_profile_slices(profile).value_or(1),
                                   pc.gpu_model + "-MIG-" + mig_profile_resource_suffix(profile)});
    }
  }
  return pool;
}

// The MIG tables' family names, for errors: "A30-24GB, A100-40GB, ...".
std::string known_mig_families() {
  std::string out;
  for (const MigModelTable& table : all_mig_tables()) out += (out.empty() ? "" : ", ") + std::string(table.family);
  return out;
}

// A MIG pool needs a model with a MIG table and a default profile valid for it.
void check_pool_mig(const PoolConfig& pc, const std::string& path, Pool& pool,
                    const CompiledPolicy::CompileErrors& error) {
  const std::string strategy(kMigStrategyNames[static_cast<size_t>(pc.mig_strategy)]);
  if (pc.mig_strategy != MigStrategy::None) {
    if (pc.gpu_model.empty()) {
      error(path + ".gpuModel", "required when mig.strategy is " + strategy);
    } else if (!pool.mig_table) {
      error(path + ".gpuModel", "no MIG profile table for gpuModel \"" + pc.gpu_model + "\" (known: " +
                                    known_mig_families() + ")");
    }
    if (pc.mig_default_profile.empty())
      error(path + ".mig", "missing required field \"defaultProfile\" for mig.strategy " + strategy);
  }
  if (pc.mig_default_profile.empty()) return;
  const MigProfileEntry* profile = pool.find_profile(pc.mig_default_profile);
  if (!profile && pool.mig_table) {
    std::string valid;
    for (auto p : pool.mig_table->profiles) valid += (valid.empty() ? "" : ", ") + std::string(p);
    error(path + ".mig.defaultProfile", "invalid MIG profile \"" + pc.mig_default_profile + "\" for gpuModel \"" +
                                            pc.gpu_model + "\" (valid: " + valid + ")");
  } else if (!profile && !pc.gpu_model.empty() && pc.mig_strategy == MigStrategy::None) {
    error(path + ".mig.defaultProfile", "invalid MIG profile \"" + pc.mig_default_profile + "\": gpuModel \"" +
                                            pc.gpu_model + "\" has no MIG profile table");
  } else if (profile) {
    pool.default_profile = static_cast<int>(profile - pool.mig_profiles.data());
  }
}

void check_tenant_labels(const TenantConfig& tc, const std::string& path, const CompiledPolicy::CompileErrors& error) {
  for (const auto& [key, value] : tc.labels) {
    const std::string lp = child_path(path + ".labels", key);
    if (key == "gpu-admission.io/tenant") error(lp, "is set by gpu-admission itself to the tenant name");
    else if (!valid_label_key(key)) error(lp, "\"" + key + "\" is not a valid label key");
    else if (!valid_label_value(value)) error(lp, "\"" + value + "\" is not a valid label value");
  }
}

// The tenant's pools by name, and its default pool among them.
void resolve_tenant_pools(const TenantConfig& tc, const std::string& path, const StringMap<int>& pool_index,
                          size_t pool_count, Tenant& tenant, const CompiledPolicy::CompileErrors& error) {
  tenant.allowed_pools.assign(pool_count, false);
  for (size_t p = 0; p < tc.pools.size(); ++p) {
    auto it = pool_index.find(tc.pools[p]);
    if (it == pool_index.end()) error(index_path(path + ".pools", p), "unknown pool \"" + tc.pools[p] + "\"");
    else tenant.allowed_pools[it->second] = true;
  }
  if (tc.default_pool.empty()) return;
  auto it = pool_index.find(tc.default_pool);
  if (it == pool_index.end()) error(path + ".defaultPool", "unknown pool \"" + tc.default_pool + "\"");
  else if (!tenant.allowed_pools[it->second])
    error(path + ".defaultPool", "pool \"" + tc.default_pool + "\" is not in this tenant's pools");
  else tenant.default_pool = it->second;
}

}  // namespace

const MigProfileEntry* Pool::find_profile(std::string_view profile) const {
  for (const auto& p : mig_profiles)
    if (p.name == profile) return &p;
  return nullptr;
}

const MigProfileEntry* Pool::find_profile_by_resource(std::string_view resource) const {
  for (const auto& p : mig_profiles)
    if (p.resource == resource) return &p;
  return nullptr;
}

const WorkloadKindDef* CompiledPolicy::workload_kind(std::string_view group, std::string_view kind) const {
  for (const auto& def : workload_kinds_)
    if (def.group == group && def.kind == kind) return &def;
  return find_builtin_ml_kind(group, kind);
}

std::shared_ptr<const CompiledPolicy> CompiledPolicy::compile(const PolicyConfig& config, const SourceMap& marks,
                                                              Issues& issues, const CompileOptions& options) {
  auto errors = [&] {
    return std::count_if(issues.begin(), issues.end(), [](const Issue& i) { return i.severity == Issue::Severity::Error; });
  };
  const auto errors_before = errors();
  auto policy = std::shared_ptr<CompiledPolicy>(new CompiledPolicy());
  policy->config_ = config;
  policy->cap_ = options.enforcement;
  policy->hash_ = fnv1a_hex(policy_config_to_json(config).dump());
  const CompileErrors error{marks, issues};
  policy->compile_matching();
  policy->compile_workloads(error);
  const StringMap<int> pool_index = policy->compile_pools(error);
  policy->compile_tenants(pool_index, error);
  policy->compile_rollout(marks, issues);
  lint_policy(config, marks, issues, options.now);  // footgun warnings (policy/config/lint.cpp)
  if (errors() != errors_before) return nullptr;
  return policy;
}

// Exemptions, what counts as a GPU (resources and device classes, with the shortest name for the
// fast path), the GPU taints and host paths.
void CompiledPolicy::compile_matching() {
  const PolicyConfig& config = config_;
  for (size_t i = 0; i < config.exempt_namespaces.size(); ++i)
    exempt_namespaces_.add(config.exempt_namespaces[i], static_cast<int>(i));
  for (size_t i = 0; i < config.exempt_usernames.size(); ++i)
    exempt_usernames_.add(config.exempt_usernames[i], static_cast<int>(i));

  // The first kind named wins, as the sets were looked up in this order.
  auto add = [](auto& table, const std::string& name, GpuKind kind) {
    for (const auto& [known, _] : table)
      if (known == name) return;
    table.emplace_back(name, kind);
  };
  for (const auto& r : config.gpu_full) add(resource_kinds_, r, GpuKind::Full);
  for (const auto& r : config.gpu_shared) add(resource_kinds_, r, GpuKind::Shared);
  for (const auto& r : config.gpu_fractional) add(resource_kinds_, r, GpuKind::Fractional);
  size_t shortest = config.mig_prefix.empty() ? SIZE_MAX : config.mig_prefix.size();
  for (const auto& [name, _] : resource_kinds_) shortest = std::min(shortest, name.size());
  for (const auto& c : config.device_classes_full) add(device_class_kinds_, c, GpuKind::Full);
  for (const auto& c : config.device_classes_mig) add(device_class_kinds_, c, GpuKind::Mig);
  for (const auto& [name, _] : device_class_kinds_)
    shortest = std::min(shortest, kDeviceClassResourcePrefix.size() + name.size());
  shortest_gpu_resource_ = shortest;
  gpu_taints_ = to_taints(config.gpu_taints);
  gpu_host_paths_ = make_gpu_host_path_table(config.gpu_host_paths);
}

// spec.workloads: each kind's template paths, parsed once.
void CompiledPolicy::compile_workloads(const CompileErrors& error) {
  for (size_t i = 0; i < config_.workloads.size(); ++i) {
    const WorkloadConfig& wc = config_.workloads[i];
    WorkloadKindDef def{std::string(api_group_of(wc.api_version)), wc.kind, {}};
    for (size_t j = 0; j < wc.templates.size(); ++j) {
      TemplatePath path;
      if (auto err = parse_template_path(wc.templates[j], path))
        error(index_path(index_path("spec.workloads", i) + ".templates", j), "malformed template path " + *err);
      else def.templates.push_back(std::move(path));
    }
    workload_kinds_.push_back(std::move(def));
  }
}

// spec.pools: each pool with its MIG table; names and node selectors unique. Returns the index of
// each pool by name, for the tenants.
StringMap<int> CompiledPolicy::compile_pools(const CompileErrors& error) {
  StringMap<int> pool_index;
  for (size_t i = 0; i < config_.pools.size(); ++i) {
    const PoolConfig& pc = config_.pools[i];
    const std::string path = index_path("spec.pools", i);
    Pool pool = make_pool(pc, static_cast<int>(i), config_.mig_prefix);
    if (!pc.name.empty() && !pool_index.emplace(pc.name, pool.index).second)
      error(path + ".name", "duplicate pool name \"" + pc.name + "\"");
    for (size_t j = 0; j < i; ++j) {
      if (!pc.node_selector.empty() && config_.pools[j].node_selector == pc.node_selector)
        error(path + ".nodeSelector", "same nodeSelector as pool \"" + config_.pools[j].name + "\"");
    }
    check_pool_mig(pc, path, pool, error);
    pools_.push_back(std::move(pool));
  }
  return pool_index;
}

// spec.tenants: namespaces (an exact name belongs to one tenant), labels, pools and default pool.
void CompiledPolicy::compile_tenants(const StringMap<int>& pool_index, const CompileErrors& error) {
  StringMap<std::string> namespace_owner;  // exact namespace pattern -> tenant name
  for (size_t i = 0; i < config_.tenants.size(); ++i) {
    const TenantConfig& tc = config_.tenants[i];
    const std::string path = index_path("spec.tenants", i);
    Tenant tenant;
    tenant.index = static_cast<int>(i);
    tenant.name = tc.name;
    tenant.labels = tc.labels;
    tenant.max_gpus_per_pod = tc.max_gpus_per_pod;
    tenant.namespace_selector = tc.namespace_selector;
    if (tc.namespace_selector) selector_tenants_.push_back(tenant.index);
    if (!tc.name.empty() && !tenant_by_name_.emplace(tc.name, tenant.index).second)
      error(path + ".name", "duplicate tenant name \"" + tc.name + "\"");
    if (!tc.name.empty() && !valid_label_value(tc.name))
      error(path + ".name", "\"" + tc.name + "\" cannot be a label value (63 characters at most: letters, digits, '-', '_', '.')");
    for (size_t n = 0; n < tc.namespaces.size(); ++n) {
      const std::string& pattern = tc.namespaces[n];
      if (pattern.find('*') == std::string::npos) {
        auto [it, inserted] = namespace_owner.emplace(pattern, tc.name);
        if (!inserted)
          error(index_path(path + ".namespaces", n),
                "namespace \"" + pattern + "\" already belongs to tenant \"" + it->second + "\"");
      }
      tenant_namespaces_.add(pattern, tenant.index);
    }
    check_tenant_labels(tc, path, error);
    resolve_tenant_pools(tc, path, pool_index, config_.pools.size(), tenant, error);
    tenants_.push_back(std::move(tenant));
  }
}

const Tenant* CompiledPolicy::tenant_for_namespace(std::string_view ns, const NamespaceLabels* labels,
                                                   bool* unknown) const {
  if (unknown) *unknown = false;
  int owner = tenant_namespaces_.first_match(ns);
  if (!selector_tenants_.empty()) {
    const NamespaceLookup lookup = labels ? labels->lookup(ns) : NamespaceLookup{};
    for (int t : selector_tenants_) {
      if (owner != GlobIndex::kNoMatch && t >= owner) break;  // a glob of an earlier tenant wins
      if (lookup.unreadable) {
        // This selector tenant comes first if it matches, and nobody can tell whether it does.
        if (unknown) *unknown = true;
        return nullptr;
      }
      if (lookup.labels && tenants_[t].namespace_selector->matches(*lookup.labels)) return &tenants_[t];
    }
  }
  return owner == GlobIndex::kNoMatch ? nullptr : &tenants_[owner];
}

const Tenant* CompiledPolicy::tenant_by_name(std::string_view name) const {
  auto it = tenant_by_name_.find(name);
  return it == tenant_by_name_.end() ? nullptr : &tenants_[it->second];
}

CompiledPolicy::GpuKind CompiledPolicy::classify_device_class(std::string_view device_class) const {
  for (const auto& [name, kind] : device_class_kinds_)
    if (name == device_class) return kind;
  return GpuKind::NotGpu;
}

bool CompiledPolicy::imex_device_class(std::string_view device_class) const {
  return std::find(config_.device_classes_imex.begin(), config_.device_classes_imex.end(), device_class) !=
         config_.device_classes_imex.end();
}

bool CompiledPolicy::imex_device_class_allowed(std::string_view device_class) const {
  return std::find(config_.device_classes_imex_allowed.begin(), config_.device_classes_imex_allowed.end(),
                   device_class) != config_.device_classes_imex_allowed.end();
}

CompiledPolicy::GpuKind CompiledPolicy::classify_long_resource(std::string_view resource) const {
  for (const auto& [name, kind] : resource_kinds_)
    if (name == resource) return kind;
  if (resource.starts_with(kDeviceClassResourcePrefix)) {
    switch (classify_device_class(resource.substr(kDeviceClassResourcePrefix.size()))) {
      case GpuKind::Full: return GpuKind::DeviceClassFull;
      case GpuKind::Mig: return GpuKind::DeviceClassMig;
      default: return GpuKind::NotGpu;  // a class that hands out no GPUs (a NIC, an FPGA)
    }
  }
  if (!config_.mig_prefix.empty() && resource.starts_with(config_.mig_prefix)) return GpuKind::Mig;
  return GpuKind::NotGpu;
}

std::optional<int64_t> CompiledPolicy::max_gpus_for(const Tenant* tenant) const {
  if (tenant && tenant->max_gpus_per_pod) return tenant->max_gpus_per_pod;
  return config_.default_max_gpus_per_pod;
}

}  // namespace gpu_admission::policy
