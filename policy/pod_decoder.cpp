#include "policy/pod_decoder.h"

#include "policy/dom_reader.h"

#include <algorithm>
#include <cctype>

namespace gpu_admission::policy {
namespace {

using dom::array;
using dom::element;
using dom::element_type;
using dom::Loc;
using dom::object;

class Decoder : public dom::Reader {
 public:
  Decoder(PodView& pod, std::string_view prefix) : dom::Reader(prefix), pod_(pod) {}

  bool string_map(element e, StringViewPairs& out, const Loc& at) {
    object obj;
    if (!as_object(e, obj, at)) return false;
    for (auto [key, value] : obj) {
      if (value.type() == element_type::NULL_VALUE) continue;
      if (value.type() != element_type::STRING) return fail(at.map_key(key), "must be a string");
      out.emplace_back(key, value.get_string().value_unsafe());
    }
    return true;
  }

  bool metadata(object pod_object, const Loc& root) {
    element e;
    if (!get(pod_object, "metadata", e)) return true;
    Loc at = root.child("metadata");
    object md;
    if (!as_object(e, md, at)) return false;
    pod_.has_metadata = true;
    if (get(md, "labels", e)) {
      pod_.has_labels = true;
      if (!string_map(e, pod_.labels, at.child("labels"))) return false;
    }
    if (get(md, "annotations", e)) {
      pod_.has_annotations = true;
      if (!string_map(e, pod_.annotations, at.child("annotations"))) return false;
    }
    return true;
  }

  bool resources(object res, std::vector<ResourceQuantity>& out, const Loc& at) {
    for (auto [key, value] : res) {
      ResourceQuantity q;
      q.name = key;
      switch (value.type()) {
        case element_type::STRING:
          q.form = ResourceQuantity::Form::String;
          q.text = value.get_string().value_unsafe();
          break;
        case element_type::INT64:
          q.form = ResourceQuantity::Form::Integer;
          q.integer = value.get_int64().value_unsafe();
          break;
        case element_type::UINT64:
          q.form = ResourceQuantity::Form::Float;  // beyond int64: kept as a (large) number
          q.number = static_cast<double>(value.get_uint64().value_unsafe());
          break;
        case element_type::DOUBLE:
          q.form = ResourceQuantity::Form::Float;
          q.number = value.get_double().value_unsafe();
          break;
        case element_type::NULL_VALUE:
          continue;
        default:
          return fail(at.map_key(key), "must be a quantity (a string or a number)");
      }
      out.push_back(q);
    }
    return true;
  }

  // env (name, literal value, valueFrom) and envFrom (prefixes) of one container.
  bool env(object obj, ContainerView& c, const Loc& at) {
    element v;
    c.has_env = get(obj, "env", v);
    const bool env_ok = each_object(obj, "env", at, [&](object var, const Loc& item_at, uint32_t) {
      EnvVar entry;
      if (!optional_string(var, "name", entry.name, item_at)) return false;
      // A value that is not a string (the API server refuses it) is read as no value: it is
      // never the one value, "void", that a rule accepts.
      element value;
      if (get(var, "value", value) && value.type() == element_type::STRING) entry.value = value.get_string().value_unsafe();
      element from;
      entry.value_from = get(var, "valueFrom", from);
      c.env.push_back(entry);
      return true;
    });
    return env_ok && each_object(obj, "envFrom", at, [&](object source, const Loc& item_at, uint32_t i) {
      EnvFromSource entry;
      entry.index = i;
      if (!optional_string(source, "prefix", entry.prefix, item_at)) return false;
      c.env_from.push_back(entry);
      return true;
    });
  }

  // resources.claims: [{name, request}] naming the pod's resourceClaims.
  bool container_claims(object resources, ContainerView& c, const Loc& res_at) {
    return each_object(resources, "claims", res_at, [&](object ref, const Loc& item_at, uint32_t) {
      ContainerClaimRef out;
      if (!optional_string(ref, "name", out.name, item_at) || !optional_string(ref, "request", out.request, item_at))
        return false;
      c.claims.push_back(out);
      return true;
    });
  }

  // spec.resourceClaims: [{name, resourceClaimName | resourceClaimTemplateName}]; the 1.26-1.30
  // shape nests the two under `source`.
  bool resource_claims(object spec, const Loc& spec_at) {
    return each_object(spec, "resourceClaims", spec_at, [&](object entry, const Loc& item_at, uint32_t i) {
      PodResourceClaim out;
      out.index = i;
      if (!optional_string(entry, "name", out.name, item_at)) return false;
      object source = entry;
      Loc source_at = item_at;
      Loc nested_at = item_at.child("source");
      if (child_object(entry, "source", source, nested_at)) source_at = nested_at;
      else if (error) return false;
      else source = entry;
      if (!optional_string(source, "resourceClaimName", out.claim_name, source_at) ||
          !optional_string(source, "resourceClaimTemplateName", out.template_name, source_at))
        return false;
      pod_.resource_claims.push_back(out);
      return true;
    });
  }


