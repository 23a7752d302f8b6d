// Pod and container predicates in CEL; see pod_cel.h. Each mirrors the webhook's rule code named
// beside it, for what a single object shows.
#include "webhook/backstop/pod_cel.h"

#include <vector>

#include "policy/base/tenant_labels.h"
#include "webhook/backstop/cel_text.h"

namespace gpu_admission::webhook::backstop {
namespace {

// A quantity the webhook could count as zero (policy/views/quantity.h: only an exact integer zero
// is zero): every spelling of zero, and some unreadable text, which makes the backstop's "asks for
// a GPU" narrower than the webhook's, never wider.
constexpr const char* kZeroQuantity = R"(r'^[+-]?[0.]*(?:[eE][+-]?[0-9]*|[A-Za-z]*)$')";

// The names classify_resource() calls GPU resources, MIG prefix aside.
std::vector<std::string> gpu_resource_names(const policy::CompiledPolicy& policy) {
  const auto& cfg = policy.config();
  std::vector<std::string> out = cfg.gpu_full;
  out.insert(out.end(), cfg.gpu_shared.begin(), cfg.gpu_shared.end());
  out.insert(out.end(), cfg.gpu_fractional.begin(), cfg.gpu_fractional.end());
  for (const auto& c : cfg.device_classes_full) out.push_back(std::string(policy::CompiledPolicy::kDeviceClassResourcePrefix) + c);
  for (const auto& c : cfg.device_classes_mig) out.push_back(std::string(policy::CompiledPolicy::kDeviceClassResourcePrefix) + c);
  return out;
}

// Resources counted one whole GPU per unit (gpu-cap): full, shared, GPU device classes; `full`
// says which are whole GPUs of the device plugin (the ones mig-resources converts).
struct CountedResource {
  std::string name;
  bool full;
};
std::vector<CountedResource> whole_gpu_resources(const policy::CompiledPolicy& policy) {
  const auto& cfg = policy.config();
  std::vector<CountedResource> out;
  for (const auto& r : cfg.gpu_full) out.push_back({r, true});
  for (const auto& r : cfg.gpu_shared) out.push_back({r, false});
  for (const auto& c : cfg.device_classes_full)
    out.push_back({std::string(policy::CompiledPolicy::kDeviceClassResourcePrefix) + c, false});
  for (const auto& c : cfg.device_classes_mig)
    out.push_back({std::string(policy::CompiledPolicy::kDeviceClassResourcePrefix) + c, false});
  return out;
}

std::vector<std::string> device_env_names(const policy::CompiledPolicy& policy) {
  std::vector<std::string> out(policy::kDeviceEnvVars.begin(), policy::kDeviceEnvVars.end());
  for (const auto& n : policy.gpu_env_vars()) out.push_back(n);
  return out;
}

std::string gpu_resource(const policy::CompiledPolicy& policy, const std::string& r) {
  std::string out = r + " in " + quote_list(gpu_resource_names(policy));
  if (!policy.mig_prefix().empty()) out = "(" + out + " || " + r + ".startsWith(" + quote(policy.mig_prefix()) + "))";
  return out;
}

// The quantity at `map[name]` as a lower bound of its value, in whole units: plain integers up to 9
// digits as they are; integers with a suffix or exponent of at least a thousand as 1000, of at
// least ten thousand (and integers of 10 digits or more) as 10000; anything else (fractions,
// which the API server refuses for extended resources, and text) as 0.
std::string units(const std::string& map, const std::string& name) {
  const std::string q = "string(" + map + "[" + quote(name) + "])";
  return "(" + q + ".matches(r'^[0-9]{1,9}$') ? int(" + q + ") : " + q +
         ".matches(r'^\\+?(?:[1-9][0-9]{9,}|[1-9][0-9]*(?:[MGTPE]i?|[eE]\\+?0*(?:[4-9]|[1-9][0-9]+)))$') ? 10000 : " + q +
         ".matches(r'^\\+?[1-9][0-9]*(?:k|Ki|[eE]\\+?0*3)$') ? 1000 : 0)";
}

// A container's whole GPUs: per resource its limit, else its request (the API server keeps the two
// equal for extended resources); whole GPUs of the device plugin count 0 when `converted` holds.
std::string container_units(const policy::CompiledPolicy& policy, const std::string& c, const std::string& converted) {
  std::string out;
  const std::string limits = c + ".resources.limits", requests = c + ".resources.requests";
  for (const auto& [name, full] : whole_gpu_resources(policy)) {
    const std::string in_limits = "has(" + c + ".resources) && has(" + limits + ") && " + quote(name) + " in " + limits;
    const std::string in_requests =
        "has(" + c + ".resources) && has(" + requests + ") && " + quote(name) + " in " + requests;
    std::string term = "(" + in_limits + " ? " + units(limits, name) + " : (" + in_requests + " ? " +
                       units(requests, name) + " : 0))";
    if (full && converted != "false") term = "(" + converted + " ? 0 : " + term + ")";
    out += (out.empty() ? "" : " +\n") + term;
  }
  return out.empty() ? "0" : out;
}

// list[0] + ... + list[15], for the lists that exist.
std::string sum_first(const std::string& list, int count) {
  std::string out;
  for (int i = 0; i < count; ++i)
    out += (i ? " + " : "") + std::string("(") + list + ".size() > " + std::to_string(i) + " ? " + list + "[" +
           std::to_string(i) + "] : 0)";
  return out;
}

// The requested toleration is covered by one spec.deviceTolerations entry
// (policy/evaluation/device_tolerations.cpp: toleration_allows).
std::string toleration_allowed(const policy::TolerationConfig& a) {
  const std::string op = "(has(tol.operator) ? tol.operator : '')";
  const std::string key = "(has(tol.key) ? tol.key : '')";
  std::vector<std::string> parts;
  if (!a.effect.empty()) parts.push_back("(has(tol.effect) ? tol.effect : '') == " + quote(a.effect));
  if (a.op == "Exists") {
    parts.push_back(op + " in ['Exists', 'Equal', '']");
    if (!a.key.empty()) parts.push_back(key + " == " + quote(a.key));
  } else {
    if (a.key.empty()) return "false";
    parts.push_back(op + " in ['Equal', '']");
    parts.push_back(key + " == " + quote(a.key));
    parts.push_back("(has(tol.value) ? tol.value : '') == " + quote(a.value));
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " && " : "") + parts[i];
  return "(" + out + ")";
}

// Every GPU request of a claim object, and the alternatives it is made of: the request itself
// (v1beta1 puts its fields flat), `exactly` (v1, v1beta2) and `firstAvailable` items. `body` is
// about subrequest `s`.
std::string any_claim_subrequest(const policy::CompiledPolicy& policy, const std::string& root, const std::string& body) {
  std::vector<std::string> classes = policy.config().device_classes_full;
  classes.insert(classes.end(), policy.config().device_classes_mig.begin(), policy.config().device_classes_mig.end());
  const std::string requests =
      "variables.kind == 'ResourceClaim' ? " + value_or(root, "spec.devices.requests", "[]") +
      " : variables.kind == 'ResourceClaimTemplate' ? " + value_or(root, "spec.spec.devices.requests", "[]") + " : []";
  return "(" + requests + ").exists(req, [[req] + (has(req.exactly) ? [req.exactly] : []) + "
         "(has(req.firstAvailable) ? req.firstAvailable : [])].exists(subs, subs.exists(s, has(s.deviceClassName) && "
         "s.deviceClassName in " + quote_list(classes) + " && (" + body + "))))";
}

}  // namespace

std::string any_container(const std::string& spec, const std::string& body) {
  std::vector<std::string> parts;
  for (const char* kind : {"containers", "initContainers", "ephemeralContainers"}) {
    const std::string list = spec + "." + kind;
    parts.push_back("has(" + list + ") && " + list + ".exists(c, " + body + ")");
  }
  return any_of(parts);
}

// privileged.cpp
std::string container_privileged(const std::string& c) {
  return "has(" + c + ".securityContext) && has(" + c + ".securityContext.privileged) && " + c +
         ".securityContext.privileged == true";
}

// host_namespaces.cpp
std::string host_namespaces(const std::string& spec) {
  std::vector<std::string> parts;
  for (const char* f : {"hostPID", "hostIPC", "hostNetwork"})
    parts.push_back("has(" + spec + "." + f + ") && " + spec + "." + f + " == true");
  return any_of(parts);
}

// gpu_request.cpp: container_asks_for_gpu
std::string container_asks_gpu(const policy::CompiledPolicy& policy, const std::string& c) {
  std::vector<std::string> parts;
  for (const char* which : {"limits", "requests"}) {
    const std::string map = c + ".resources." + which;
    parts.push_back("has(" + map + ") && " + map + ".exists(r, " + gpu_resource(policy, "r") + " && !string(" + map +
                    "[r]).matches(" + kZeroQuantity + "))");
  }
  return "has(" + c + ".resources) && ((" + parts[0] + ") || (" + parts[1] + "))";
}

std::string pod_asks_gpu(const policy::CompiledPolicy& policy, const std::string& spec) {
  return any_container(spec, container_asks_gpu(policy, "c"));
}

// gpu_device_access.cpp: check_env
std::string container_device_env(const policy::CompiledPolicy& policy, const std::string& c) {
  const std::string names = quote_list(device_env_names(policy));
  const std::string hides = "e.name == " + quote(policy::kVisibleDevicesEnv) + " && !has(e.valueFrom) && has(e.value) && e.value == " +
                            quote(policy::kVisibleDevicesVoid) + " && !(" + container_asks_gpu(policy, c) + ")";
  return "(has(" + c + ".env) && " + c + ".env.exists(e, has(e.name) && e.name in " + names + " && !(" + hides +
         "))) ||\n(has(" + c + ".envFrom) && " + c + ".envFrom.exists(f, has(f.prefix) && f.prefix != '' && " + names +
         ".exists(n, n.startsWith(f.prefix) && n != f.prefix)))";
}

// gpu_device_access.cpp: check_volume_mounts
std::string container_mount_matches(const std::string& c, const PathRegex& re) {
  return "has(" + c + ".volumeMounts) && " + c + ".volumeMounts.exists(m, has(m.mountPath) && " +
         path_matches("m.mountPath", re) + ")";
}

// gpu_device_access.cpp: check_host_paths
std::string host_path_matches(const std::string& spec, const PathRegex& re) {
  return "has(" + spec + ".volumes) && " + spec + ".volumes.exists(v, has(v.hostPath) && has(v.hostPath.path) && " +
         path_matches("v.hostPath.path", re) + ")";
}

// gpu_device_access.cpp: annotation_matches
std::string device_annotation(const policy::CompiledPolicy& policy, const std::string& meta) {
  std::vector<std::string> bare;
  for (const auto& p : policy.device_annotation_prefixes())
    if (p.size() > 1 && p.back() == '/') bare.push_back(p.substr(0, p.size() - 1));
  std::string test = quote_list(policy.device_annotation_prefixes()) + ".exists(p, k.startsWith(p))";
  if (!bare.empty()) test += " || k in " + quote_list(bare);
  return "has(" + meta + ".annotations) && " + meta + ".annotations.exists(k, " + test + ")";
}

// tolerations.cpp: toleration_matches
std::string tolerates(const std::string& spec, const policy::Taint& taint) {
  const std::string key = "(has(tol.key) ? tol.key : '')";
  const std::string op = "(has(tol.operator) ? tol.operator : '')";
  return "has(" + spec + ".tolerations) && " + spec + ".tolerations.exists(tol, " +
         "(!has(tol.effect) || tol.effect == '' || tol.effect == " + quote(taint.effect) + ") && (" + op +
         " == 'Exists' ? (" + key + " == '' || " + key + " == " + quote(taint.key) + ") : (" + op +
         " in ['Equal', ''] && " + key + " == " + quote(taint.key) + " && (has(tol.value) ? tol.value : '') == " +
         quote(taint.value) + ")))";
}

// gpu_request.cpp: compute_gpu_request, as a lower bound
std::string pod_gpus_exceed(const policy::CompiledPolicy& policy, const std::string& spec, const std::string& cap,
                            const std::string& converted) {
  const std::string units = container_units(policy, "c", converted);
  const std::string app = "(has(" + spec + ".containers) ? " + spec + ".containers.map(c, " + units + ") : [])";
  const std::string sidecars = "(has(" + spec + ".initContainers) ? " + spec +
                               ".initContainers.filter(c, has(c.restartPolicy) && c.restartPolicy == 'Always').map(c, " +
                               units + ") : [])";
  const std::string init = "has(" + spec + ".initContainers) && " + spec + ".initContainers.exists(c, " + units +
                           " > " + cap + ")";
  return "[" + app + " + " + sidecars + "].exists(u, " + sum_first("u", 16) + " > " + cap + ") ||\n" + init;
}

// gpu_device_access.cpp: check_admin_access, for the claim object itself
std::string claim_admin_access(const policy::CompiledPolicy& policy, const std::string& root) {
  return any_claim_subrequest(policy, root, "has(s.adminAccess) && s.adminAccess == true");
}

// device_tolerations.cpp: find_disallowed_tolerations
std::string claim_disallowed_toleration(const policy::CompiledPolicy& policy, const std::string& root) {
  std::vector<std::string> allowed;
  for (const auto& a : policy.device_tolerations()) allowed.push_back(toleration_allowed(a));
  std::string any_allowed = "false";
  if (!allowed.empty()) {
    any_allowed.clear();
    for (size_t i = 0; i < allowed.size(); ++i) any_allowed += (i ? " || " : "") + allowed[i];
  }
  return any_claim_subrequest(policy, root, "has(s.tolerations) && s.tolerations.exists(tol, !(" + any_allowed + "))");
}

}  // namespace gpu_admission::webhook::backstop
