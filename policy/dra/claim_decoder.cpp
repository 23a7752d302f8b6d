// ResourceClaim / ResourceClaimTemplate decoding; see claim_decoder.h. Field paths and
// typed getters come from policy/decoding/dom_reader.h, shared with the pod decoder.
#include "policy/dra/claim_decoder.h"

#include "policy/base/quoted_value.h"
#include "policy/dra/claim_gpus.h"
#include "policy/decoding/dom_reader.h"

#include <string>

namespace gpu_admission::policy {
namespace {

using dom::array;
using dom::element;
using dom::element_type;
using dom::Loc;
using dom::object;

enum class Shape : uint8_t { Exactly, Flat };  // v1 / v1beta2; v1beta1

class Decoder : public dom::Reader {
 public:
  Decoder(ClaimView& claim, Shape shape) : claim_(claim), shape_(shape) {}

  // selectors[j].cel.expression of a request or subrequest.
  bool selectors(object obj, DeviceSubrequest& out, const Loc& at) {
    return each_object(obj, "selectors", at, [&](object selector, const Loc& item_at, uint32_t) {
      Loc cel_at = item_at.child("cel");
      object cel;
      if (!child_object(selector, "cel", cel, cel_at)) return !error;
      std::string_view expression;
      element e;
      if (!get(cel, "expression", e)) return true;
      if (!as_string(e, expression, cel_at.child("expression"))) return false;
      out.selectors.push_back(expression);
      return true;
    });
  }

  // tolerations[j]: key, operator, value, effect. tolerationSeconds is not read: it only shortens
  // how long a NoExecute taint is tolerated.
  bool tolerations(object obj, DeviceSubrequest& out, const Loc& at) {
    return each_object(obj, "tolerations", at, [&](object t, const Loc& item_at, uint32_t) {
      Toleration& tol = out.tolerations.emplace_back();
      return optional_string(t, "key", tol.key, item_at) && optional_string(t, "operator", tol.op, item_at) &&
             optional_string(t, "value", tol.value, item_at) && optional_string(t, "effect", tol.effect, item_at);
    });
  }

  bool allocation(object obj, DeviceSubrequest& out, const Loc& at) {
    std::string_view mode;
    if (!optional_string(obj, "allocationMode", mode, at)) return false;
    if (mode == "All") {
      out.mode = AllocationMode::All;
    } else if (mode.empty() || mode == "ExactCount") {
      out.mode = AllocationMode::ExactCount;
    } else {
      return fail(at.child("allocationMode"), "must be ExactCount or All");
    }
    element e;
    if (!get(obj, "count", e)) return true;
    if (e.type() != element_type::INT64 || e.get_int64().value_unsafe() < 1)
      return fail(at.child("count"), "must be an integer of at least 1");
    out.count = e.get_int64().value_unsafe();
    return true;
  }

  // capacity: {requests: {...}} (consumable capacity): any value there asks for a share of a
  // device, so only its presence and shape are read.
  bool capacity(object obj, DeviceSubrequest& out, const Loc& at) {
    Loc capacity_at = at.child("capacity");
    object capacity_obj;
    if (!child_object(obj, "capacity", capacity_obj, capacity_at)) return !error;
    out.capacity = true;
    element requests;
    if (get(capacity_obj, "requests", requests) && requests.type() != element_type::OBJECT)
      return fail(capacity_at.child("requests"), "must be an object");
    return true;
  }

  // The device fields of `exactly`, a flat v1beta1 request, or a firstAvailable subrequest
  // (which has no adminAccess).
  bool device_fields(object obj, DeviceSubrequest& out, const Loc& at, bool admin_access) {
    element e;
    if (!get(obj, "deviceClassName", e)) return fail(at.child("deviceClassName"), "is required");
    if (!as_string(e, out.device_class, at.child("deviceClassName"))) return false;
    if (out.device_class.empty()) return fail(at.child("deviceClassName"), "must not be empty");
    if (admin_access && !optional_bool(obj, "adminAccess", out.admin_access, at)) return false;
    if (!allocation(obj, out, at) || !selectors(obj, out, at) || !capacity(obj, out, at) || !tolerations(obj, out, at))
      return false;
    find_pinned_mig_profiles(out);
    return true;
  }

