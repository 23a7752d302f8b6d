// The pod decoder: one forward On-Demand pass over a Pod, a workload or a pod template (see
// policy/decoding/json_reader.h for what is checked on the way).
#include "policy/decoding/pod_decoder.h"

#include <algorithm>
#include <string>

#include "policy/decoding/env_names.h"
#include "policy/decoding/json_reader.h"
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
                                "volumes", "resourceClaims", "initContainers", "containers", "ephemeralContainers");
constexpr auto kContainerKeys = keys("name", "restartPolicy", "securityContext", "env", "envFrom", "resources");
constexpr auto kSecurityContextKeys = keys("privileged");
constexpr auto kEnvKeys = keys("name", "value", "valueFrom");
constexpr auto kEnvFromKeys = keys("prefix");
constexpr auto kResourcesKeys = keys("requests", "limits", "claims");
constexpr auto kClaimRefKeys = keys("name", "request");
constexpr auto kPodClaimKeys = keys("name", "resourceClaimName", "resourceClaimTemplateName", "source");
constexpr auto kClaimSourceKeys = keys("resourceClaimName", "resourceClaimTemplateName");
constexpr auto kAffinityKeys = keys("nodeAffinity");
constexpr auto kNodeAffinityKeys = keys("requiredDuringSchedulingIgnoredDuringExecution");
constexpr auto kNodeSelectorKeys = keys("nodeSelectorTerms");
constexpr auto kTermKeys = keys("matchExpressions");
constexpr auto kRequirementKeys = keys("key", "operator", "values");
constexpr auto kTolerationKeys = keys("key", "operator", "value", "effect");
constexpr auto kVolumeKeys = keys("name", "hostPath");
constexpr auto kHostPathKeys = keys("path");

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
    pod_.has_spec = true;
    const bool read = fields(spec, kSpecKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: return as_bool(value, pod_.host_pid, value_at);
        case 1: return as_bool(value, pod_.host_ipc, value_at);
        case 2: return as_bool(value, pod_.host_network, value_at);
        case 3: pod_.has_node_selector = true; return string_map(value, pod_.node_selector, value_at);
        case 4: return affinity(value, value_at);
        case 5: return tolerations(value, value_at);
        case 6: return volumes(value, value_at);
        case 7: return resource_claims(value, value_at);
        case 8: return containers(value, ContainerKind::Init, value_at);
        case 9: return containers(value, ContainerKind::App, value_at);
        default: return containers(value, ContainerKind::Ephemeral, value_at);
      }
    });
    if (read) order_containers();
    return read;
  }

 private:
  bool containers(od::value& v, ContainerKind kind, const Loc& at) {
    return each_value(v, at, [&](od::value& value, const Loc& item_at, uint32_t i) {
      return container(value, kind, i, item_at);
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

  bool container(od::value& v, ContainerKind kind, uint32_t index, const Loc& at) {
    ContainerView& c = pod_.add_container();
    c.kind = kind;
    c.index = index;
    od::object object;
    if (!as_object(v, object, at)) return false;
    return fields(object, kContainerKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: return as_string(value, c.name, value_at);
        case 1: {
          if (kind != ContainerKind::Init) return true;
          std::string_view restart_policy;
          if (!as_string(value, restart_policy, value_at)) return false;
          c.restartable = restart_policy == "Always";
          return true;
        }
        case 2: return security_context(value, c, value_at);
        case 3: c.has_env = true; return env(value, c, value_at);
        case 4: return env_from(value, c, value_at);
        default: return resources(value, c, value_at);
      }
    });
  }

  bool security_context(od::value& v, ContainerView& c, const Loc& at) {
    od::object object;
    if (!as_object(v, object, at)) return false;
    return fields(object, kSecurityContextKeys, at,
                  [&](int, od::value& value, const Loc& value_at) { return as_bool(value, c.privileged, value_at); });
  }

  // env: name, the literal value, valueFrom. A value that is not a string (the API server
  // refuses it) is read as no value: it is never the one value, "void", that a rule accepts.
  // Only entries whose text could name a variable a rule reads (policy/decoding/env_names.h) are read: a
  // first pass skips each entry and searches its text; a second, only when one was found, reads
  // those entries. hide-gpus' own entry is known by its bytes (kHiddenGpusEnvEntry).
  bool env(od::value& v, ContainerView& c, const Loc& at) {
    od::array list;
    if (!as_array(v, list, at)) return false;
    const size_t first = c.env.size();
    size_t unread = 0;  // entries found that the second pass reads
    const bool searched = each_item(list, at, [&](od::value& item, const Loc& item_at, uint32_t i) {
      od::object var;
      std::string_view text;
      if (!as_object(item, var, item_at)) return false;
      if (auto code = var.raw_json().get(text)) return fail(item_at, code);
      c.env_size = i + 1;
      if (!env_may_name_read(text)) return true;
      EnvVar& entry = c.env.emplace_back();
      entry.index = i;
      if (text == kHiddenGpusEnvEntry) {  // hide-gpus' own entry, in most containers without GPUs
        entry.name = kVisibleDevicesEnv;
        entry.value = kVisibleDevicesVoid;
      } else {
        ++unread;
      }
      return true;
    });
    if (!searched || unread == 0) return searched;
    if (auto code = list.reset().error()) return fail(at, code);  // back to the first entry
    size_t next = first;  // the next entry found
    return each_item(list, at, [&](od::value& item, const Loc& item_at, uint32_t i) {
      if (next == c.env.size() || c.env[next].index != i) return true;  // not found: skipped
      EnvVar& entry = c.env[next++];
      if (entry.name.data() != nullptr) return true;  // known by its bytes in the first pass
      od::object var;
      if (!as_object(item, var, item_at)) return false;
      return fields(var, kEnvKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
        if (key == 0) return as_string(value, entry.name, value_at);
        if (key == 1) return string_if_string(value, entry.value, value_at);
        entry.value_from = true;
        return true;
      });
    });
  }

  bool env_from(od::value& v, ContainerView& c, const Loc& at) {
    return each_object(v, at, [&](od::object source, const Loc& item_at, uint32_t i) {
      EnvFromSource& entry = c.env_from.emplace_back();
      entry.index = i;
      return fields(source, kEnvFromKeys, item_at,
                    [&](int, od::value& value, const Loc& value_at) { return as_string(value, entry.prefix, value_at); });
    });
  }

  bool resources(od::value& v, ContainerView& c, const Loc& at) {
    od::object object;
    if (!as_object(v, object, at)) return false;
    c.has_resources = true;
    return fields(object, kResourcesKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: c.has_requests = true; return quantities(value, c.requests, value_at);
        case 1: c.has_limits = true; return quantities(value, c.limits, value_at);
        default: return container_claims(value, c, value_at);
      }
    });
  }

  bool quantities(od::value& v, std::vector<ResourceQuantity>& out, const Loc& at) {
    const size_t first = out.size();
    const bool read = map_fields(v, at, [&](std::string_view key, od::value& value, const Loc& value_at) {
      ResourceQuantity& q = out.emplace_back();
      q.name = key;
      return quantity(value, q, value_at);
    });
    if (!read) return false;
    return unique_keys(out.data() + first, out.size() - first, [](const ResourceQuantity& q) { return q.name; }, at);
  }

  bool quantity(od::value& v, ResourceQuantity& q, const Loc& at) {
    const char c = first_char(v);
    if (c == '"') {
      q.form = ResourceQuantity::Form::String;
      return as_string(v, q.text, at);
    }
    if (c != '-' && (c < '0' || c > '9')) return fail(at, "must be a quantity (a string or a number)");
    od::number n;
    if (auto code = v.get_number().get(n)) return fail(at, code);
    if (n.is_int64()) {
      q.form = ResourceQuantity::Form::Integer;
      q.integer = n.get_int64();
    } else {
      q.form = ResourceQuantity::Form::Float;  // beyond int64: kept as a (large) number
      q.number = n.is_uint64() ? static_cast<double>(n.get_uint64()) : n.get_double();
    }
    return true;
  }

  // resources.claims: [{name, request}] naming the pod's resourceClaims.
  bool container_claims(od::value& v, ContainerView& c, const Loc& at) {
    return each_object(v, at, [&](od::object ref, const Loc& item_at, uint32_t) {
      ContainerClaimRef& out = c.claims.emplace_back();
      return fields(ref, kClaimRefKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
        return as_string(value, key == 0 ? out.name : out.request, value_at);
      });
    });
  }

  // spec.resourceClaims: [{name, resourceClaimName | resourceClaimTemplateName}]; the 1.26-1.30
  // shape nests the two under `source`. An entry with both shapes naming different claims is
  // refused: an API server of 1.31 or later drops `source` and one before drops the flat names,
  // so which claim the pod gets depends on the version.
  bool resource_claims(od::value& v, const Loc& at) {
    return each_object(v, at, [&](od::object entry, const Loc& item_at, uint32_t i) {
      PodResourceClaim& out = pod_.resource_claims.emplace_back();
      out.index = i;
      std::string_view nested[2];
      bool has_source = false;
      const bool read = fields(entry, kPodClaimKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
        if (key == 0) return as_string(value, out.name, value_at);
        if (key == 1) return as_string(value, out.claim_name, value_at);
        if (key == 2) return as_string(value, out.template_name, value_at);
        has_source = true;
        od::object source;
        if (!as_object(value, source, value_at)) return false;
        return fields(source, kClaimSourceKeys, value_at, [&](int k, od::value& name, const Loc& name_at) {
          return as_string(name, nested[k], name_at);
        });
      });
      if (!read || !has_source) return read;
      if ((!out.claim_name.empty() && out.claim_name != nested[0]) ||
          (!out.template_name.empty() && out.template_name != nested[1]))
        return fail(item_at, "names a claim both directly and under source, differently (ambiguous between "
                             "Kubernetes versions)");
      out.claim_name = nested[0];
      out.template_name = nested[1];
      return true;
    });
  }

  bool affinity(od::value& v, const Loc& at) {
    od::object affinity;
    if (!as_object(v, affinity, at)) return false;
    return fields(affinity, kAffinityKeys, at, [&](int, od::value& node_value, const Loc& node_at) {
      od::object node;
      if (!as_object(node_value, node, node_at)) return false;
      return fields(node, kNodeAffinityKeys, node_at, [&](int, od::value& required_value, const Loc& required_at) {
        od::object required;
        if (!as_object(required_value, required, required_at)) return false;
        return fields(required, kNodeSelectorKeys, required_at, [&](int, od::value& terms, const Loc& terms_at) {
          return node_selector_terms(terms, terms_at);
        });
      });
    });
  }

  bool node_selector_terms(od::value& v, const Loc& at) {
    return each_object(v, at, [&](od::object term, const Loc& term_at, uint32_t) {
      NodeSelectorTerm& out = pod_.required_node_affinity.emplace_back();
      return fields(term, kTermKeys, term_at, [&](int, od::value& exprs, const Loc& exprs_at) {
        return each_object(exprs, exprs_at, [&](od::object expr, const Loc& expr_at, uint32_t) {
          return requirement(expr, out.match_expressions.emplace_back(), expr_at);
        });
      });
    });
  }

  bool requirement(od::object expr, NodeSelectorRequirement& req, const Loc& at) {
    return fields(expr, kRequirementKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      if (key == 0) return as_string(value, req.key, value_at);
      if (key == 1) return as_string(value, req.op, value_at);
      return each_value(value, value_at, [&](od::value& entry, const Loc& item_at, uint32_t) {
        return as_string(entry, req.values.emplace_back(), item_at);
      });
    });
  }

  bool tolerations(od::value& v, const Loc& at) {
    return each_object(v, at, [&](od::object t, const Loc& item_at, uint32_t) {
      Toleration& tol = pod_.tolerations.emplace_back();
      std::string_view* out[] = {&tol.key, &tol.op, &tol.value, &tol.effect};
      return fields(t, kTolerationKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
        return as_string(value, *out[key], value_at);
      });
    });
  }

  bool volumes(od::value& v, const Loc& at) {
    return each_object(v, at, [&](od::object volume, const Loc& item_at, uint32_t i) {
      HostPathVolume out;
      out.index = i;
      bool host_path = false;
      const bool read = fields(volume, kVolumeKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
        if (key == 0) return as_string(value, out.name, value_at);
        host_path = true;
        od::object hp;
        if (!as_object(value, hp, value_at)) return false;
        return fields(hp, kHostPathKeys, value_at,
                      [&](int, od::value& path, const Loc& path_at) { return as_string(path, out.path, path_at); });
      });
      if (read && host_path) pod_.host_paths.push_back(out);
      return read;
    });
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
                                           PodDocument& document) {
  pod.clear();
  pod.workload = kind;
  od::document doc;
  if (auto code = json::iterate(document.parser, json, padded, document.copy).get(doc))
    return invalid_json(code);
  return decode_object(doc, kind, pod);
}

std::optional<DecodeError> decode_pod_value(simdjson::ondemand::value& value, WorkloadKind kind, PodView& pod) {
  pod.clear();
  pod.workload = kind;
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

std::optional<DecodeError> decode_pod_json(std::string_view json, bool padded, PodView& pod, PodDocument& document) {
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
  if (!kind) return DecodeError{"kind", "\"" + kind_text + "\" is not a Pod or a workload with a pod template"};
  pod.clear();
  pod.workload = *kind;
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
                                               PodView& pod, PodDocument& document) {
  pod.clear();
  pod.custom_template = true;
  pod.template_prefix = field_prefix;
  pod.template_pointer = pointer;
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
  if (!d.pod(object, root)) return d.error;
  return std::nullopt;
}

}  // namespace gpu_admission::policy
