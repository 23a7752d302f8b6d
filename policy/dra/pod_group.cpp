// PodGroup decoding; see pod_group.h. Field paths and typed getters come from
// policy/decoding/dom_reader.h, as for claims.
#include "policy/dra/pod_group.h"

#include <array>

#include "policy/base/quoted_value.h"
#include "policy/decoding/dom_reader.h"

namespace gpu_admission::policy {
namespace {

using dom::element;
using dom::element_type;
using dom::Loc;
using dom::object;

// Newest first: the preference of cluster state's discovery.
constexpr std::array<std::string_view, 3> kVersions = {"v1beta1", "v1alpha3", "v1alpha2"};

class Decoder : public dom::Reader {
 public:
  explicit Decoder(PodGroupView& group) : group_(group) {}

  bool metadata(object root, const Loc& at_root) {
    Loc at = at_root.child("metadata");
    object md;
    if (!child_object(root, "metadata", md, at)) return !error;
    return optional_string(md, "name", group_.name, at) && optional_string(md, "namespace", group_.namespace_name, at) &&
           optional_string(md, "uid", group_.uid, at);
  }

  bool spec(object root, const Loc& at_root) {
    Loc at = at_root.child("spec");
    object spec_obj;
    if (!child_object(root, "spec", spec_obj, at)) return !error;
    return each_object(spec_obj, "resourceClaims", at, [&](object entry, const Loc& item_at, uint32_t i) {
      PodResourceClaim& out = group_.resource_claims.emplace_back();
      out.index = i;
      return optional_string(entry, "name", out.name, item_at) &&
             optional_string(entry, "resourceClaimName", out.claim_name, item_at) &&
             optional_string(entry, "resourceClaimTemplateName", out.template_name, item_at);
    });
  }

  bool status(object root, const Loc& at_root) {
    Loc at = at_root.child("status");
    object status_obj;
    if (!child_object(root, "status", status_obj, at)) return !error;
    return each_object(status_obj, "resourceClaimStatuses", at, [&](object entry, const Loc& item_at, uint32_t) {
      std::string_view name, claim;
      if (!optional_string(entry, "name", name, item_at) || !optional_string(entry, "resourceClaimName", claim, item_at))
        return false;
      if (!name.empty() && !claim.empty()) group_.claim_statuses.emplace_back(name, claim);
      return true;
    });
  }

 private:
  PodGroupView& group_;
};

}  // namespace

void PodGroupView::clear() {
  api_version = name = namespace_name = uid = {};
  resource_claims.clear();
  claim_statuses.clear();
}

const PodResourceClaim* PodGroupView::entry_for_claim(std::string_view claim_name) const {
  if (claim_name.empty()) return nullptr;
  for (const auto& entry : resource_claims)
    if (entry.template_name.empty() && entry.claim_name == claim_name) return &entry;
  for (const auto& [entry_name, made] : claim_statuses) {
    if (made != claim_name) continue;
    for (const auto& entry : resource_claims)
      if (entry.name == entry_name && !entry.template_name.empty()) return &entry;
  }
  return nullptr;
}

bool is_pod_group_kind(std::string_view group, std::string_view kind) {
  return group == kSchedulingGroup && kind == kPodGroupKind;
}

bool pod_group_api_version_supported(std::string_view api_version) {
  if (!api_version.starts_with(kSchedulingGroup) || api_version.size() <= kSchedulingGroup.size() ||
      api_version[kSchedulingGroup.size()] != '/')
    return false;
  const std::string_view version = api_version.substr(kSchedulingGroup.size() + 1);
  for (std::string_view v : kVersions)
    if (v == version) return true;
  return false;
}

std::string_view pick_pod_group_version(const std::vector<std::string_view>& served) {
  for (std::string_view v : kVersions)
    for (std::string_view s : served)
      if (s == v) return v;
  return {};
}

std::optional<DecodeError> decode_pod_group(element object_el, PodGroupView& out, bool check_duplicates,
                                            std::string_view assumed_api_version) {
  out.clear();
  object obj;
  if (auto err = dom::open_api_object(object_el, check_duplicates, assumed_api_version, obj, out.api_version))
    return err;
  if (!pod_group_api_version_supported(out.api_version))
    return DecodeError{"apiVersion", quoted(out.api_version) +
                                         " does not serve PodGroups (scheduling.k8s.io/v1beta1, v1alpha3 or v1alpha2)"};
  Decoder decoder(out);
  Loc root;
  if (decoder.metadata(obj, root) && decoder.spec(obj, root)) decoder.status(obj, root);
  return decoder.error;
}

}  // namespace gpu_admission::policy
