// Mutations (SPEC 4): each a small function that changes the pod view and records the same
// change as JSON Patch operations through a PodPatcher, so validation sees exactly the pod the
// patch produces. Mutations are idempotent: on an already mutated pod they change nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/compiled_policy.h"
#include "policy/patch.h"
#include "policy/pod_claims.h"
#include "policy/pod_view.h"

namespace gpu_admission::policy {

// Applies changes to a PodView and appends the matching patch operations, adding missing
// parent objects (/metadata, /metadata/labels, /spec/nodeSelector, ...) first.
class PodPatcher {
 public:
  PodPatcher(PodView& pod, Patch& patch);

  // Values added to the view must outlive it: pass strings owned by the compiled policy.
  void add_label(std::string_view key, std::string_view value);
  void add_node_selector(std::string_view key, std::string_view value);
  // Annotations are not read back by rules, so only the patch gets the value.
  void set_annotation(std::string_view key, std::string_view value);
  // Renames resource `q` of container `c` (in requests or limits) to `new_name`, same quantity.
  void rename_resource(ContainerView& c, bool limits, ResourceQuantity& q, std::string_view new_name);
  // Removes entry `index` of the list and sets `into` (another entry of the same list) to `total`.
  void merge_resource(ContainerView& c, bool limits, size_t index, ResourceQuantity& into, int64_t total);
  // Appends env `name`=`value` to container `c` (creating its env list when it has none).
  void add_env(ContainerView& c, std::string_view name, std::string_view value);

 private:
  std::string pod_path(std::string_view rest) const;
  std::string container_path(const ContainerView& c) const;
  std::string resource_list_path(const ContainerView& c, bool limits) const;
  void ensure_metadata();
  void add(std::string path, std::string value_json);

  PodView& pod_;
  Patch& patch_;
  std::string_view base_;
};

struct MutationContext {
  const CompiledPolicy& policy;
  PodView& pod;
  const Tenant* tenant;
  const Pool* pool;
  bool gpu_pod;
  bool pool_named;  // the pod names its pool itself
  const PodClaims& claims;  // the pod's DRA claims, resolved
  PodPatcher& patcher;
};

bool mutate_mig_resources(MutationContext& ctx);
bool mutate_tenant_labels(MutationContext& ctx);
bool mutate_pool_selector(MutationContext& ctx);
bool mutate_hide_gpus(MutationContext& ctx);

// JSON text of a quantity exactly as it was written (string or number).
std::string quantity_json(const ResourceQuantity& q);

}  // namespace gpu_admission::policy
