// Assembling the backstop's objects; see backstop.h.
#include "webhook/backstop/backstop.h"

#include <algorithm>
#include <array>
#include <ctime>

#include "webhook/backstop/cel_text.h"
#include "webhook/backstop/pod_sources.h"
#include "webhook/backstop/rule_checks.h"
#include "webhook/backstop/tenancy_cel.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::backstop {
namespace {

using policy::Action;
using policy::RuleId;

constexpr std::array<Action, 3> kActions = {Action::Deny, Action::Warn, Action::Audit};
constexpr const char* kValidationAction[] = {"Deny", "Warn", "Audit"};

const std::string kNewEphemeral =
    "has(request.operation) && request.operation == 'UPDATE' && oldObject != null && variables.kind == 'Pod' && "
    "has(object.spec) && has(object.spec.ephemeralContainers) ?\n"
    "object.spec.ephemeralContainers.filter(c, !(has(oldObject.spec) && has(oldObject.spec.ephemeralContainers) && "
    "oldObject.spec.ephemeralContainers.exists(o, has(o.name) && has(c.name) && o.name == c.name))) : []";

// variables.cap: the tenant's maxGpusPerPod, else defaults.maxGpusPerPod, else -1 (no cap).
std::string cap_expr(const policy::CompiledPolicy& policy) {
  auto cap_of = [&](const policy::Tenant* t) {
    auto cap = policy.max_gpus_for(t);
    return cap ? std::to_string(*cap) : std::string("-1");
  };
  std::string out;
  for (const auto& t : policy.tenants())
    if (cap_of(&t) != cap_of(nullptr)) out += "variables.tenant == " + quote(t.name) + " ? " + cap_of(&t) + " :\n";
  return out + cap_of(nullptr);
}

struct Variable {
  const char* name;
  std::string expression;
};

// The variables the policy's expressions read, in an order where each reads only earlier ones.
Json variables_for(const std::vector<Variable>& all, const std::vector<std::string>& expressions) {
  std::vector<bool> used(all.size(), false);
  auto mark = [&](const std::string& text) {
    for (size_t i = 0; i < all.size(); ++i)
      if (text.find("variables." + std::string(all[i].name)) != std::string::npos) used[i] = true;
  };
  for (const auto& e : expressions) mark(e);
  for (size_t pass = 0; pass < all.size(); ++pass)
    for (size_t i = 0; i < all.size(); ++i)
      if (used[i]) mark(all[i].expression);
  Json out = Json::array();
  for (size_t i = 0; i < all.size(); ++i)
    if (used[i]) out.push_back({{"name", all[i].name}, {"expression", all[i].expression}});
  return out;
}

Json metadata(const std::string& name, const policy::CompiledPolicy& policy, RuleId rule, Action action) {
  return {{"name", name},
          {"labels", {{"app.kubernetes.io/name", "gpu-admission"}, {"app.kubernetes.io/component", "backstop"}}},
          {"annotations",
           {{"gpu-admission.io/rule", std::string(policy::name_of(rule))},
            {"gpu-admission.io/action", std::string(policy::name_of(action))},
            {"gpu-admission.io/policy", policy.name()},
            {"gpu-admission.io/policy-hash", policy.hash()}}}};
}

// What every policy of the export shares.
struct Shared {
  std::vector<Variable> variables;
  Json exempt_selector;
  Json conditions;
};

// The policy and binding of one rule for the tenants whose action is `action`.
void add_policy(Export& out, const policy::CompiledPolicy& policy, const Shared& shared, RuleId rule, Action action,
                const std::string& name, const RulePlan& plan, const std::string& applies) {
  Json validations = Json::array();
  std::vector<std::string> expressions;
  for (const Check& c : plan.checks) {
    std::string expr = "!(" + c.violation + ")";
    if (applies != "true") expr = "!variables.applies ||\n" + expr;
    expressions.push_back(expr);
    validations.push_back({{"expression", expr}, {"message", c.message}, {"reason", "Forbidden"}});
  }
  std::vector<Variable> vars = shared.variables;
  vars.push_back({"applies", applies});
  Json constraints = Json::object();
  if (!shared.exempt_selector.is_null()) constraints["namespaceSelector"] = shared.exempt_selector;
  Json rules = template_resource_rules(policy, plan.pod_updates);
  if (plan.claims)
    rules.push_back({{"apiGroups", {"resource.k8s.io"}},
                     {"apiVersions", {"*"}},
                     {"operations", {"CREATE"}},
                     {"resources", {"resourceclaims", "resourceclaimtemplates"}}});
  constraints["resourceRules"] = rules;
  Json spec = {{"failurePolicy", "Fail"}, {"matchConstraints", constraints}};
  if (!shared.conditions.empty()) spec["matchConditions"] = shared.conditions;
  Json v = variables_for(vars, expressions);
  if (!v.empty()) spec["variables"] = v;
  spec["validations"] = validations;
  out.objects.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                         {"kind", "ValidatingAdmissionPolicy"},
                         {"metadata", metadata(name, policy, rule, action)},
                         {"spec", spec}});
  out.objects.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                         {"kind", "ValidatingAdmissionPolicyBinding"},
                         {"metadata", metadata(name, policy, rule, action)},
                         {"spec",
                          {{"policyName", name},
                           {"validationActions", {kValidationAction[static_cast<size_t>(action)]}}}}});
}

