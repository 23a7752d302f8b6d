#include "policy/evaluation/tolerations.h"

namespace gpu_admission::policy {

bool toleration_matches(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (t.op == "Exists") return t.key.empty() || t.key == taint.key;
  if (t.op.empty() || t.op == "Equal") return t.key == taint.key && t.value == taint.value;
  return false;  // unknown operator: the API server rejects it; never a match
}

bool tolerates_taint(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const auto& t : tolerations)
    if (toleration_matches(t, taint)) return true;
  return false;
}

}  // namespace gpu_admission::policy
