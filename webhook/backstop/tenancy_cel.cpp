// Namespaces, exemptions, tenants and exceptions in CEL; see tenancy_cel.h.
#include "webhook/backstop/tenancy_cel.h"

#include "policy/base/tenant_labels.h"
#include "webhook/backstop/cel_text.h"

namespace gpu_admission::webhook::backstop {
namespace {

using policy::LabelRequirement;

// namespaceObject's labels (a map; empty when it has none).
const std::string kNamespaceLabels =
    "(has(namespaceObject.metadata) && has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {})";

std::string requirement(const LabelRequirement& r) {
  const std::string key = quote(r.key), at = kNamespaceLabels + "[" + key + "]";
  const std::string present = key + " in " + kNamespaceLabels;
  switch (r.op) {
    case LabelRequirement::Op::In: return "(" + present + " && " + at + " in " + quote_list(r.values) + ")";
    case LabelRequirement::Op::NotIn: return "(!(" + present + ") || !(" + at + " in " + quote_list(r.values) + "))";
    case LabelRequirement::Op::Exists: return "(" + present + ")";
    case LabelRequirement::Op::DoesNotExist: return "!(" + present + ")";
  }
  return "false";
}

// Kubernetes label selector semantics on namespaceObject (an empty selector matches every namespace).
std::string selector_matches(const policy::LabelSelector& s) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : s.match_labels) parts.push_back(map_holds(kNamespaceLabels, k, v));
  for (const auto& r : s.match_expressions) parts.push_back(requirement(r));
  if (parts.empty()) return "true";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " && " : "") + parts[i];
  return out;
}

const std::string kUsername = "request.userInfo.username";
const std::string kHasUsername = "has(request.userInfo) && has(request.userInfo.username)";

}  // namespace

std::string namespace_expr() {
  return "(has(request.namespace) && request.namespace != '' ? request.namespace : "
         "(has(object.metadata) && has(object.metadata.namespace) ? object.metadata.namespace : ''))";
}

Json exempt_namespace_selector(const policy::CompiledPolicy& policy) {
  Json names = Json::array();
  for (const auto& ns : policy.config().exempt_namespaces)
    if (ns.find('*') == std::string::npos) names.push_back(ns);
  if (names.empty()) return nullptr;
  return Json{{"matchExpressions",
               Json::array({{{"key", "kubernetes.io/metadata.name"}, {"operator", "NotIn"}, {"values", names}}})}};
}

Json exemption_conditions(const policy::CompiledPolicy& policy) {
  Json out = Json::array();
  const auto& cfg = policy.config();
  if (!cfg.exempt_namespaces.empty())
    out.push_back({{"name", "not-an-exempt-namespace"},
                   {"expression", "!" + std::string("(") + matches_any(namespace_expr(), cfg.exempt_namespaces) + ")"}});
  if (!cfg.exempt_usernames.empty())
    out.push_back({{"name", "not-an-exempt-user"},
                   {"expression", "!(" + kHasUsername + " && " + matches_any(kUsername, cfg.exempt_usernames) + ")"}});
  return out;
}

std::string exempt_expr(const policy::CompiledPolicy& policy) {
  const auto& cfg = policy.config();
  std::vector<std::string> parts;
  if (!cfg.exempt_namespaces.empty()) parts.push_back(matches_any(namespace_expr(), cfg.exempt_namespaces));
  if (!cfg.exempt_usernames.empty()) parts.push_back(kHasUsername + " && " + matches_any(kUsername, cfg.exempt_usernames));
  return any_of(parts);
}

std::string tenant_expr(const policy::CompiledPolicy& policy) {
  std::string out;
  int open = 0;
  for (size_t i = 0; i < policy.tenants().size(); ++i) {
    const policy::Tenant& t = policy.tenants()[i];
    const policy::TenantConfig& cfg = policy.config().tenants[i];
    std::vector<std::string> how;
    if (!cfg.namespaces.empty()) how.push_back(matches_any(namespace_expr(), cfg.namespaces));
    if (t.namespace_selector) how.push_back(selector_matches(*t.namespace_selector));
    if (how.empty()) continue;
    std::string cond = how[0];
    if (how.size() > 1) cond = "(" + how[0] + ") || (" + how[1] + ")";
    out += "(" + cond + ") ? " + quote(t.name) + " :\n";
    ++open;
  }
  return open == 0 ? "''" : out + "''";
}

bool reads_namespace_labels(const policy::CompiledPolicy& policy) {
  for (const auto& t : policy.tenants())
    if (t.namespace_selector) return true;
  return false;
}

std::vector<const policy::PolicyException*> exceptions_for(const policy::CompiledPolicy& policy,
                                                           policy::RuleId rule, int64_t now) {
  std::vector<const policy::PolicyException*> out;
  for (const auto& e : policy.exceptions()) {
    if (!e.rules[static_cast<size_t>(rule)]) continue;
    if (e.expires && now != policy::kUnknownTime && now >= *e.expires) continue;  // already inert
    out.push_back(&e);
  }
  return out;
}

std::string exception_matches_request(const policy::CompiledPolicy& policy, const policy::PolicyException& e) {
  std::vector<std::string> parts;
  const policy::ExceptionConfig* cfg = nullptr;
  for (const auto& c : policy.config().exceptions)
    if (c.name == e.name) cfg = &c;
  if (cfg && !cfg->namespaces.empty()) parts.push_back(matches_any(namespace_expr(), cfg->namespaces));
  if (!e.tenants.empty()) {
    std::vector<std::string> names;
    for (const auto& t : policy.tenants())
      if (e.tenants[t.index]) names.push_back(t.name);
    parts.push_back("variables.tenant in " + quote_list(names));
  }
  if (cfg && !cfg->usernames.empty()) parts.push_back(kHasUsername + " && " + matches_any(kUsername, cfg->usernames));
  return all_of(parts);
}

std::string exception_labels_match(const policy::CompiledPolicy& policy, const policy::PolicyException& e,
                                   const std::string& labels) {
  const bool injected = policy.mutation_enabled(policy::MutationId::TenantLabels);
  std::vector<std::string> parts;
  for (const auto& [key, value] : e.pod_labels) {
    // Tenants the tenant-labels mutation gives this label and value.
    std::vector<std::string> injecting;
    for (const auto& t : policy.tenants()) {
      bool gives = key == policy::kTenantLabelKey && t.name == value;
      for (const auto& [k, v] : t.labels) gives = gives || (k == key && v == value);
      if (gives) injecting.push_back(t.name);
    }
    std::string absent = injected && !injecting.empty() ? "variables.tenant in " + quote_list(injecting) : "false";
    parts.push_back("(" + quote(key) + " in " + labels + " ? " + labels + "[" + quote(key) + "] == " + quote(value) +
                    " : " + absent + ")");
  }
  return all_of(parts);
}

TenantClass tenants_with_action(const policy::CompiledPolicy& policy, policy::RuleId rule, policy::Action action) {
  TenantClass c;
  c.no_tenant = policy.action(rule, nullptr) == action;
  bool all = c.no_tenant;
  for (const auto& t : policy.tenants()) {
    if (policy.action(rule, &t) == action) c.tenants.push_back(t.name);
    else all = false;
  }
  c.everyone = all;
  return c;
}

std::string tenant_in(const TenantClass& c) {
  if (c.everyone) return "true";
  std::vector<std::string> names = c.tenants;
  if (c.no_tenant) names.push_back("");
  if (names.empty()) return "false";
  return "variables.tenant in " + quote_list(names);
}

}  // namespace gpu_admission::webhook::backstop
