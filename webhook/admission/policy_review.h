// /validate of the webhook's own policy: a ConfigMap labelled gpu-admission.io/policy: "true"
// (the chart's policy ConfigMap) is checked as `policy lint` checks a file, so that `kubectl
// apply` or `helm upgrade` of a broken policy fails at once instead of being discovered later by
// the replicas (which keep their last good policy either way). Errors refuse it, each naming the
// data key and its line:column inside the key's value; lint's warnings come back as admission
// warnings. Any other ConfigMap is allowed untouched. The check itself lives in io/ (the YAML
// reader), handed to AdmissionService as a PolicyChecker, so admission/ stays io-free.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "webhook/admission/admission_review.h"
#include "webhook/admission/review_decision.h"

namespace gpu_admission::webhook {

// The label that marks a ConfigMap as holding the webhook's policy, and its value.
inline constexpr std::string_view kPolicyLabel = "gpu-admission.io/policy";
inline constexpr std::string_view kPolicyLabelValue = "true";

// What the check of a policy ConfigMap found: problems formatted "KEY:LINE:COL: PATH: MESSAGE"
// (KEY the data key, LINE:COL within its value; left out where unknown).
struct PolicyCheck {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::string key;     // the data key holding the policy ("" when none could be chosen)
  std::string policy;  // metadata.name of a valid policy, for the log
};

// Checks the policy inside a ConfigMap given as its JSON text (request.object).
using PolicyChecker = std::function<PolicyCheck(std::string_view configmap_json)>;

// Whether request.object (padded JSON text, parsed into `parser`) carries kPolicyLabel with
// value "true"; its metadata.name (else generateName) goes to `name`. An error when the object
// cannot be read as JSON.
std::optional<ObjectError> read_policy_label(simdjson::dom::parser& parser, std::string_view object, bool& labelled,
                                             std::string_view& name);

// The answer to a checked policy ConfigMap: refused (403, every error in the message, at most
// kMaxListedErrors of them) when it has errors; its warnings, each under 120 characters.
void answer_policy_check(const PolicyCheck& check, std::string_view namespace_name, std::string_view name,
                         AdmissionResponse& response);
inline constexpr size_t kMaxListedErrors = 20;

}  // namespace gpu_admission::webhook
