// Policy lint: one small check per footgun, run in table order. Each check reads the
// PolicyConfig only and reports through Lint::warn with the offending field's path.
#include "policy/config/lint.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/glob.h"
#include "policy/base/ids.h"
#include "policy/config/template_paths.h"

namespace gpu_admission::policy {
namespace {

// Usernames the kube-controller-manager creates pods as. Exempting any of them exempts every
// pod created by a workload controller.
constexpr std::array<std::string_view, 8> kControllerUsernames = {
    "system:serviceaccount:kube-system:replicaset-controller",
    "system:serviceaccount:kube-system:deployment-controller",
    "system:serviceaccount:kube-system:daemon-set-controller",
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:serviceaccount:kube-system:job-controller",
    "system:serviceaccount:kube-system:cronjob-controller",
    "system:serviceaccount:kube-system:replication-controller",
    "system:kube-controller-manager",
};

constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";
// A namespace no policy names: a pattern that matches an account in it matches accounts in
// namespaces a tenant creates.
constexpr std::string_view kProbeNamespace = "tenant-made-ns-0";

struct Lint {
  const PolicyConfig& config;
  const SourceMap& marks;
  Issues& issues;
  int64_t now;  // Unix seconds, or kUnknownTime

  void warn(std::string path, std::string message) {
    SourceMark mark = marks.find(path);
    issues.push_back({Issue::Severity::Warning, std::move(path), std::move(message), mark});
  }
};

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// `tenant "a" has` or `tenants "a", "b" have`.
std::string names_text(std::string_view noun, const std::vector<std::string>& names, std::string_view one_verb,
                       std::string_view many_verb) {
  std::string out = std::string(noun) + (names.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + quote(names[i]);
  return out + " " + std::string(names.size() == 1 ? one_verb : many_verb);
}

bool dns_label_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// `user` is system:serviceaccount:<namespace>:<name> with a plausible namespace and name.
bool service_account_username(std::string_view user) {
  if (!user.starts_with(kServiceAccountPrefix)) return false;
  std::string_view rest = user.substr(kServiceAccountPrefix.size());
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) return false;
  for (char c : rest.substr(0, colon))
    if (!dns_label_char(c)) return false;
  for (char c : rest.substr(colon + 1))
    if (!dns_label_char(c) && c != '.') return false;
  return true;
}

// True when a `*` of `pattern` stands for (part of) a service account's namespace: the first `*`
// comes inside the namespace segment, or earlier and the pattern still matches an account in a
// namespace it does not name.
bool glob_spans_sa_namespace(std::string_view pattern) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return false;
  const std::string_view before = pattern.substr(0, star);
  if (before.starts_with(kServiceAccountPrefix))
    return before.substr(kServiceAccountPrefix.size()).find(':') == std::string_view::npos;
  const std::string base = std::string(kServiceAccountPrefix) + std::string(kProbeNamespace);
  const std::string_view tail = pattern.substr(pattern.rfind('*') + 1);
  for (const std::string& user : {base + ":probe", base + ":probe" + std::string(tail), base + std::string(tail)})
    if (service_account_username(user) && glob_match(pattern, user)) return true;
  return false;
}

void namespace_star(Lint& l) {
  for (size_t i = 0; i < l.config.exempt_namespaces.size(); ++i)
    if (l.config.exempt_namespaces[i] == "*")
      l.warn(index_path("spec.exemptions.namespaces", i), "exempts every namespace: no rule or mutation will ever run");
}

void controller_usernames(Lint& l) {
  for (size_t i = 0; i < l.config.exempt_usernames.size(); ++i) {
    const std::string& pattern = l.config.exempt_usernames[i];
    for (auto controller : kControllerUsernames) {
      if (!glob_match(pattern, controller)) continue;
      l.warn(index_path("spec.exemptions.usernames", i),
             quote(pattern) + " matches the controller username " + quote(controller) +
                 ": every pod created by a Deployment, Job, DaemonSet or StatefulSet would skip all rules");
      break;
    }
  }
}

void service_account_namespace_globs(Lint& l) {
  for (size_t i = 0; i < l.config.exempt_usernames.size(); ++i) {
    const std::string& pattern = l.config.exempt_usernames[i];
    if (!glob_spans_sa_namespace(pattern)) continue;
    l.warn(index_path("spec.exemptions.usernames", i),
           quote(pattern) + " has a * in the service-account namespace: it matches an account in a namespace a "
                            "tenant can create, whose pods would skip all rules; name the namespace");
  }
}

// Sharing modes that give the pods on one GPU no memory or fault isolation from one another: in
// an adversarial pool, the rule named denies every GPU pod.
void adversarial_sharing(Lint& l) {
  for (size_t i = 0; i < l.config.pools.size(); ++i) {
    const PoolConfig& pc = l.config.pools[i];
    if (pc.trust != Trust::Adversarial) continue;
    if (pc.sharing == Sharing::Mps)
      l.warn(index_path("spec.pools", i) + ".sharing",
             "pool " + quote(pc.name) + " is adversarial but shares GPUs with MPS: MPS gives no memory or fault "
             "isolation between tenants, and mps-adversarial will deny every GPU pod here");
    if (pc.sharing == Sharing::TimeSlicing)
      l.warn(index_path("spec.pools", i) + ".sharing",
             "pool " + quote(pc.name) + " is adversarial but shares GPUs by time-slicing: time-slicing gives no "
             "memory or fault isolation between tenants, and gpu-sharing will deny every GPU pod here");
  }
}

void mig_with_sharing(Lint& l) {
  for (size_t i = 0; i < l.config.pools.size(); ++i) {
    const PoolConfig& pc = l.config.pools[i];
    if (pc.mig_strategy != MigStrategy::None && pc.sharing != Sharing::None)
      l.warn(index_path("spec.pools", i) + ".sharing",
             "MIG and " + std::string(kSharingNames[static_cast<size_t>(pc.sharing)]) +
                 " sharing together: check that the device plugin is configured for both");
  }
}

void tenant_without_default_pool(Lint& l) {
  for (size_t i = 0; i < l.config.tenants.size(); ++i) {
    const TenantConfig& tc = l.config.tenants[i];
    if (tc.pools.empty() || !tc.default_pool.empty()) continue;
    l.warn(index_path("spec.tenants", i) + ".defaultPool",
           "tenant " + quote(tc.name) + " has pools but no defaultPool: its GPU pods that name no pool are not "
           "pinned, and tenant-pool denies them");
  }
}

void pool_selector_off(Lint& l) {
  if (l.config.mutations[static_cast<size_t>(MutationId::PoolSelector)]) return;
  std::vector<std::string> tenants;
  for (const auto& tc : l.config.tenants)
    if (!tc.default_pool.empty()) tenants.push_back(tc.name);
  if (tenants.empty()) return;
  l.warn(child_path("spec.mutations", "pool-selector"),
         "off while " + names_text("tenant", tenants, "has", "have") + " a defaultPool: GPU pods that name no pool "
         "are not pinned, and tenant-pool denies them (or, not on deny, lets them run on any GPU node)");
}

void mig_resources_off(Lint& l) {
  if (l.config.mutations[static_cast<size_t>(MutationId::MigResources)]) return;
  std::vector<std::string> pools;
  for (const auto& pc : l.config.pools)
    if (pc.mig_strategy != MigStrategy::None) pools.push_back(pc.name);
  if (pools.empty()) return;
  l.warn(child_path("spec.mutations", "mig-resources"),
         "off while " + names_text("pool", pools, "uses", "use") + " MIG: GPU requests there are not turned into "
         "MIG devices or pinned to a MIG product, and mig-profile denies them");
}

void gpu_cap_not_deny(Lint& l) {
  const Action action = l.config.rule_actions[static_cast<size_t>(RuleId::GpuCap)];
  if (action == Action::Deny) return;
  l.warn(child_path("spec.rules", "gpu-cap"),
         "is " + std::string(name_of(action)) + ", not deny: GPU caps and fractional or oversized GPU quantities "
         "are not enforced, so any pod may take more GPUs than its cap");
}

// A namespace a tenant is chosen for by its labels has no tenant while its labels are unknown
// (cluster state off, or a namespace not yet seen); with `allow`, a GPU pod there gets any pool
// and no cap.
void unmapped_allow_with_selectors(Lint& l) {
  if (l.config.unmapped_gpu_pods != UnmappedGpuPods::Allow) return;
  std::vector<std::string> tenants;
  for (const auto& t : l.config.tenants)
    if (t.namespace_selector) tenants.push_back(t.name);
  if (tenants.empty()) return;
  l.warn(child_path("spec.defaults", "unmappedGpuPods"),
         "is allow while " + names_text("tenant", tenants, "is", "are") + " chosen by namespaceSelector: a GPU pod "
         "in a namespace whose labels are not known (serve --cluster off; check without its Namespace object) has no "
         "tenant, so it is admitted in any pool with no cap; use deny");
}

// Why a spec.workloads template path that parses looks wrong, or "" when it looks right: pod
// templates live under spec and end in a field named like "template" ("workerTemplate").
std::string suspicious_template_path(const TemplatePath& path) {
  if (path.steps.empty() || path.steps.front().name != "spec")
    return "does not start at spec: pod templates of workloads live under spec";
  const PathStep& last = path.steps.back();
  if (last.kind != PathStep::Kind::Field) return "ends in * or [*]: every value there is taken for a pod template";
  std::string lower;
  for (char c : last.name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower.size() < 8 || lower.compare(lower.size() - 8, 8, "template") != 0)
    return "ends in \"" + last.name + "\", not a field named like template: is this the pod template?";
  return "";
}

void workload_paths(Lint& l) {
  for (size_t i = 0; i < l.config.workloads.size(); ++i) {
    const WorkloadConfig& w = l.config.workloads[i];
    const std::string at = index_path("spec.workloads", i);
    if (find_builtin_ml_kind(api_group_of(w.api_version), w.kind))
      l.warn(at + ".kind", "replaces the built-in template paths of " + w.kind + " (" + w.api_version + ")");
    for (size_t j = 0; j < w.templates.size(); ++j) {
      TemplatePath path;
      if (parse_template_path(w.templates[j], path)) continue;  // an error, reported by the loader
      std::string why = suspicious_template_path(path);
      if (!why.empty()) l.warn(index_path(at + ".templates", j), "\"" + w.templates[j] + "\" " + why);
    }
  }
}

// A pool's `runtimeClasses: []` inherits spec.runtimeClasses (fail closed: an empty list left by
// a template must not open the pool to every runtime); whoever wrote it may have meant "any".
void pool_runtime_classes_empty(Lint& l) {
  if (l.config.runtime_classes.empty()) return;
  for (size_t i = 0; i < l.config.pools.size(); ++i) {
    const PoolConfig& pc = l.config.pools[i];
    if (!pc.runtime_classes || !pc.runtime_classes->empty()) continue;
    l.warn(index_path("spec.pools", i) + ".runtimeClasses",
           "is empty, so pool " + quote(pc.name) + " inherits spec.runtimeClasses; an empty list does not allow "
           "every runtime class (list the classes the pool allows, or leave the field out)");
  }
}

// An allowed device toleration with no key tolerates every device taint: tenants may then be
// handed GPUs fenced as broken or reserved for someone else.
void device_toleration_wildcard(Lint& l) {
  for (size_t i = 0; i < l.config.device_tolerations.size(); ++i) {
    const TolerationConfig& t = l.config.device_tolerations[i];
    if (!t.key.empty()) continue;
    l.warn(index_path("spec.deviceTolerations", i),
           "has no key: tenants' DRA requests may tolerate every device taint" +
               std::string(t.effect.empty() ? "" : " with effect " + t.effect) +
               ", including taints that fence broken GPUs or reserve GPUs for others");
  }
}

// An exception that has expired does nothing; one that expires within kExpiryNoticeSeconds is
// about to start denying what it lets through today.
void exception_expiry(Lint& l) {
  if (l.now == kUnknownTime) return;
  for (size_t i = 0; i < l.config.exceptions.size(); ++i) {
    const ExceptionConfig& e = l.config.exceptions[i];
    if (!e.expires) continue;
    const std::string path = index_path("spec.exceptions", i) + ".expires";
    if (*e.expires <= l.now) {
      l.warn(path, "exception " + quote(e.name) + " expired at " + e.expires_text + " and does nothing; remove it");
    } else if (*e.expires - l.now <= kExpiryNoticeSeconds) {
      const int64_t days = (*e.expires - l.now) / 86400;
      l.warn(path, "exception " + quote(e.name) + " expires at " + e.expires_text + " (" +
                       (days == 0 ? std::string("within a day") : "in " + std::to_string(days) + " days") +
                       "): its rules then apply again to what it selects; renew it or fix what it excepts");
    }
  }
}

// Rules an exception must not hand out by pod labels: the security rules and the GPU rules
// (their categories in rules.def). A pod's labels are the tenant's to write, so a podLabels
// selector narrows nothing a tenant wants.
constexpr uint8_t kLabelSensitiveCategories = kSecurityRule | kGpuRule;

// "privileged, gpu-cap": the rules of `e` of a category in `categories`, in the exception's order.
std::string rules_in(const ExceptionConfig& e, uint8_t categories) {
  std::string out;
  for (RuleId rule : e.rules)
    if (info_of(rule).in(categories)) out += (out.empty() ? "" : ", ") + std::string(name_of(rule));
  return out;
}

std::string exception_at(size_t i) { return index_path("spec.exceptions", i); }

// A pod's labels are the tenant's to write: an exception that selects by them for a security or
// GPU rule is one any pod can claim within what its other selectors match.
void exception_pod_labels(Lint& l) {
  for (size_t i = 0; i < l.config.exceptions.size(); ++i) {
    const ExceptionConfig& e = l.config.exceptions[i];
    if (e.pod_labels.empty()) continue;
    const std::string rules = rules_in(e, kLabelSensitiveCategories);
    if (rules.empty()) continue;
    const bool scoped = !e.namespaces.empty() || !e.tenants.empty() || !e.usernames.empty();
    l.warn(exception_at(i) + ".podLabels",
           "exception " + quote(e.name) + " selects by podLabels for " + rules +
               ": a pod's labels are the tenant's to write, so any pod " +
               (scoped ? "its other selectors match" : "of any tenant") +
               " can claim it; select by namespaces or tenants instead");
  }
}

// A username glob whose * spans a service-account namespace matches an account any tenant can
// create in its own namespace.
void exception_service_account_globs(Lint& l) {
  for (size_t i = 0; i < l.config.exceptions.size(); ++i) {
    const ExceptionConfig& e = l.config.exceptions[i];
    for (size_t j = 0; j < e.usernames.size(); ++j) {
      if (!glob_spans_sa_namespace(e.usernames[j])) continue;
      l.warn(index_path(exception_at(i) + ".usernames", j),
             quote(e.usernames[j]) + " has a * in the service-account namespace: it matches an account in a namespace "
             "a tenant can create, so any tenant can claim exception " + quote(e.name) +
             "; name the namespace, or select by namespaces or tenants");
    }
  }
}

// True when the glob matches every name: it is made of `*` alone.
bool matches_everything(std::string_view glob) {
  return !glob.empty() && glob.find_first_not_of('*') == std::string_view::npos;
}

// An exception that names no tenant and no namespace (or a namespace glob of `*` alone) covers
// every namespace, those tenants create included.
void exception_every_namespace(Lint& l) {
  for (size_t i = 0; i < l.config.exceptions.size(); ++i) {
    const ExceptionConfig& e = l.config.exceptions[i];
    if (!e.tenants.empty()) continue;
    if (e.namespaces.empty()) {
      l.warn(exception_at(i), "exception " + quote(e.name) + " has neither namespaces nor tenants: it covers every "
                              "namespace, so any tenant can claim it; select by namespaces or tenants");
      continue;
    }
    for (size_t j = 0; j < e.namespaces.size(); ++j) {
      if (!matches_everything(e.namespaces[j])) continue;
      l.warn(index_path(exception_at(i) + ".namespaces", j),
             quote(e.namespaces[j]) + " matches every namespace and exception " + quote(e.name) +
                 " names no tenants: any tenant can claim it; name the namespaces, or select by tenants");
      break;
    }
  }
}

// Claims are judged again when the scheduler allocates them (serve with the chart always does), a
// commit point where the pod is judged in full, and the scheduler, not the user, writes the claim's
// status: a username exception or exemption does not apply there, so a pod with DRA claims that it
// admitted is refused its devices, whichever rules it turns off.
void usernames_at_allocation(Lint& l) {
  for (size_t i = 0; i < l.config.exceptions.size(); ++i) {
    const ExceptionConfig& e = l.config.exceptions[i];
    if (e.usernames.empty()) continue;
    std::string rules;
    for (RuleId rule : e.rules) rules += (rules.empty() ? "" : ", ") + std::string(name_of(rule));
    l.warn(exception_at(i) + ".usernames",
           "exception " + quote(e.name) + " turns off " + rules + " by username, but at allocation the scheduler, "
           "not the user, writes the claim status and the pod is judged in full: the exception does not apply "
           "there, so a pod with DRA claims it admitted never gets its devices; select by namespaces or tenants "
           "instead");
  }
  if (l.config.exempt_usernames.empty()) return;
  l.warn("spec.exemptions.usernames",
         "at allocation the scheduler, not the user, writes the claim status and the pod is judged in full: a "
         "username exemption does not apply there, so a pod with DRA claims it admitted never gets its devices; "
         "exempt namespaces instead");
}

using Check = void (*)(Lint&);
constexpr std::array<Check, 18> kChecks = {
    namespace_star,      controller_usernames,        service_account_namespace_globs,
    adversarial_sharing, mig_with_sharing,            tenant_without_default_pool,
    pool_selector_off,   mig_resources_off,           gpu_cap_not_deny,
    workload_paths,      unmapped_allow_with_selectors,
    pool_runtime_classes_empty, device_toleration_wildcard,
    exception_expiry,    exception_pod_labels,        exception_service_account_globs,
    exception_every_namespace,  usernames_at_allocation,
};

}  // namespace

