// webhook/backstop: the policy exported as Kubernetes ValidatingAdmissionPolicies
// (admissionregistration.k8s.io/v1), a backstop that the API server runs in-process while the
// webhook cannot be reached (`gpu-admission policy export --format vap`, SPEC section 14).
//
// One policy and one binding per rule and action (the action a rule takes for a tenant: its
// tenants[].rules entry, else spec.rules, weakened by the tenant's mode, else spec.enforcement:
// deny -> [Deny], warn -> [Warn], audit -> [Audit]; off -> none), for the parts of the rule that
// need no cluster state and no mutation. The API server sees a pod after the mutating webhook, so
// nothing here refuses what the webhook admits; where CEL cannot follow the webhook the backstop is
// the more permissive one, and says so in `not_expressed`, never silently.
//
// Only standard CEL is used (no Kubernetes library function), so any conformant engine evaluates
// the export exactly as the API server does; test/vap checks it with one against the rule fixtures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook::backstop {

struct ExportOptions {
  int64_t now = policy::kUnknownTime;  // exceptions that expired before it are left out
  std::string source;                  // where the policy came from, for the header comment
};

struct Export {
  Json objects = Json::array();            // ValidatingAdmissionPolicies, each followed by its binding
  std::vector<std::string> not_expressed;  // what the backstop leaves to the webhook, one line each
};

Export export_policy(const policy::CompiledPolicy& policy, const ExportOptions& options);

// The export as a YAML stream: a comment that names the policy and lists what is not expressed,
// then one document per object.
std::string export_yaml(const Export& e, const policy::CompiledPolicy& policy, const ExportOptions& options);

}  // namespace gpu_admission::webhook::backstop
