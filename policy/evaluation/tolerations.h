// Kubernetes toleration matching: a toleration matches a taint when the keys are equal (or the
// toleration key is empty with Exists), the operator is Exists, or Equal (or empty) with an
// equal value, and the toleration's effect is empty or equal.
#pragma once

#include <vector>

#include "policy/config/compiled_policy.h"
#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

bool toleration_matches(const Toleration& toleration, const Taint& taint);
bool tolerates_taint(const std::vector<Toleration>& tolerations, const Taint& taint);

}  // namespace gpu_admission::policy