  bool container(element e, ContainerKind kind, uint32_t index, const Loc& at) {
    ContainerView& c = pod_.add_container();
    c.kind = kind;
    c.index = index;
    object obj;
    if (!as_object(e, obj, at)) return false;
    if (!optional_string(obj, "name", c.name, at)) return false;
    if (kind == ContainerKind::Init) {
      std::string_view restart_policy;
      if (!optional_string(obj, "restartPolicy", restart_policy, at)) return false;
      c.restartable = restart_policy == "Always";
    }
    object sub;
    Loc sc_at = at.child("securityContext");
    if (child_object(obj, "securityContext", sub, sc_at)) {
      if (!optional_bool(sub, "privileged", c.privileged, sc_at)) return false;
    } else if (error) {
      return false;
    }
    if (!env(obj, c, at)) return false;
    Loc res_at = at.child("resources");
    if (child_object(obj, "resources", sub, res_at)) {
      c.has_resources = true;
      object list;
      Loc req_at = res_at.child("requests");
      if (child_object(sub, "requests", list, req_at)) {
        c.has_requests = true;
        if (!resources(list, c.requests, req_at)) return false;
      } else if (error) {
        return false;
      }
      Loc lim_at = res_at.child("limits");
      if (child_object(sub, "limits", list, lim_at)) {
        c.has_limits = true;
        if (!resources(list, c.limits, lim_at)) return false;
      } else if (error) {
        return false;
      }
      if (!container_claims(sub, c, res_at)) return false;
    } else if (error) {
      return false;
    }
    return true;
  }

  bool containers(object spec, std::string_view key, ContainerKind kind, const Loc& spec_at) {
    element v;
    if (!get(spec, key, v)) return true;
    Loc at = spec_at.child(key);
    array list;
    if (!as_array(v, list, at)) return false;
    uint32_t i = 0;
    for (element item : list) {
      if (!container(item, kind, i, at.item(i))) return false;
      ++i;
    }
    return true;
  }

  bool affinity(object spec, const Loc& spec_at) {
    object aff, node_aff, required;
    Loc aff_at = spec_at.child("affinity");
    if (!child_object(spec, "affinity", aff, aff_at)) return !error;
    Loc node_at = aff_at.child("nodeAffinity");
    if (!child_object(aff, "nodeAffinity", node_aff, node_at)) return !error;
    Loc req_at = node_at.child("requiredDuringSchedulingIgnoredDuringExecution");
    if (!child_object(node_aff, "requiredDuringSchedulingIgnoredDuringExecution", required, req_at)) return !error;
    element v;
    if (!get(required, "nodeSelectorTerms", v)) return true;
    Loc terms_at = req_at.child("nodeSelectorTerms");
    array terms;
    if (!as_array(v, terms, terms_at)) return false;
    size_t ti = 0;
    for (element term_el : terms) {
      Loc term_at = terms_at.item(ti++);
      object term;
      if (!as_object(term_el, term, term_at)) return false;
      NodeSelectorTerm& out = pod_.required_node_affinity.emplace_back();
      element exprs_el;
      if (!get(term, "matchExpressions", exprs_el)) continue;
      Loc exprs_at = term_at.child("matchExpressions");
      array exprs;
      if (!as_array(exprs_el, exprs, exprs_at)) return false;
      size_t ei = 0;
      for (element expr_el : exprs) {
        Loc expr_at = exprs_at.item(ei++);
        object expr;
        if (!as_object(expr_el, expr, expr_at)) return false;
        NodeSelectorRequirement& req = out.match_expressions.emplace_back();
        if (!optional_string(expr, "key", req.key, expr_at) || !optional_string(expr, "operator", req.op, expr_at))
          return false;
        element values_el;
        if (!get(expr, "values", values_el)) continue;
        Loc values_at = expr_at.child("values");
        array values;
        if (!as_array(values_el, values, values_at)) return false;
        size_t vi = 0;
        for (element value : values) {
          std::string_view s;
          if (!as_string(value, s, values_at.item(vi++))) return false;
          req.values.push_back(s);
        }
      }
    }
    return true;
  }

  bool tolerations(object spec, const Loc& spec_at) {
    element v;
    if (!get(spec, "tolerations", v)) return true;
    Loc at = spec_at.child("tolerations");
    array list;
    if (!as_array(v, list, at)) return false;
    size_t i = 0;
    for (element item : list) {
      Loc item_at = at.item(i++);
      object t;
      if (!as_object(item, t, item_at)) return false;
      Toleration tol;
      if (!optional_string(t, "key", tol.key, item_at) || !optional_string(t, "operator", tol.op, item_at) ||
          !optional_string(t, "value", tol.value, item_at) || !optional_string(t, "effect", tol.effect, item_at))
        return false;
      pod_.tolerations.push_back(tol);
    }
    return true;
  }

