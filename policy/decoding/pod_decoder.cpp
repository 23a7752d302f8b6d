// The pod decoder: one forward On-Demand pass over a Pod, a workload or a pod template (see
// policy/decoding/json_reader.h for what is checked on the way). This file walks the object, its
// metadata and its pod spec, and finds a workload's template; the steps for containers and for
// the rest of the spec are in container_decoder.cpp and pod_spec_decoder.cpp.
#include "policy/decoding/pod_decoder.h"

#include <algorithm>
#include <string>

#include "policy/decoding/json_reader.h"
#include "policy/decoding/pod_decoder_steps.h"
#include "policy/base/quoted_value.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

namespace od = simdjson::ondemand;
using json::keys;

constexpr auto kObjectKeys = keys("apiVersion", "metadata", "spec");
constexpr auto kKindKey = keys("kind");
constexpr auto kMetadataKeys = keys("name", "generateName", "namespace", "labels", "annotations");
constexpr auto kPodKeys = keys("metadata", "spec");
constexpr auto kSpecKeys = keys("hostPID", "hostIPC", "hostNetwork", "nodeSelector", "affinity", "tolerations",
                                "volumes", "resourceClaims", "initContainers", "containers", "ephemeralContainers",
                                "runtimeClassName", "schedulingGroup");

class Decoder : public json::Reader {
 public:
  explicit Decoder(PodView& pod) : pod_(pod) {}

  // metadata: the object's identity (when `identity`) and the pod's labels and annotations
  // (when `pod_metadata`): for a Pod both come from the same object.
  bool metadata(od::value& v, const Loc& at, bool identity, bool pod_metadata) {
    od::object md;
    if (!as_object(v, md, at)) return false;
    if (pod_metadata) pod_.has_metadata = true;
    return fields(md, kMetadataKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: return !identity || as_string(value, pod_.name, value_at);
        case 1: return !identity || as_string(value, pod_.generate_name, value_at);
        case 2: return !identity || as_string(value, pod_.namespace_name, value_at);
        case 3:
          if (!pod_metadata) return true;
          pod_.has_labels = true;
          return string_map(value, pod_.labels, value_at);
        default:
          if (!pod_metadata) return true;
          pod_.has_annotations = true;
          return string_map(value, pod_.annotations, value_at, decoded_annotation);
      }
    });
  }

  // A pod or pod template: metadata and spec.
  bool pod(od::object object, const Loc& at) {
    return fields(object, kPodKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      return key == 0 ? metadata(value, value_at, false, true) : spec(value, value_at);
    });
  }

  bool spec(od::value& v, const Loc& at) {
    od::object spec;
    if (!as_object(v, spec, at)) return false;
    return spec_fields(spec, at);
  }

  // The fields of a pod spec: a pod's or template's `spec`, or a template that is a spec itself.
  bool spec_fields(od::object spec, const Loc& at) {
    pod_.has_spec = true;
    const bool read = fields(spec, kSpecKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: return as_bool(value, pod_.host_pid, value_at);
        case 1: return as_bool(value, pod_.host_ipc, value_at);
        case 2: return as_bool(value, pod_.host_network, value_at);
        case 3: pod_.has_node_selector = true; return string_map(value, pod_.node_selector, value_at);
        case 4: return pod_decoding::decode_affinity(*this, pod_, value, value_at);
        case 5: return pod_decoding::decode_tolerations(*this, pod_, value, value_at);
        case 6: return pod_decoding::decode_volumes(*this, pod_, value, value_at);
        case 7: return pod_decoding::decode_resource_claims(*this, pod_, value, value_at);
        case 8: return containers(value, ContainerKind::Init, value_at);
        case 9: return containers(value, ContainerKind::App, value_at);
        case 10: return containers(value, ContainerKind::Ephemeral, value_at);
        case 11: return as_string(value, pod_.runtime_class_name, value_at);
        default: return pod_decoding::decode_scheduling_group(*this, pod_, value, value_at);
      }
    });
    if (read) order_containers();
    return read;
  }

 private:
  bool containers(od::value& v, ContainerKind kind, const Loc& at) {
    return each_value(v, at, [&](od::value& value, const Loc& item_at, uint32_t i) {
      return pod_decoding::decode_container(*this, pod_, value, kind, i, item_at);
    });
  }

  // PodView lists init, then app, then ephemeral containers, whatever order the lists came in.
  void order_containers() {
    auto& list = pod_.containers;
    auto next = list.begin();
    for (ContainerKind kind : {ContainerKind::Init, ContainerKind::App, ContainerKind::Ephemeral}) {
      auto first = std::find_if(next, list.end(), [&](const ContainerView& c) { return c.kind == kind; });
      auto last = std::find_if(first, list.end(), [&](const ContainerView& c) { return c.kind != kind; });
      next = std::rotate(next, first, last);
    }
  }

  PodView& pod_;
};

