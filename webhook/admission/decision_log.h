// The log lines of admission decisions, read by the on-call engineer: what a request was (uid,
// namespace, name, kind, operation, dryRun, user), whom it was judged for (tenant, pool: a name
// or "none") and, per finding, its rule, action, field and message. finding_json is the one
// place a finding becomes JSON, so a new field of a finding is added there only.
#pragma once

#include <string_view>

#include "policy/base/json.h"
#include "policy/evaluation/decision.h"
#include "webhook/admission/admission_review.h"
#include "webhook/ops/logger.h"

namespace gpu_admission::webhook {

// {"rule", "action", "field", "message"} of one finding.
Json finding_json(const policy::Finding& finding);

// The request's own fields: uid, namespace, name (`name`: the object's, else the request's), kind,
// operation, dryRun, user.
Json request_log_fields(const AdmissionRequest& request, std::string_view name);

// One line for a decision with findings: "denied" (warn level) when a deny finding refused the
// object, else "admitted with findings" (info), with "decision" denied|warned|audited, the
// request's fields, tenant, pool and "findings" (the first 20; "moreFindings" counts the rest).
// Nothing for a decision without findings. Names and messages are bounded (policy/base/quoted_value.h).
void log_decision(Logger& logger, const AdmissionRequest& request, std::string_view name,
                  const policy::Decision& decision);

}  // namespace gpu_admission::webhook