  bool volumes(object spec, const Loc& spec_at) {
    element v;
    if (!get(spec, "volumes", v)) return true;
    Loc at = spec_at.child("volumes");
    array list;
    if (!as_array(v, list, at)) return false;
    uint32_t i = 0;
    for (element item : list) {
      Loc item_at = at.item(i);
      object vol;
      if (!as_object(item, vol, item_at)) return false;
      object host_path;
      Loc hp_at = item_at.child("hostPath");
      if (child_object(vol, "hostPath", host_path, hp_at)) {
        HostPathVolume out;
        out.index = i;
        if (!optional_string(vol, "name", out.name, item_at)) return false;
        if (!optional_string(host_path, "path", out.path, hp_at)) return false;
        pod_.host_paths.push_back(out);
      } else if (error) {
        return false;
      }
      ++i;
    }
    return true;
  }

  bool spec(object pod_object, const Loc& root) {
    element e;
    if (!get(pod_object, "spec", e)) return true;
    Loc at = root.child("spec");
    object spec;
    if (!as_object(e, spec, at)) return false;
    pod_.has_spec = true;
    if (!optional_bool(spec, "hostPID", pod_.host_pid, at) || !optional_bool(spec, "hostIPC", pod_.host_ipc, at) ||
        !optional_bool(spec, "hostNetwork", pod_.host_network, at))
      return false;
    if (get(spec, "nodeSelector", e)) {
      pod_.has_node_selector = true;
      if (!string_map(e, pod_.node_selector, at.child("nodeSelector"))) return false;
    }
    return affinity(spec, at) && tolerations(spec, at) && volumes(spec, at) && resource_claims(spec, at) &&
           containers(spec, "initContainers", ContainerKind::Init, at) &&
           containers(spec, "containers", ContainerKind::App, at) &&
           containers(spec, "ephemeralContainers", ContainerKind::Ephemeral, at);
  }

