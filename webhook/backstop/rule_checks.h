// What each rule's ValidatingAdmissionPolicy checks: CEL that is true when an object breaks the
// rule, per part of the rule, with the message the API server returns, and what the backstop
// leaves of the rule to the webhook. The rule's policy (backstop.cpp) adds who it applies to.
//
// Variables the checks may read (defined by backstop.cpp): variables.templates (pod templates of
// the object, pod_sources.h), variables.isCreate, variables.newEphemeralContainers (containers an
// UPDATE of pods/ephemeralcontainers adds), variables.tenant, variables.cap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook::backstop {

struct Check {
  std::string violation;  // CEL: true when the object breaks this part of the rule
  std::string message;
};

struct RulePlan {
  std::vector<Check> checks;
  std::vector<std::string> pod_updates;  // "pods", "pods/ephemeralcontainers": UPDATEs checked too
  bool claims = false;                   // ResourceClaims and ResourceClaimTemplates are checked too
  std::vector<std::string> notes;        // parts of the rule the backstop leaves to the webhook
};

struct PlanContext {
  const policy::CompiledPolicy& policy;
  policy::RuleId rule;
  // The rule's exceptions that select by pod labels (the others are applied to the whole request).
  std::vector<const policy::PolicyException*> label_exceptions;
};

// The rule's checks; nullopt when no part of it can be checked from the object alone (notes say why).
std::optional<RulePlan> plan_rule(const PlanContext& ctx, std::vector<std::string>& notes);

// Per rule family (rule_checks_security.cpp, rule_checks_tenancy.cpp).
RulePlan plan_privileged(const PlanContext& ctx);
RulePlan plan_host_namespaces(const PlanContext& ctx);
RulePlan plan_gpu_device_access(const PlanContext& ctx);
RulePlan plan_gpu_tolerations(const PlanContext& ctx);
RulePlan plan_gpu_cap(const PlanContext& ctx);
RulePlan plan_tenant_pool(const PlanContext& ctx);
RulePlan plan_tenant_label(const PlanContext& ctx);

// `body` (about template `t`) holds for a pod template of a created object, and no exception of
// the rule that selects by pod labels covers that template.
std::string over_templates(const PlanContext& ctx, const std::string& body);
// No exception of the rule that selects by pod labels covers the pod `object` ("true" when none).
std::string not_excepted_pod(const PlanContext& ctx, const std::string& object);

}  // namespace gpu_admission::webhook::backstop
