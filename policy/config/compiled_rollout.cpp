// The rollout part of a compiled policy: each tenant's mode (tenants[].enforcement, else
// spec.enforcement, capped by serve --enforcement), each rule's action per tenant (spec.rules, then
// tenants[].rules, as enforcement would act and capped by the mode) and spec.exceptions with their
// selectors compiled.
#include <algorithm>

#include "policy/config/compiled_policy.h"

namespace gpu_admission::policy {
namespace {

Action capped(Action action, Enforcement enforcement) {
  if (action == Action::Off) return action;
  switch (enforcement) {
    case Enforcement::Audit: return Action::Audit;
    case Enforcement::Warn: return action == Action::Deny ? Action::Warn : action;
    case Enforcement::Enforce: break;
  }
  return action;
}

std::array<Action, kRuleCount> capped_actions(std::array<Action, kRuleCount> actions, Enforcement enforcement) {
  for (Action& a : actions) a = capped(a, enforcement);
  return actions;
}

// The weaker of a mode and the cap (enforce is the strongest, audit the weakest).
Enforcement under_cap(Enforcement mode, std::optional<Enforcement> cap) {
  return cap && static_cast<int>(*cap) > static_cast<int>(mode) ? *cap : mode;
}

}  // namespace

void CompiledPolicy::compile_rollout(const SourceMap& marks, Issues& issues) {
  auto error = [&](const std::string& path, std::string message) {
    issues.push_back({Issue::Severity::Error, path, std::move(message), marks.find(path)});
  };
  mode_ = under_cap(config_.enforcement, cap_);
  enforced_actions_ = config_.rule_actions;
  actions_ = capped_actions(config_.rule_actions, mode_);
  for (size_t t = 0; t < tenants_.size(); ++t) {
    std::array<Action, kRuleCount> actions = config_.rule_actions;
    for (const auto& [rule, action] : config_.tenants[t].rules) actions[static_cast<size_t>(rule)] = action;
    tenants_[t].mode = under_cap(config_.tenants[t].enforcement.value_or(config_.enforcement), cap_);
    tenants_[t].enforced_actions = actions;
    tenants_[t].actions = capped_actions(actions, tenants_[t].mode);
  }

  std::vector<std::string_view> seen;
  for (size_t i = 0; i < config_.exceptions.size(); ++i) {
    const ExceptionConfig& ec = config_.exceptions[i];
    const std::string path = index_path("spec.exceptions", i);
    if (std::find(seen.begin(), seen.end(), ec.name) != seen.end())
      error(path + ".name", "exception \"" + ec.name + "\" is listed twice");
    seen.push_back(ec.name);
    PolicyException& e = exceptions_.emplace_back();
    e.name = ec.name;
    e.reason = ec.reason;
    for (RuleId rule : ec.rules) e.rules[static_cast<size_t>(rule)] = true;
    for (const auto& pattern : ec.namespaces) e.namespaces.add(pattern, 0);
    for (const auto& pattern : ec.usernames) e.usernames.add(pattern, 0);
    if (!ec.tenants.empty()) e.tenants.assign(tenants_.size(), false);
    for (size_t t = 0; t < ec.tenants.size(); ++t) {
      const Tenant* tenant = tenant_by_name(ec.tenants[t]);
      if (tenant) e.tenants[tenant->index] = true;
      else error(index_path(path + ".tenants", t), "unknown tenant \"" + ec.tenants[t] + "\"");
    }
    e.pod_labels = ec.pod_labels;
    e.expires = ec.expires;
    e.expires_text = ec.expires_text;
  }
}

}  // namespace gpu_admission::policy
