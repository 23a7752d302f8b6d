// How a finding is shown to people and reports: the one place that decides it. `check` (text,
// JSON summary, JUnit), `test` (a failed case's findings) and the PolicyReport builder all ask
// `label_of`, so a way a finding can end is one label here and one row in each output's table,
// not a hunt through the printers. Excepted: a spec.exceptions entry turned the rule off for
// this object (the finding keeps the action it would have had).
#pragma once

#include <array>
#include <string_view>

#include "policy/evaluation/decision.h"

namespace gpu_admission::webhook {

enum class FindingLabel : uint8_t { Deny, Warn, Audit, Excepted };
inline constexpr size_t kFindingLabelCount = 4;
inline constexpr std::array<std::string_view, kFindingLabelCount> kFindingLabelNames = {"deny", "warn", "audit",
                                                                                        "excepted"};

inline FindingLabel label_of(const policy::Finding& finding) {
  if (finding.excepted()) return FindingLabel::Excepted;
  switch (finding.action) {
    case policy::Action::Deny: return FindingLabel::Deny;
    case policy::Action::Warn: return FindingLabel::Warn;
    default: return FindingLabel::Audit;  // Audit (Off rules produce no findings)
  }
}

inline std::string_view name_of(FindingLabel label) { return kFindingLabelNames[static_cast<size_t>(label)]; }

}  // namespace gpu_admission::webhook
