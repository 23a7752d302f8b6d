// The pod decoder's container step: one container (name, restartPolicy, securityContext, env,
// envFrom, volumeMounts, resources with their quantities and claims) read into a ContainerView. A
// container's env is read here: an entry only when policy/decoding/env_names.h says its bytes
// could name a variable a rule reads (a built-in name, or one of PodView::policy_env_vars).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/tenant_labels.h"
#include "policy/decoding/env_names.h"
#include "policy/decoding/pod_decoder_steps.h"

namespace gpu_admission::policy::pod_decoding {
namespace {

using json::keys;

constexpr auto kContainerKeys =
    keys("name", "restartPolicy", "securityContext", "env", "envFrom", "resources", "volumeMounts");
constexpr auto kSecurityContextKeys = keys("privileged");
constexpr auto kEnvKeys = keys("name", "value", "valueFrom");
constexpr auto kEnvFromKeys = keys("prefix");
constexpr auto kVolumeMountKeys = keys("name", "mountPath");
constexpr auto kResourcesKeys = keys("requests", "limits", "claims");
constexpr auto kClaimRefKeys = keys("name", "request");

bool security_context(json::Reader& r, od::value& v, ContainerView& c, const Loc& at) {
  od::object object;
  if (!r.as_object(v, object, at)) return false;
  return r.fields(object, kSecurityContextKeys, at,
                  [&](int, od::value& value, const Loc& value_at) { return r.as_bool(value, c.privileged, value_at); });
}

// env: name, the literal value, valueFrom. A value that is not a string (the API server
// refuses it) is read as no value: it is never the one value, "void", that a rule accepts.
// Only entries whose text could name a variable a rule reads (policy/decoding/env_names.h) are read: a
// first pass skips each entry and searches its text; a second, only when one was found, reads
// those entries. hide-gpus' own entry is known by its bytes (kHiddenGpusEnvEntry). `extra`: the
// policy's own names (PodView::policy_env_vars).
bool env(json::Reader& r, od::value& v, ContainerView& c, std::span<const std::string> extra, const Loc& at) {
  od::array list;
  if (!r.as_array(v, list, at)) return false;
  const size_t first = c.env.size();
  size_t unread = 0;  // entries found that the second pass reads
  const bool searched = r.each_item(list, at, [&](od::value& item, const Loc& item_at, uint32_t i) {
    od::object var;
    std::string_view text;
    if (!r.as_object(item, var, item_at)) return false;
    if (auto code = var.raw_json().get(text)) return r.fail(item_at, code);
    c.env_size = i + 1;
    if (!env_may_name_read(text, extra)) return true;
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
  if (auto code = list.reset().error()) return r.fail(at, code);  // back to the first entry
  size_t next = first;                                            // the next entry found
  return r.each_item(list, at, [&](od::value& item, const Loc& item_at, uint32_t i) {
    if (next == c.env.size() || c.env[next].index != i) return true;  // not found: skipped
    EnvVar& entry = c.env[next++];
    if (entry.name.data() != nullptr) return true;  // known by its bytes in the first pass
    od::object var;
    if (!r.as_object(item, var, item_at)) return false;
    return r.fields(var, kEnvKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      if (key == 0) return r.as_string(value, entry.name, value_at);
      if (key == 1) return r.string_if_string(value, entry.value, value_at);
      entry.value_from = true;
      return true;
    });
  });
}

bool env_from(json::Reader& r, od::value& v, ContainerView& c, const Loc& at) {
  return r.each_object(v, at, [&](od::object source, const Loc& item_at, uint32_t i) {
    EnvFromSource& entry = c.env_from.emplace_back();
    entry.index = i;
    return r.fields(source, kEnvFromKeys, item_at, [&](int, od::value& value, const Loc& value_at) {
      return r.as_string(value, entry.prefix, value_at);
    });
  });
}

// volumeMounts: every entry's volume name and mountPath (gpu-device-access judges where a mount lands).
bool volume_mounts(json::Reader& r, od::value& v, ContainerView& c, const Loc& at) {
  return r.each_object(v, at, [&](od::object mount, const Loc& item_at, uint32_t i) {
    VolumeMount& entry = c.volume_mounts.emplace_back();
    entry.index = i;
    return r.fields(mount, kVolumeMountKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      return r.as_string(value, key == 0 ? entry.name : entry.mount_path, value_at);
    });
  });
}

bool quantity(json::Reader& r, od::value& v, ResourceQuantity& q, const Loc& at) {
  const char c = r.first_char(v);
  if (c == '"') {
    q.form = ResourceQuantity::Form::String;
    return r.as_string(v, q.text, at);
  }
  if (c != '-' && (c < '0' || c > '9')) return r.fail(at, "must be a quantity (a string or a number)");
  od::number n;
  if (auto code = v.get_number().get(n)) return r.fail(at, code);
  if (n.is_int64()) {
    q.form = ResourceQuantity::Form::Integer;
    q.integer = n.get_int64();
  } else {
    q.form = ResourceQuantity::Form::Float;  // beyond int64: kept as a (large) number
    q.number = n.is_uint64() ? static_cast<double>(n.get_uint64()) : n.get_double();
  }
  return true;
}

bool quantities(json::Reader& r, od::value& v, std::vector<ResourceQuantity>& out, const Loc& at) {
  const size_t first = out.size();
  const bool read = r.map_fields(v, at, [&](std::string_view key, od::value& value, const Loc& value_at) {
    ResourceQuantity& q = out.emplace_back();
    q.name = key;
    return quantity(r, value, q, value_at);
  });
  if (!read) return false;
  return r.unique_keys(
      out.data() + first, out.size() - first, [](const ResourceQuantity& q) { return q.name; }, at);
}

// resources.claims: [{name, request}] naming the pod's resourceClaims.
bool container_claims(json::Reader& r, od::value& v, ContainerView& c, const Loc& at) {
  return r.each_object(v, at, [&](od::object ref, const Loc& item_at, uint32_t) {
    ContainerClaimRef& out = c.claims.emplace_back();
    return r.fields(ref, kClaimRefKeys, item_at, [&](int key, od::value& value, const Loc& value_at) {
      return r.as_string(value, key == 0 ? out.name : out.request, value_at);
    });
  });
}

bool resources(json::Reader& r, od::value& v, ContainerView& c, const Loc& at) {
  od::object object;
  if (!r.as_object(v, object, at)) return false;
  c.has_resources = true;
  return r.fields(object, kResourcesKeys, at, [&](int key, od::value& value, const Loc& value_at) {
    switch (key) {
      case 0: c.has_requests = true; return quantities(r, value, c.requests, value_at);
      case 1: c.has_limits = true; return quantities(r, value, c.limits, value_at);
      default: return container_claims(r, value, c, value_at);
    }
  });
}
}  // namespace

bool decode_container(json::Reader& r, PodView& pod, od::value& v, ContainerKind kind, uint32_t index, const Loc& at) {
  ContainerView& c = pod.add_container();
  c.kind = kind;
  c.index = index;
  od::object object;
  if (!r.as_object(v, object, at)) return false;
  return r.fields(object, kContainerKeys, at, [&](int key, od::value& value, const Loc& value_at) {
    switch (key) {
      case 0: return r.as_string(value, c.name, value_at);
      case 1: {
        if (kind != ContainerKind::Init) return true;
        std::string_view restart_policy;
        if (!r.as_string(value, restart_policy, value_at)) return false;
        c.restartable = restart_policy == "Always";
        return true;
      }
      case 2: return security_context(r, value, c, value_at);
      case 3: c.has_env = true; return env(r, value, c, pod.policy_env_vars, value_at);
      case 4: return env_from(r, value, c, value_at);
      case 5: return resources(r, value, c, value_at);
      default: return volume_mounts(r, value, c, value_at);
    }
  });
}
}  // namespace gpu_admission::policy::pod_decoding
