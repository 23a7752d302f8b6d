#include "policy/evaluation/exceptions.h"

#include <algorithm>

namespace gpu_admission::policy {

namespace {

bool selectors_match(const PolicyException& e, const ExceptionSubject& s) {
  if (!e.namespaces.empty() && e.namespaces.first_match(s.namespace_name) == GlobIndex::kNoMatch) return false;
  if (!e.tenants.empty() && (!s.tenant || !e.tenants[s.tenant->index])) return false;
  if (!e.usernames.empty() && (s.username.empty() || e.usernames.first_match(s.username) == GlobIndex::kNoMatch))
    return false;
  if (!e.pod_labels.empty()) {
    if (!s.pod_labels) return false;
    for (const auto& wanted : e.pod_labels) {
      auto has = [&](const auto& label) { return label.first == wanted.first && label.second == wanted.second; };
      if (std::none_of(s.pod_labels->begin(), s.pod_labels->end(), has)) return false;
    }
  }
  return true;
}

bool expired(const PolicyException& e, const ExceptionSubject& s) {
  return e.expires && (s.now == kUnknownTime || s.now >= *e.expires);
}

}  // namespace

bool exception_matches(const PolicyException& e, const ExceptionSubject& s) {
  return !expired(e, s) && selectors_match(e, s);
}

bool exception_expired_for(const PolicyException& e, const ExceptionSubject& s) {
  return expired(e, s) && selectors_match(e, s);
}

void apply_exceptions(const CompiledPolicy& policy, const ExceptionSubject& subject, Decision& out) {
  for (Finding& f : out.findings) f.enforced = policy.enforced_action(f.rule, subject.tenant);
  const auto& exceptions = policy.exceptions();
  if (exceptions.empty() || out.findings.empty()) return;
  // Each exception is matched at most once per object, and only when a finding asks.
  enum class Match : uint8_t { Unknown, Yes, Expired, No };
  std::vector<Match> matched(exceptions.size(), Match::Unknown);
  for (Finding& f : out.findings) {
    const PolicyException* lapsed = nullptr;
    for (size_t i = 0; i < exceptions.size(); ++i) {
      const PolicyException& e = exceptions[i];
      if (!e.rules[static_cast<size_t>(f.rule)]) continue;
      if (matched[i] == Match::Unknown)
        matched[i] = exception_matches(e, subject)        ? Match::Yes
                     : exception_expired_for(e, subject) ? Match::Expired
                                                         : Match::No;
      if (matched[i] == Match::Expired && !lapsed) lapsed = &e;
      if (matched[i] != Match::Yes) continue;
      f.exception = e.name;
      lapsed = nullptr;
      break;
    }
    // The user learns why what passed yesterday is refused today.
    if (lapsed) f.message += " (exception " + lapsed->name + " expired " + lapsed->expires_text + ")";
  }
  out.allowed = !out.has(Action::Deny);
}

}  // namespace gpu_admission::policy
