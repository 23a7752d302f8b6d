// Who a request is, in CEL: its namespace, whether the policy exempts it (matchConditions and the
// matchConstraints namespaceSelector), its tenant (tenants[].namespaces globs, and
// namespaceSelector on namespaceObject's labels), and the exceptions that turn a rule off for it.
#pragma once

#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook::backstop {

// The request's namespace: request.namespace, else the object's own.
std::string namespace_expr();

// matchConstraints.namespaceSelector leaving out the exempt namespaces named exactly (null when none).
Json exempt_namespace_selector(const policy::CompiledPolicy& policy);

// matchConditions: not an exempt namespace (exact names and globs), not an exempt username.
Json exemption_conditions(const policy::CompiledPolicy& policy);

// Whether the policy exempts the request (namespace names and globs, usernames): the
// matchConditions' test, also in each policy's `applies` (variables.exempt).
std::string exempt_expr(const policy::CompiledPolicy& policy);

// The request's tenant name, or '' for a namespace of no tenant (variables.tenant).
std::string tenant_expr(const policy::CompiledPolicy& policy);

// Whether some tenant is chosen by namespace labels (the export then reads namespaceObject).
bool reads_namespace_labels(const policy::CompiledPolicy& policy);

// The exceptions that cover `rule` and have not expired at `now` (Unix seconds).
std::vector<const policy::PolicyException*> exceptions_for(const policy::CompiledPolicy& policy,
                                                           policy::RuleId rule, int64_t now);

// Whether `e` matches the request apart from its podLabels: namespace globs, tenants (through
// variables.tenant) and usernames. "true" when it selects on none of them.
std::string exception_matches_request(const policy::CompiledPolicy& policy, const policy::PolicyException& e);

// Whether the pod labels of template `t` (a CEL map expression of labels) satisfy `e.pod_labels`,
// counting a label the tenant-labels mutation would add (templates are judged as the pods they
// create, and /mutate adds the tenant's labels to those).
std::string exception_labels_match(const policy::CompiledPolicy& policy, const policy::PolicyException& e,
                                   const std::string& labels);

// The tenants whose rule action is `action` (the tenant's mode applied), and whether a namespace
// of no tenant has it too.
struct TenantClass {
  std::vector<std::string> tenants;
  bool no_tenant = false;
  bool everyone = false;  // every tenant and no tenant
};
TenantClass tenants_with_action(const policy::CompiledPolicy& policy, policy::RuleId rule, policy::Action action);

// variables.tenant is one of `c`'s tenants (or '' when `c.no_tenant`); "true" when everyone.
std::string tenant_in(const TenantClass& c);

}  // namespace gpu_admission::webhook::backstop
