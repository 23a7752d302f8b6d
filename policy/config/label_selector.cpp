#include "policy/config/label_selector.h"

#include <algorithm>

namespace gpu_admission::policy {
namespace {

const std::string* find_label(const LabelPairs& labels, const std::string& key) {
  for (const auto& [k, v] : labels)
    if (k == key) return &v;
  return nullptr;
}

bool holds(const LabelRequirement& r, const LabelPairs& labels) {
  const std::string* value = find_label(labels, r.key);
  const bool listed = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  switch (r.op) {
    case LabelRequirement::Op::In: return listed;
    case LabelRequirement::Op::NotIn: return !listed;
    case LabelRequirement::Op::Exists: return value != nullptr;
    case LabelRequirement::Op::DoesNotExist: return value == nullptr;
  }
  return false;
}

}  // namespace

bool LabelSelector::matches(const LabelPairs& labels) const {
  for (const auto& [key, value] : match_labels) {
    const std::string* actual = find_label(labels, key);
    if (!actual || *actual != value) return false;
  }
  return std::all_of(match_expressions.begin(), match_expressions.end(),
                     [&](const LabelRequirement& r) { return holds(r, labels); });
}

}  // namespace gpu_admission::policy
