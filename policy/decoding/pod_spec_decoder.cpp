// The pod decoder's steps for the parts of a pod spec outside its containers: the pod's DRA
// claims, required node affinity, tolerations and hostPath volumes.
#include <string_view>

#include "policy/decoding/pod_decoder_steps.h"

namespace gpu_admission::policy::pod_decoding {
namespace {

using json::keys;

constexpr auto kPodClaimKeys = keys("name", "resourceClaimName", "resourceClaimTemplateName", "source");
constexpr auto kClaimSourceKeys = keys("resourceClaimName", "resourceClaimTemplateName");
constexpr auto kSchedulingGroupKeys = keys("podGroupName");
constexpr auto kAffinityKeys = keys("nodeAffinity");
constexpr auto kNodeAffinityKeys = keys("requiredDuringSchedulingIgnoredDuringExecution");
constexpr auto kNodeSelectorKeys = keys("nodeSelectorTerms");
constexpr auto kTermKeys = keys("matchExpressions");
constexpr auto kRequirementKeys = keys("key", "operator", "values");
constexpr auto kTolerationKeys = keys("key", "operator", "value", "effect");
constexpr auto kVolumeKeys = keys("name", "hostPath");
constexpr auto kHostPathKeys = keys("path");

bool requirement(json::Reader& r, od::object expr, NodeSelectorRequirement& req, const Loc& at) {
  return r.fields(expr, kRequirementKeys, at, [&](int key, od::value& value, const Loc& value_at) {
    if (key == 0) return r.as_string(value, req.key, value_at);
    if (key == 1) return r.as_string(value, req.op, value_at);
    return r.each_value(value, value_at, [&](od::value& entry, const Loc& item_at, uint32_t) {
      return r.as_string(entry, req.values.emplace_back(), item_at);
    });
  });
}

bool node_selector_terms(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  return r.each_object(v, at, [&](od::object term, const Loc& term_at, uint32_t) {
    NodeSelectorTerm& out = pod.required_node_affinity.emplace_back();
    return r.fields(term, kTermKeys, term_at, [&](int, od::value& exprs, const Loc& exprs_at) {
      return r.each_object(exprs, exprs_at, [&](od::object expr, const Loc& expr_at, uint32_t) {
        return requirement(r, expr, out.match_expressions.emplace_back(), expr_at);
      });
    });
  });
}
}  // namespace

// spec.resourceClaims: [{name, resourceClaimName | resourceClaimTemplateName}]; the 1.26-1.30
// shape nests the two under `source`. An entry with both shapes naming different claims is
// refused: an API server of 1.31 or later drops `source` and one before drops the flat names,
// so which claim the pod gets depends on the version.
bool decode_resource_claims(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  return r.each_object(v, at, [&](od::object entry, const Loc& item_at, uint32_t i) {
    PodResourceClaim& out = pod.resource_claims.emplace_back();
    out.index = i;
    std::string_view nested[2];
    bool has_source = false;
    const bool read = r.fields(entry, kPodClaimKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      if (key == 0) return r.as_string(value, out.name, value_at);
      if (key == 1) return r.as_string(value, out.claim_name, value_at);
      if (key == 2) return r.as_string(value, out.template_name, value_at);
      has_source = true;
      od::object source;
      if (!r.as_object(value, source, value_at)) return false;
      return r.fields(source, kClaimSourceKeys, value_at, [&](int k, od::value& name, const Loc& name_at) {
        return r.as_string(name, nested[k], name_at);
      });
    });
    if (!read || !has_source) return read;
    if ((!out.claim_name.empty() && out.claim_name != nested[0]) ||
        (!out.template_name.empty() && out.template_name != nested[1]))
      return r.fail(item_at,
                    "names a claim both directly and under source, differently (ambiguous between "
                    "Kubernetes versions)");
    out.claim_name = nested[0];
    out.template_name = nested[1];
    return true;
  });
}

// spec.schedulingGroup: {podGroupName} (Kubernetes 1.36+). 1.35's spec.workloadRef is not read:
// it points at a Workload, whose groups hold no claims.
bool decode_scheduling_group(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  od::object group;
  if (!r.as_object(v, group, at)) return false;
  return r.fields(group, kSchedulingGroupKeys, at, [&](int, od::value& value, const Loc& value_at) {
    return r.as_string(value, pod.pod_group, value_at);
  });
}

bool decode_affinity(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  od::object affinity;
  if (!r.as_object(v, affinity, at)) return false;
  return r.fields(affinity, kAffinityKeys, at, [&](int, od::value& node_value, const Loc& node_at) {
    od::object node;
    if (!r.as_object(node_value, node, node_at)) return false;
    return r.fields(node, kNodeAffinityKeys, node_at, [&](int, od::value& required_value, const Loc& required_at) {
      od::object required;
      if (!r.as_object(required_value, required, required_at)) return false;
      return r.fields(required, kNodeSelectorKeys, required_at, [&](int, od::value& terms, const Loc& terms_at) {
        return node_selector_terms(r, pod, terms, terms_at);
      });
    });
  });
}

bool decode_tolerations(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  return r.each_object(v, at, [&](od::object t, const Loc& item_at, uint32_t) {
    Toleration& tol = pod.tolerations.emplace_back();
    std::string_view* out[] = {&tol.key, &tol.op, &tol.value, &tol.effect};
    return r.fields(t, kTolerationKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      return r.as_string(value, *out[key], value_at);
    });
  });
}

bool decode_volumes(json::Reader& r, PodView& pod, od::value& v, const Loc& at) {
  return r.each_object(v, at, [&](od::object volume, const Loc& item_at, uint32_t i) {
    HostPathVolume out;
    out.index = i;
    bool host_path = false;
    const bool read = r.fields(volume, kVolumeKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      if (key == 0) return r.as_string(value, out.name, value_at);
      host_path = true;
      od::object hp;
      if (!r.as_object(value, hp, value_at)) return false;
      return r.fields(hp, kHostPathKeys, value_at,
                      [&](int, od::value& path, const Loc& path_at) { return r.as_string(path, out.path, path_at); });
    });
    if (read && host_path) pod.host_paths.push_back(out);
    return read;
  });
}
}  // namespace gpu_admission::policy::pod_decoding
