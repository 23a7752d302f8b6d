#include "webhook/ops/rollout_log.h"

#include <algorithm>

namespace gpu_admission::webhook {

Json rollout_fields(const policy::CompiledPolicy& policy) {
  Json tenants = Json::object();
  for (const auto& tenant : policy.tenants()) tenants[tenant.name] = policy::name_of(tenant.mode);
  const auto cap = policy.enforcement_cap();
  return {{"enforcement", policy::name_of(policy.mode_for(nullptr))},
          {"enforcementCap", cap ? Json(policy::name_of(*cap)) : Json(nullptr)},
          {"tenants", tenants}};
}

void warn_modes_over_cap(Logger& logger, const policy::CompiledPolicy& policy) {
  const auto cap = policy.enforcement_cap();
  if (!cap) return;
  const auto& config = policy.config();
  for (size_t t = 0; t < config.tenants.size(); ++t) {
    // Only a tenant's own setting: a mode inherited from spec.enforcement under a lower cap is
    // the documented way to observe (the policy says what will be enforced, the chart holds it).
    if (!config.tenants[t].enforcement) continue;
    const policy::Enforcement own = *config.tenants[t].enforcement;
    if (static_cast<int>(own) >= static_cast<int>(*cap)) continue;
    logger.warn("a tenant's mode is above serve --enforcement and has no effect",
                {{"tenant", config.tenants[t].name},
                 {"tenantMode", policy::name_of(own)},
                 {"enforcementCap", policy::name_of(*cap)},
                 {"effectiveMode", policy::name_of(policy.tenants()[t].mode)},
                 {"hint", "raise the chart's enforcement value (serve --enforcement) to let this tenant enforce"}});
  }
}

void ExceptionExpiryLog::policy_in_force(const policy::CompiledPolicy& policy, int64_t now) {
  std::lock_guard lock(mutex_);
  pending_.clear();
  for (const auto& e : policy.exceptions()) {
    if (!e.expires) continue;
    Pending p{e.name, e.reason, e.expires_text, *e.expires, Json::array()};
    for (size_t r = 0; r < policy::kRuleCount; ++r)
      if (e.rules[r]) p.rules.push_back(policy::kRuleNames[r]);
    if (now >= p.expires) log_expired(p, now);  // loaded already expired: said once, at load
    else pending_.push_back(std::move(p));
  }
}

void ExceptionExpiryLog::tick(int64_t now) {
  std::lock_guard lock(mutex_);
  auto expired = [&](const Pending& p) { return now >= p.expires; };
  for (const Pending& p : pending_)
    if (expired(p)) log_expired(p, now);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), expired), pending_.end());
}

void ExceptionExpiryLog::log_expired(const Pending& p, int64_t now) {
  logger_.warn("exception expired: its rules apply again to what it selected",
               {{"exception", p.name},
                {"reason", p.reason},
                {"rules", p.rules},
                {"expires", p.expires_text},
                {"expiredSeconds", now - p.expires},
                {"hint", "extend spec.exceptions[].expires in the policy if the exception is still needed"}});
}

}  // namespace gpu_admission::webhook