  bool first_available(element v, DeviceRequestView& out, const Loc& at) {
    out.first_available = true;
    array list;
    if (!as_array(v, list, at)) return false;
    size_t j = 0;
    for (element item : list) {
      Loc item_at = at.item(j++);
      object sub_obj;
      if (!as_object(item, sub_obj, item_at)) return false;
      DeviceSubrequest& sub = out.alternatives.emplace_back();
      if (!optional_string(sub_obj, "name", sub.name, item_at) || !device_fields(sub_obj, sub, item_at, false))
        return false;
    }
    if (out.alternatives.empty()) return fail(at, "must not be empty");
    return true;
  }

  // v1 / v1beta2: exactly one of `exactly` and `firstAvailable`.
  bool request_exactly(object req, DeviceRequestView& out, const Loc& at) {
    element exactly, alternatives;
    const bool has_exactly = get(req, "exactly", exactly);
    const bool has_alternatives = get(req, "firstAvailable", alternatives);
    if (has_exactly == has_alternatives) return fail(at, "must set exactly one of exactly and firstAvailable");
    if (has_alternatives) return first_available(alternatives, out, at.child("firstAvailable"));
    Loc exactly_at = at.child("exactly");
    object exactly_obj;
    if (!as_object(exactly, exactly_obj, exactly_at)) return false;
    return device_fields(exactly_obj, out.alternatives.emplace_back(), exactly_at, true);
  }

  // v1beta1: the device fields flat on the request, or `firstAvailable` (then no class).
  bool request_flat(object req, DeviceRequestView& out, const Loc& at) {
    element alternatives, device_class;
    if (!get(req, "firstAvailable", alternatives)) return device_fields(req, out.alternatives.emplace_back(), at, true);
    if (get(req, "deviceClassName", device_class) &&
        !(device_class.type() == element_type::STRING && device_class.get_string().value_unsafe().empty()))
      return fail(at, "must set exactly one of deviceClassName and firstAvailable");
    return first_available(alternatives, out, at.child("firstAvailable"));
  }

  bool requests(object devices, const Loc& devices_at) {
    return each_object(devices, "requests", devices_at, [&](object req, const Loc& item_at, uint32_t i) {
      DeviceRequestView& out = claim_.requests.emplace_back();
      out.index = i;
      if (!optional_string(req, "name", out.name, item_at)) return false;
      return shape_ == Shape::Exactly ? request_exactly(req, out, item_at) : request_flat(req, out, item_at);
    });
  }


  // opaque.parameters of the NVIDIA GPU driver: kind and sharing.strategy.
  bool nvidia_parameters(object opaque, DriverConfigView& out, const Loc& opaque_at) {
    Loc params_at = opaque_at.child("parameters");
    object params, sharing;
    if (!child_object(opaque, "parameters", params, params_at)) return !error;
    if (!optional_string(params, "kind", out.parameters_kind, params_at)) return false;
    Loc sharing_at = params_at.child("sharing");
    if (!child_object(params, "sharing", sharing, sharing_at)) return !error;
    return optional_string(sharing, "strategy", out.sharing_strategy, sharing_at);
  }

  // opaque.parameters of the compute-domain driver: kind and allocationMode.
  bool compute_domain_parameters(object opaque, DriverConfigView& out, const Loc& opaque_at) {
    Loc params_at = opaque_at.child("parameters");
    object params;
    if (!child_object(opaque, "parameters", params, params_at)) return !error;
    return optional_string(params, "kind", out.parameters_kind, params_at) &&
           optional_string(params, "allocationMode", out.allocation_mode, params_at);
  }

  bool config_entry(object cfg, uint32_t index, const Loc& at) {
    std::vector<std::string_view> names;
    element v;
    if (get(cfg, "requests", v)) {
      Loc names_at = at.child("requests");
      array list;
      if (!as_array(v, list, names_at)) return false;
      size_t j = 0;
      for (element name : list) {
        std::string_view s;
        if (!as_string(name, s, names_at.item(j++))) return false;
        names.push_back(s);
      }
    }
    Loc opaque_at = at.child("opaque");
    object opaque;
    if (!child_object(cfg, "opaque", opaque, opaque_at)) return !error;
    DriverConfigView& out = claim_.configs.emplace_back();
    out.index = index;
    out.requests = std::move(names);
    if (!optional_string(opaque, "driver", out.driver, opaque_at)) return false;
    if (out.driver == kNvidiaGpuDriver) return nvidia_parameters(opaque, out, opaque_at);
    if (out.driver == kComputeDomainDriver) return compute_domain_parameters(opaque, out, opaque_at);
    return true;
  }