void lint_notes(const PolicyConfig& config, Issues& notes) {
  if (config.rule_actions[static_cast<size_t>(RuleId::GpuDeviceAccess)] == Action::Off) return;
  // Since Kubernetes 1.33 only a namespace labelled resource.kubernetes.io/admin-access: "true" may
  // create claims with adminAccess; gpu-device-access refuses them wherever it runs.
  const std::string what =
      "DRA adminAccess reaches GPUs allocated to other pods: gpu-device-access refuses it in every namespace that is "
      "not exempt, also in one the API server lets use it (label resource.kubernetes.io/admin-access: \"true\")";
  if (config.exempt_namespaces.empty()) {
    notes.push_back({Issue::Severity::Note, "spec.exemptions.namespaces",
                     what + "; no namespace is exempt, so no pod may use it: exempt the platform namespace whose "
                            "tools need it (device monitoring, health checks)",
                     {}});
    return;
  }
  std::string names;
  for (const auto& ns : config.exempt_namespaces) names += (names.empty() ? "" : ", ") + quote(ns);
  notes.push_back({Issue::Severity::Note, "spec.exemptions.namespaces",
                   what + ": run the tools that need it (device monitoring, health checks) in an exempt platform "
                          "namespace (" + names + ")",
                   {}});
}

void lint_policy(const PolicyConfig& config, const SourceMap& marks, Issues& issues, int64_t now) {
  Lint lint{config, marks, issues, now};
  for (Check check : kChecks) check(lint);
}

}  // namespace gpu_admission::policy