// Where the pod template of a built-in workload kind is, and what is missing when it is not.
struct TemplateSearch {
  const std::string_view* steps;
  size_t count;
  std::string missing;  // the path up to the first step that is absent or not an object
  bool found = false;
};

constexpr std::string_view kTemplateSteps[] = {"spec", "template"};
constexpr std::string_view kCronJobSteps[] = {"spec", "jobTemplate", "spec", "template"};

// `v` is the value at search.steps[step]; descends to the template and decodes it.
bool descend(Decoder& d, od::value& v, TemplateSearch& search, size_t step, const Loc& at) {
  if (!search.missing.empty()) search.missing += '.';
  search.missing += search.steps[step];
  od::json_type type;
  if (auto code = v.type().get(type)) return d.fail(at, code);
  if (step + 1 == search.count) {
    if (type != od::json_type::object) return d.fail(at, "must be an object");
    search.found = true;
    od::object object;
    if (auto code = v.get_object().get(object)) return d.fail(at, code);
    return d.pod(object, at);
  }
  if (type != od::json_type::object) {
    search.missing += '.';
    search.missing += search.steps[step + 1];
    return true;
  }
  od::object object;
  if (auto code = v.get_object().get(object)) return d.fail(at, code);
  const json::KeyTable<1> next{{search.steps[step + 1]}};
  bool seen = false;
  const bool read = d.fields(object, next, at, [&](int, od::value& value, const Loc& value_at) {
    seen = true;
    return descend(d, value, search, step + 1, value_at);
  });
  if (read && !seen) {
    search.missing += '.';
    search.missing += search.steps[step + 1];
  }
  return read;
}

std::optional<DecodeError> template_missing(WorkloadKind kind, const TemplateSearch& search) {
  // A ReplicationController may omit its template; there is nothing to evaluate then.
  if (kind == WorkloadKind::ReplicationController && search.missing == "spec.template") return std::nullopt;
  return DecodeError{search.missing,
                     "missing or not an object: a " + std::string(workload_kind_name(kind)) + " needs a pod template"};
}

std::optional<DecodeError> not_an_object() { return DecodeError{"", "the object must be a JSON object"}; }

// The top level of an object: apiVersion, metadata and the pod (a Pod) or its template.
// The fields of an object of `kind`: apiVersion, metadata and the pod (a Pod) or its template.
std::optional<DecodeError> decode_fields(od::object object, WorkloadKind kind, PodView& pod) {
  Decoder d(pod);
  const Loc root;
  const bool is_pod = kind == WorkloadKind::Pod;
  TemplateSearch search{kind == WorkloadKind::CronJob ? kCronJobSteps : kTemplateSteps,
                        kind == WorkloadKind::CronJob ? std::size(kCronJobSteps) : std::size(kTemplateSteps), {}, false};
  const bool read = d.fields(object, kObjectKeys, root, [&](int key, od::value& value, const Loc& value_at) {
    if (key == 0) return d.string_if_string(value, pod.api_version, value_at);
    if (key == 1) return d.metadata(value, value_at, true, is_pod);
    if (is_pod) return d.spec(value, value_at);
    return descend(d, value, search, 0, value_at);
  });
  if (!read) return d.error;
  if (!is_pod && !search.found) {
    if (search.missing.empty()) search.missing = "spec";
    return template_missing(kind, search);
  }
  return std::nullopt;
}

// A whole document holding one object of `kind`.
std::optional<DecodeError> decode_object(od::document& doc, WorkloadKind kind, PodView& pod) {
  od::object object;
  od::json_type type;
  if (auto code = doc.type().get(type)) return invalid_json(code);
  if (type != od::json_type::object) return not_an_object();
  if (auto code = doc.get_object().get(object)) return invalid_json(code);
  if (auto error = decode_fields(object, kind, pod)) return error;
  if (!doc.current_location().error()) return invalid_json("content after the object");
  return std::nullopt;
}

}  // namespace

std::optional<WorkloadKind> workload_kind_from(std::string_view kind) {
  static constexpr std::pair<std::string_view, WorkloadKind> kKinds[] = {
      {"Pod", WorkloadKind::Pod},
      {"Deployment", WorkloadKind::Deployment},
      {"StatefulSet", WorkloadKind::StatefulSet},
      {"DaemonSet", WorkloadKind::DaemonSet},
      {"ReplicaSet", WorkloadKind::ReplicaSet},
      {"ReplicationController", WorkloadKind::ReplicationController},
      {"Job", WorkloadKind::Job},
      {"CronJob", WorkloadKind::CronJob},
  };
  for (const auto& [name, value] : kKinds)
    if (name == kind) return value;
  return std::nullopt;
}