  bool configs(object devices, const Loc& devices_at) {
    return each_object(devices, "config", devices_at,
                       [&](object cfg, const Loc& item_at, uint32_t i) { return config_entry(cfg, i, item_at); });
  }


  // spec.devices (claim) or spec.spec.devices (template).
  bool devices(object root_obj, const Loc& root) {
    Loc spec_at = root.child("spec");
    object spec;
    if (!child_object(root_obj, "spec", spec, spec_at)) return !error;
    Loc inner_at = spec_at.child("spec");
    const Loc* parent_at = &spec_at;
    if (claim_.kind == ClaimKind::Template) {
      object inner;
      if (!child_object(spec, "spec", inner, inner_at)) return !error;
      spec = inner;
      parent_at = &inner_at;
    }
    Loc devices_at = parent_at->child("devices");
    object devices_obj;
    if (!child_object(spec, "devices", devices_obj, devices_at)) return !error;
    return requests(devices_obj, devices_at) && configs(devices_obj, devices_at);
  }

  bool metadata(object root_obj, const Loc& root) {
    Loc at = root.child("metadata");
    object md;
    if (!child_object(root_obj, "metadata", md, at)) return !error;
    return optional_string(md, "name", claim_.name, at) && optional_string(md, "namespace", claim_.namespace_name, at);
  }

 private:
  ClaimView& claim_;
  Shape shape_;
};

std::optional<Shape> shape_of(std::string_view api_version) {
  if (api_version == "resource.k8s.io/v1" || api_version == "resource.k8s.io/v1beta2") return Shape::Exactly;
  if (api_version == "resource.k8s.io/v1beta1") return Shape::Flat;
  return std::nullopt;
}

}  // namespace

bool is_claim_kind(std::string_view kind, ClaimKind* out) {
  ClaimKind k;
  if (kind == "ResourceClaim") {
    k = ClaimKind::Claim;
  } else if (kind == "ResourceClaimTemplate") {
    k = ClaimKind::Template;
  } else {
    return false;
  }
  if (out) *out = k;
  return true;
}

std::string_view claim_kind_name(ClaimKind kind) {
  return kind == ClaimKind::Template ? "ResourceClaimTemplate" : "ResourceClaim";
}

bool claim_api_version_supported(std::string_view api_version) { return shape_of(api_version).has_value(); }

std::optional<DecodeError> decode_claim_as(element object_el, ClaimKind kind, ClaimView& out, bool check_duplicates,
                                           std::string_view assumed_api_version) {
  out.clear();
  out.kind = kind;
  object obj;
  if (auto err = dom::open_api_object(object_el, check_duplicates, assumed_api_version, obj, out.api_version))
    return err;
  auto shape = shape_of(out.api_version);
  if (!shape)
    return DecodeError{"apiVersion", quoted(out.api_version) +
                                         " is not a served resource.k8s.io version (v1, v1beta2 or v1beta1)"};
  Decoder decoder(out, *shape);
  Loc root;
  if (decoder.metadata(obj, root)) decoder.devices(obj, root);
  return decoder.error;
}

std::optional<DecodeError> decode_claim(element object_el, ClaimView& out, bool check_duplicates) {
  out.clear();
  if (object_el.type() != element_type::OBJECT) return DecodeError{"", "the object must be a JSON object"};
  auto kind_r = object_el.get_object().value_unsafe().at_key("kind");
  if (kind_r.error() || kind_r.value_unsafe().type() != element_type::STRING)
    return DecodeError{"kind", "missing or not a string"};
  std::string_view kind_text = kind_r.value_unsafe().get_string().value_unsafe();
  ClaimKind kind;
  if (!is_claim_kind(kind_text, &kind))
    return DecodeError{"kind", quoted(kind_text) + " is not a ResourceClaim or ResourceClaimTemplate"};
  return decode_claim_as(object_el, kind, out, check_duplicates);
}

}  // namespace gpu_admission::policy