void add_note(std::vector<std::string>& notes, std::string note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
}

std::string time_text(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Export export_policy(const policy::CompiledPolicy& policy, const ExportOptions& options) {
  Export out;
  std::vector<std::string> notes;
  Shared shared;
  shared.variables = {{"kind", kind_expr()},
                      {"apiVersion", api_version_expr()},
                      {"exempt", exempt_expr(policy)},
                      {"tenant", tenant_expr(policy)},
                      {"templates", template_groups(policy, "object", notes)},
                      {"isCreate", "!has(request.operation) || request.operation == 'CREATE'"},
                      {"newEphemeralContainers", kNewEphemeral},
                      {"cap", cap_expr(policy)}};
  shared.exempt_selector = exempt_namespace_selector(policy);
  shared.conditions = exemption_conditions(policy);
  for (size_t r = 0; r < policy::kRuleCount; ++r) {
    const auto rule = static_cast<RuleId>(r);
    const std::string rule_name(policy::name_of(rule));
    PlanContext ctx{policy, rule, {}};
    std::vector<std::string> request_exceptions;
    for (const auto* e : exceptions_for(policy, rule, options.now)) {
      if (!e->pod_labels.empty()) ctx.label_exceptions.push_back(e);
      else request_exceptions.push_back(exception_matches_request(policy, *e));
      if (e->expires)
        add_note(notes, "exception " + e->name + " (expires " + time_text(*e->expires) + ") stays in force in the "
                        "backstop until the policy is exported again");
    }
    std::vector<Action> present;
    for (Action a : kActions) {
      const TenantClass c = tenants_with_action(policy, rule, a);
      if (c.no_tenant || !c.tenants.empty()) present.push_back(a);
    }
    if (present.empty()) {
      add_note(notes, rule_name + ": off for every tenant (no policy)");
      continue;
    }
    std::optional<RulePlan> plan = plan_rule(ctx, notes);
    if (!plan) continue;
    for (auto& n : plan->notes) add_note(notes, std::move(n));
    if (plan->checks.empty()) continue;  // nothing this policy could refuse (the notes say why)
    for (Action a : present) {
      std::vector<std::string> applies_parts;
      if (!shared.conditions.empty()) applies_parts.push_back("!variables.exempt");
      if (std::string in = tenant_in(tenants_with_action(policy, rule, a)); in != "true") applies_parts.push_back(in);
      if (!request_exceptions.empty()) applies_parts.push_back("!" + any_of(request_exceptions));
      const std::string applies = all_of(applies_parts);
      std::string name = "gpu-admission-" + rule_name;
      if (present.size() > 1) name += "-" + std::string(policy::name_of(a));
      add_policy(out, policy, shared, rule, a, name, *plan, applies);
    }
    if (std::any_of(policy.tenants().begin(), policy.tenants().end(),
                    [&](const policy::Tenant& t) { return policy.action(rule, &t) == Action::Off; }) ||
        policy.action(rule, nullptr) == Action::Off)
      add_note(notes, rule_name + ": off for some tenants (their pods are not checked)");
  }
  add_note(notes, "UPDATEs of workloads, and of pods apart from the ephemeral containers, annotations and tenant "
                  "labels they add (a workload's pods are checked when they are created)");
  out.not_expressed = std::move(notes);
  return out;
}

std::string export_yaml(const Export& e, const policy::CompiledPolicy& policy, const ExportOptions& options) {
  std::string out = "# The gpu-admission backstop: ValidatingAdmissionPolicies exported from policy \"" + policy.name() +
                    "\" (hash " + policy.hash() + (options.source.empty() ? "" : ", " + options.source) + ")\n"
                    "# by `gpu-admission policy export --format vap`. The API server runs them itself, so they act\n"
                    "# while the webhook cannot be reached. They never refuse what the webhook admits; these parts\n"
                    "# of the policy are left to the webhook (not expressed):\n";
  for (const auto& n : e.not_expressed) out += "#   - " + n + "\n";
  for (const auto& object : e.objects) out += "---\n" + to_yaml(object, {.literal_blocks = true});
  return out;
}

}  // namespace gpu_admission::webhook::backstop
