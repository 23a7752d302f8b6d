// Mutations: each a small function that changes the pod view and records the same
// change as JSON Patch operations through a PodPatcher, so validation sees exactly the pod the
// patch produces. Mutations are idempotent: on an already mutated pod they change nothing.
#pragma once

#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/compiled_policy.h"
#include "policy/evaluation/patch.h"
#include "policy/dra/pod_claims.h"
#include "policy/views/pod_view.h"

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
  // Path writers: append the pod's pointer + `rest` + `key` escaped as one token, or the same
  // under container `c`.
  void append_pod_path(std::string& out, std::string_view rest, std::string_view key = {}) const;
  void append_container_path(std::string& out, const ContainerView& c, std::string_view rest,
                             std::string_view key = {}) const;
  void ensure_metadata();
  void add_object(std::string_view rest);  // adds {} at the pod's `rest`
  void add_string(std::string_view map, std::string_view key, std::string_view value);

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
  std::vector<std::string>& notices;  // Decision::notices
  std::pmr::memory_resource* scratch;  // the evaluation's arena: strings that live for one review
};

bool mutate_mig_resources(MutationContext& ctx);
bool mutate_tenant_labels(MutationContext& ctx);
bool mutate_pool_selector(MutationContext& ctx);
bool mutate_hide_gpus(MutationContext& ctx);

// JSON text of a quantity exactly as it was written (string or number).
void append_quantity_json(std::string& out, const ResourceQuantity& q);
std::string quantity_json(const ResourceQuantity& q);

}  // namespace gpu_admission::policy
