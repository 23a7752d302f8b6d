// Comparing a test case's expectations (test_suite.h) with what the offline evaluator gave:
// each expectation that does not hold becomes one failure line saying what was expected and
// what came instead ("denied: expected [privileged], got [host-namespaces, privileged]").
#pragma once

#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/evaluation/decision.h"
#include "webhook/cli/test_suite.h"

namespace gpu_admission::webhook {

// `allowed`, `denied`, `warned`, `audited` and `messages` against the decision.
void compare_decision(const TestExpectation& e, const policy::Decision& d, std::vector<std::string>& failures);

// `labels`, `nodeSelector` and `resources` against the pod (template) of the mutated object,
// `patched` against the mutated object itself.
void compare_mutated(const TestExpectation& e, const Json& mutated, std::vector<std::string>& failures);

// The decision's findings as a failed case lists them.
std::vector<CaseFinding> case_findings(const policy::Decision& d);

// The text of `obj[key]` (a string as is, anything else as JSON); empty when absent.
std::string map_value(const Json& obj, const std::string& key);

}  // namespace gpu_admission::webhook
