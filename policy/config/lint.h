// Policy lint: footgun warnings about a policy that may well compile. Warnings never
// block loading; `policy lint` prints them and CompiledPolicy::compile returns them with its
// errors. Each warning names the field path and says the risk in one line.
#pragma once

#include "policy/config/policy_config.h"
#include "policy/base/source.h"

namespace gpu_admission::policy {

// Appends one Issue (Severity::Warning, with its source mark) to `issues` per footgun in `config`.
// Works on the configuration alone, so it is safe on a policy that also has errors.
// `now` (Unix seconds) dates the warnings about exceptions that expire soon (kExpiryNoticeSeconds)
// or have expired; kUnknownTime leaves them out.
inline constexpr int64_t kExpiryNoticeSeconds = 14 * 86400;
void lint_policy(const PolicyConfig& config, const SourceMap& marks, Issues& issues, int64_t now = kUnknownTime);

// Appends the notes `policy lint` prints after its warnings (Severity::Note, path and message, no
// mark): how the policy meets the cluster where nothing is wrong with it. Today one: DRA
// adminAccess is refused outside the exempt namespaces, whatever the namespace's
// resource.kubernetes.io/admin-access label says, so the tools that need it belong there.
void lint_notes(const PolicyConfig& config, Issues& notes);

}  // namespace gpu_admission::policy
