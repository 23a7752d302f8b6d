// Decoding of a claim's allocation, reservations and owner (see claim_status.h).
#include "policy/dra/claim_status.h"

#include "policy/decoding/dom_reader.h"

namespace gpu_admission::policy {
namespace {

using dom::element;
using dom::Loc;
using dom::object;

class StatusDecoder : public dom::Reader {
 public:
  explicit StatusDecoder(ClaimStatusView& out) : out_(out) {}

  bool metadata(object root, const Loc& at) {
    const Loc meta_at = at.child("metadata");
    object meta;
    if (!child_object(root, "metadata", meta, meta_at)) return !error;
    if (!optional_string(meta, "uid", out_.uid, meta_at)) return false;
    const Loc annotations_at = meta_at.child("annotations");
    object annotations;
    if (child_object(meta, "annotations", annotations, annotations_at)) {
      if (!optional_string(annotations, kPodClaimNameAnnotation, out_.pod_claim_name, annotations_at)) return false;
    } else if (error) {
      return false;
    }
    return each_object(meta, "ownerReferences", meta_at, [&](object ref, const Loc& ref_at, uint32_t) {
      std::string_view api_version, kind, name, uid;
      bool controller = false;
      if (!optional_string(ref, "apiVersion", api_version, ref_at) || !optional_string(ref, "kind", kind, ref_at) ||
          !optional_string(ref, "name", name, ref_at) || !optional_string(ref, "uid", uid, ref_at) ||
          !optional_bool(ref, "controller", controller, ref_at))
        return false;
      if (controller && kind == "Pod" && api_version == "v1") out_.owner_pod_uid = uid;
      return true;
    });
  }

  bool status(object root, const Loc& at) {
    const Loc status_at = at.child("status");
    object status;
    if (!child_object(root, "status", status, status_at)) return !error;
    element allocation;
    out_.allocated = get(status, "allocation", allocation);
    if (out_.allocated && allocation.type() != dom::element_type::OBJECT)
      return fail(status_at.child("allocation"), "must be an object");
    return each_object(status, "reservedFor", status_at, [&](object ref, const Loc& ref_at, uint32_t i) {
      ClaimConsumer& c = out_.reserved_for.emplace_back();
      c.index = i;
      return optional_string(ref, "apiGroup", c.api_group, ref_at) &&
             optional_string(ref, "resource", c.resource, ref_at) && optional_string(ref, "name", c.name, ref_at) &&
             optional_string(ref, "uid", c.uid, ref_at);
    });
  }

 private:
  ClaimStatusView& out_;
};

}  // namespace

void ClaimStatusView::clear() { *this = ClaimStatusView{}; }

bool ClaimStatusView::reserves(const ClaimConsumer& consumer) const {
  for (const auto& c : reserved_for) {
    if (c.api_group != consumer.api_group || c.resource != consumer.resource) continue;
    if (!c.uid.empty() && !consumer.uid.empty() ? c.uid == consumer.uid : c.name == consumer.name) return true;
  }
  return false;
}

std::optional<DecodeError> decode_claim_status(simdjson::dom::element object_el, ClaimStatusView& out) {
  out.clear();
  StatusDecoder decoder(out);
  object root;
  if (!decoder.as_object(object_el, root, Loc{})) return decoder.error;
  if (!decoder.metadata(root, Loc{}) || !decoder.status(root, Loc{})) return decoder.error;
  return std::nullopt;
}

}  // namespace gpu_admission::policy