 private:
  PodView& pod_;
};

// Walks object keys from `root`; on failure names the first missing step.
bool descend(element root, std::initializer_list<std::string_view> path, element& out, std::string& missing) {
  element cur = root;
  for (auto key : path) {
    if (!missing.empty()) missing += '.';
    missing += key;
    if (cur.type() != element_type::OBJECT) return false;
    auto r = cur.get_object().value_unsafe().at_key(key);
    if (r.error() || r.value_unsafe().type() == element_type::NULL_VALUE) return false;
    cur = r.value_unsafe();
  }
  out = cur;
  return true;
}

// Duplicate keys make JSON ambiguous: simdjson finds the first, the API server's Go decoder and
// most tools keep the last. A security check must not read a different object than the one that
// gets stored, so an object with a duplicate key anywhere is refused.
bool find_duplicate_key(element e, const Loc& at, std::vector<std::string_view>& keys, std::string& field,
                        std::string& key_out) {
  if (e.type() == element_type::ARRAY) {
    size_t i = 0;
    array items = e.get_array().value_unsafe();
    for (element item : items) {
      Loc item_at = at.item(i++);
      if (find_duplicate_key(item, item_at, keys, field, key_out)) return true;
    }
    return false;
  }
  if (e.type() != element_type::OBJECT) return false;
  object obj = e.get_object().value_unsafe();
  const size_t base = keys.size();
  for (auto [key, value] : obj) keys.push_back(key);
  const auto object_keys = keys.begin() + static_cast<std::ptrdiff_t>(base);
  std::optional<std::string_view> duplicate;
  if (keys.size() - base <= 16) {
    // Small objects, nearly all of them: comparing each pair is cheaper than sorting.
    for (auto i = object_keys; i != keys.end() && !duplicate; ++i)
      for (auto j = object_keys; j != i; ++j)
        if (*i == *j) {
          duplicate = *i;
          break;
        }
  } else {
    // Large objects (a label map of 100,000 keys is a valid body) in n log n.
    std::sort(object_keys, keys.end());
    const auto repeated = std::adjacent_find(object_keys, keys.end());
    if (repeated != keys.end()) duplicate = *repeated;
  }
  keys.resize(base);
  if (duplicate) {
    at.render(field);
    key_out = *duplicate;
    return true;
  }
  for (auto [key, value] : obj) {
    if (value.type() != element_type::OBJECT && value.type() != element_type::ARRAY) continue;
    Loc child = at.auto_key(key);
    if (find_duplicate_key(value, child, keys, field, key_out)) return true;
  }
  return false;
}

std::optional<DecodeError> identity(object obj, PodView& pod) {
  element e;
  if (Decoder::get(obj, "apiVersion", e) && e.type() == element_type::STRING) pod.api_version = e.get_string().value_unsafe();
  if (!Decoder::get(obj, "metadata", e)) return std::nullopt;
  if (e.type() != element_type::OBJECT) return DecodeError{"metadata", "must be an object"};
  object md = e.get_object().value_unsafe();
  struct Field {
    std::string_view key;
    std::string_view* out;
  };
  for (Field f : {Field{"name", &pod.name}, Field{"generateName", &pod.generate_name},
                  Field{"namespace", &pod.namespace_name}}) {
    element v;
    if (!Decoder::get(md, f.key, v)) continue;
    if (v.type() != element_type::STRING) return DecodeError{"metadata." + std::string(f.key), "must be a string"};
    *f.out = v.get_string().value_unsafe();
  }
  return std::nullopt;
}

}  // namespace

std::optional<DecodeError> find_duplicate_keys(element root) {
  thread_local std::vector<std::string_view> keys;
  keys.clear();
  std::string field, key;
  if (!find_duplicate_key(root, Loc{}, keys, field, key)) return std::nullopt;
  return DecodeError{field, "duplicate key \"" + key + "\" (ambiguous JSON is refused)"};
}

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

std::optional<DecodeError> decode_pod_as(element object_el, WorkloadKind kind, PodView& pod, bool check_duplicates) {
  pod.clear();
  pod.workload = kind;
  if (object_el.type() != element_type::OBJECT) return DecodeError{"", "the object must be a JSON object"};
  if (check_duplicates)
    if (auto err = find_duplicate_keys(object_el)) return err;
  if (auto err = identity(object_el.get_object().value_unsafe(), pod)) return err;

  element pod_el = object_el;
  if (kind != WorkloadKind::Pod) {
    std::string missing;
    bool found = kind == WorkloadKind::CronJob
                     ? descend(object_el, {"spec", "jobTemplate", "spec", "template"}, pod_el, missing)
                     : descend(object_el, {"spec", "template"}, pod_el, missing);
    if (!found) {
      // A ReplicationController may omit its template; there is nothing to evaluate then.
      if (kind == WorkloadKind::ReplicationController && missing == "spec.template") return std::nullopt;
      return DecodeError{missing, "missing or not an object: a " + std::string(workload_kind_name(kind)) +
                                      " needs a pod template"};
    }
    if (pod_el.type() != element_type::OBJECT) return DecodeError{missing, "must be an object"};
  }

  Decoder decoder(pod, workload_field_prefix(kind));
  object pod_obj = pod_el.get_object().value_unsafe();
  Loc root;
  if (decoder.metadata(pod_obj, root)) decoder.spec(pod_obj, root);
  return decoder.error;
}

std::optional<DecodeError> decode_pod_template(element object_el, element template_el, std::string_view field_prefix,
                                               std::string_view pointer, PodView& pod, bool check_duplicates) {
  pod.clear();
  pod.custom_template = true;
  pod.template_prefix = field_prefix;
  pod.template_pointer = pointer;
  if (object_el.type() != element_type::OBJECT) return DecodeError{"", "the object must be a JSON object"};
  if (check_duplicates)
    if (auto err = find_duplicate_keys(object_el)) return err;
  if (auto err = identity(object_el.get_object().value_unsafe(), pod)) return err;
  std::string_view shown = field_prefix.empty() ? field_prefix : field_prefix.substr(0, field_prefix.size() - 1);
  if (template_el.type() != element_type::OBJECT) return DecodeError{std::string(shown), "must be an object"};
  Decoder decoder(pod, field_prefix);
  object pod_obj = template_el.get_object().value_unsafe();
  Loc root;
  if (decoder.metadata(pod_obj, root)) decoder.spec(pod_obj, root);
  return decoder.error;
}

std::optional<DecodeError> decode_pod(element object_el, PodView& pod) {
  if (object_el.type() != element_type::OBJECT) return DecodeError{"", "the object must be a JSON object"};
  auto kind_r = object_el.get_object().value_unsafe().at_key("kind");
  if (kind_r.error() || kind_r.value_unsafe().type() != element_type::STRING)
    return DecodeError{"kind", "missing or not a string"};
  std::string_view kind_text = kind_r.value_unsafe().get_string().value_unsafe();
  auto kind = workload_kind_from(kind_text);
  if (!kind) return DecodeError{"kind", "\"" + std::string(kind_text) + "\" is not a Pod or a workload with a pod template"};
  return decode_pod_as(object_el, *kind, pod);
}

}  // namespace gpu_admission::policy
