#include "webhook/audit/owner_index.h"

namespace gpu_admission::webhook::audit {
namespace {

bool read_ref(simdjson::dom::element ref, ObjectRef& out) {
  std::string_view api_version, kind, name, uid;
  if (ref["kind"].get(kind) || ref["name"].get(name) || ref["uid"].get(uid)) return false;
  if (kind.empty() || name.empty() || uid.empty()) return false;
  if (ref["apiVersion"].get(api_version)) api_version = {};
  out = {std::string(api_version), std::string(kind), std::string(name), std::string(uid)};
  return true;
}

}  // namespace

bool read_controller(simdjson::dom::element object, ObjectRef& out) {
  simdjson::dom::array refs;
  if (object["metadata"]["ownerReferences"].get(refs)) return false;
  bool found_first = false;
  ObjectRef first;
  for (auto ref : refs) {
    bool controller = false;
    if (!ref["controller"].get(controller) && controller && read_ref(ref, out)) return true;
    if (!found_first) found_first = read_ref(ref, first);
  }
  if (found_first) out = std::move(first);
  return found_first;
}

namespace {

std::string link_key(std::string_view namespace_name, std::string_view uid) {
  std::string key(namespace_name);
  key += '/';
  key += uid;
  return key;
}

}  // namespace

void OwnerIndex::add(std::string_view namespace_name, std::string_view uid, ObjectRef owner) {
  if (uid.empty() || owner.uid == uid) return;
  controller_of_.insert_or_assign(link_key(namespace_name, uid), std::move(owner));
}

const ObjectRef& OwnerIndex::top(std::string_view namespace_name, const ObjectRef& start) const {
  const ObjectRef* at = &start;
  for (int depth = 0; depth < kMaxOwnerDepth && !at->uid.empty(); ++depth) {
    auto it = controller_of_.find(link_key(namespace_name, at->uid));
    if (it == controller_of_.end()) break;
    at = &it->second;
  }
  return *at;
}

}  // namespace gpu_admission::webhook::audit