std::optional<DecodeError> decode_pod_json(std::string_view json, bool padded, WorkloadKind kind, PodView& pod,
                                           PodDocument& document, std::span<const std::string> policy_env_vars) {
  pod.clear();
  pod.workload = kind;
  pod.policy_env_vars = policy_env_vars;
  od::document doc;
  if (auto code = json::iterate(document.parser, json, padded, document.copy).get(doc))
    return invalid_json(code);
  return decode_object(doc, kind, pod);
}

std::optional<DecodeError> decode_pod_value(simdjson::ondemand::value& value, WorkloadKind kind, PodView& pod,
                                            std::span<const std::string> policy_env_vars) {
  pod.clear();
  pod.workload = kind;
  pod.policy_env_vars = policy_env_vars;
  if (json::Reader::first_char(value) != '{') return not_an_object();
  od::object object;
  if (auto code = value.get_object().get(object)) return invalid_json(code);
  return decode_fields(object, kind, pod);
}

namespace {

// Starts reading `json` into `doc` and finds its root object.
std::optional<DecodeError> open_object(std::string_view json, bool padded, PodDocument& document, od::document& doc,
                                       od::object& object) {
  if (auto code = json::iterate(document.parser, json, padded, document.copy).get(doc)) return invalid_json(code);
  od::json_type type;
  if (doc.type().get(type) || type != od::json_type::object) return not_an_object();
  if (auto code = doc.get_object().get(object)) return invalid_json(code);
  return std::nullopt;
}

}  // namespace

std::optional<DecodeError> decode_pod_json(std::string_view json, bool padded, PodView& pod, PodDocument& document,
                                           std::span<const std::string> policy_env_vars) {
  // The kind first (it says where the pod is), then the object from the start.
  od::document doc;
  od::object object;
  if (auto error = open_object(json, padded, document, doc, object)) return error;
  json::Reader reader;
  std::string kind_text;
  bool has_kind = false;
  const bool read = reader.fields(object, kKindKey, Loc{}, [&](int, od::value& value, const Loc& at) {
    std::string_view text;
    if (!reader.as_string(value, text, at)) return false;
    kind_text = text;
    has_kind = true;
    return true;
  });
  if (!read) return reader.error;
  if (!has_kind) return DecodeError{"kind", "missing or not a string"};
  const auto kind = workload_kind_from(kind_text);
  if (!kind) return DecodeError{"kind", quoted(kind_text) + " is not a Pod or a workload with a pod template"};
  pod.clear();
  pod.workload = *kind;
  pod.policy_env_vars = policy_env_vars;
  doc.rewind();
  return decode_object(doc, *kind, pod);
}

std::optional<DecodeError> decode_identity(std::string_view json, bool padded, ObjectIdentity& out,
                                           PodDocument& document) {
  out = ObjectIdentity{};
  od::document doc;
  od::object object;
  if (auto error = open_object(json, padded, document, doc, object)) return error;
  PodView scratch;
  Decoder d(scratch);
  const bool read = d.fields(object, kObjectKeys, Loc{}, [&](int key, od::value& value, const Loc& at) {
    if (key == 0) return d.string_if_string(value, scratch.api_version, at);
    if (key == 1) return d.metadata(value, at, true, false);
    return true;
  });
  if (!read) return d.error;
  out.api_version = scratch.api_version;
  out.name = scratch.name;
  out.generate_name = scratch.generate_name;
  out.namespace_name = scratch.namespace_name;
  return std::nullopt;
}

std::optional<DecodeError> decode_pod_template(const ObjectIdentity& identity, std::string_view template_json,
                                               bool padded, std::string_view field_prefix, std::string_view pointer,
                                               bool pod_spec, PodView& pod, PodDocument& document,
                                               std::span<const std::string> policy_env_vars) {
  pod.clear();
  pod.policy_env_vars = policy_env_vars;
  pod.custom_template = true;
  pod.template_prefix = field_prefix;
  pod.template_pointer = pointer;
  pod.template_is_spec = pod_spec;
  pod.api_version = identity.api_version;
  pod.name = identity.name;
  pod.generate_name = identity.generate_name;
  pod.namespace_name = identity.namespace_name;
  const std::string_view shown = field_prefix.empty() ? field_prefix : field_prefix.substr(0, field_prefix.size() - 1);
  od::document doc;
  if (auto code = json::iterate(document.parser, template_json, padded, document.copy).get(doc))
    return invalid_json(code, std::string(shown));
  od::object object;
  od::json_type type;
  if (doc.type().get(type) || type != od::json_type::object || doc.get_object().get(object))
    return DecodeError{std::string(shown), "must be an object"};
  Decoder d(pod);
  const Loc root{nullptr, field_prefix};
  if (pod_spec ? !d.spec_fields(object, root) : !d.pod(object, root)) return d.error;
  return std::nullopt;
}

}  // namespace gpu_admission::policy
