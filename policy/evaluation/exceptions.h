// spec.exceptions at evaluation: which findings an exception turns off for the object judged.
// An exception matches when every selector it sets matches (namespace glob, tenant, username
// glob, pod labels) and it has not expired; its rules' findings are then marked excepted (they
// stay in the decision, reported as such) and never deny.
#pragma once

#include <cstdint>
#include <string_view>

#include "policy/config/compiled_policy.h"
#include "policy/evaluation/decision.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

struct ExceptionSubject {
  std::string_view namespace_name;
  const Tenant* tenant = nullptr;
  std::string_view username;                  // empty: unknown (matches no usernames selector)
  const StringViewPairs* pod_labels = nullptr;  // nullptr: not a pod (matches no podLabels selector)
  int64_t now = kUnknownTime;                 // kUnknownTime: every exception with expires is inert
};

bool exception_matches(const PolicyException& exception, const ExceptionSubject& subject);
// Every selector matches but the time is past `expires` (or unknown): it covered this object once.
bool exception_expired_for(const PolicyException& exception, const ExceptionSubject& subject);

// Marks the findings of `out` that a matching exception turns off (the first in policy order
// names them), notes in a finding's message an exception that would have covered it but expired
// ("exception x expired 2026-11-20T00:00:00Z"), stamps each finding with the action enforcement
// would take, and recomputes out.allowed.
void apply_exceptions(const CompiledPolicy& policy, const ExceptionSubject& subject, Decision& out);

}  // namespace gpu_admission::policy
