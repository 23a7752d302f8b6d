// What the operator reads of a staged rollout in serve's log: each tenant's effective mode at
// start-up and reload (a warning for a tenant whose own mode the --enforcement cap overrides),
// and one line when an exception expires (at the moment it does, or at load for one that already
// has), so that the first refusals an expired exception lets through are not a surprise.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/compiled_policy.h"
#include "webhook/ops/logger.h"

namespace gpu_admission::webhook {

// {"enforcement": mode of namespaces of no tenant, "enforcementCap": cap or null,
//  "tenants": {name: mode}}: for the "gpu-admission serving" and "policy reloaded" lines.
Json rollout_fields(const policy::CompiledPolicy& policy);

// Warns once per load about each tenant whose own tenants[].enforcement is stronger than the
// cap, which then has no effect (a mode inherited from spec.enforcement is not warned about).
void warn_modes_over_cap(Logger& logger, const policy::CompiledPolicy& policy);

// Logs "exception expired" once per exception and policy: call policy_in_force() with each
// policy set (start-up, reload) and tick() now and then. Thread-safe.
class ExceptionExpiryLog {
 public:
  explicit ExceptionExpiryLog(Logger& logger) : logger_(logger) {}
  void policy_in_force(const policy::CompiledPolicy& policy, int64_t now);
  void tick(int64_t now);

 private:
  struct Pending {
    std::string name;
    std::string reason;
    std::string expires_text;
    int64_t expires = 0;
    Json rules;
  };
  void log_expired(const Pending& pending, int64_t now);

  Logger& logger_;
  std::mutex mutex_;
  std::vector<Pending> pending_;  // of the policy in force, not yet expired
};

}  // namespace gpu_admission::webhook
