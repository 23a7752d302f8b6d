// The "allowed" relation between spec.deviceTolerations and a DRA request's tolerations
// (policy/evaluation/device_tolerations.h): a table of the cases that matter, and a check over
// every toleration of a small universe that the relation is exactly "tolerates no taint the
// allowed entry does not", by enumerating taints with Kubernetes' own matching.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/evaluation/device_tolerations.h"
#include "policy/evaluation/tolerations.h"

using namespace gpu_admission;
using policy::Toleration;

namespace {

std::string text(const Toleration& t) { return policy::toleration_text(t); }

}  // namespace

TEST_CASE("device tolerations: an allowed entry allows what tolerates no more than it", "[dra][device-tolerations]") {
  struct Case {
    Toleration allowed, requested;
    bool allows;
  };
  const Case cases[] = {
      // Exists on a key allows any toleration of that key.
      {{"k", "Exists", "", ""}, {"k", "Equal", "v", ""}, true},
      {{"k", "Exists", "", ""}, {"k", "", "v", "NoSchedule"}, true},  // "" is Equal
      {{"k", "Exists", "", ""}, {"k", "Exists", "", "NoExecute"}, true},
      {{"k", "Exists", "", ""}, {"k2", "Exists", "", ""}, false},
      // ... but not a toleration of every key.
      {{"k", "Exists", "", ""}, {"", "Exists", "", ""}, false},
      {{"k", "Exists", "", ""}, {"", "Exists", "", "NoSchedule"}, false},
      // Equal allows only the same key and value, as Equal.
      {{"k", "Equal", "v", ""}, {"k", "Equal", "v", ""}, true},
      {{"k", "Equal", "v", ""}, {"k", "", "v", "NoExecute"}, true},
      {{"k", "Equal", "v", ""}, {"k", "Equal", "w", ""}, false},
      {{"k", "Equal", "v", ""}, {"k", "Exists", "", ""}, false},
      {{"k", "Equal", "v", ""}, {"k", "Exists", "v", ""}, false},  // a value with Exists is ignored by matching
      // An effect limits the entry to that effect: an empty effect tolerates every effect.
      {{"k", "Equal", "v", "NoSchedule"}, {"k", "Exists", "", ""}, false},
      {{"k", "Equal", "v", "NoSchedule"}, {"k", "Equal", "v", ""}, false},
      {{"k", "Equal", "v", "NoSchedule"}, {"k", "Equal", "v", "NoExecute"}, false},
      {{"k", "Equal", "v", "NoSchedule"}, {"k", "Equal", "v", "NoSchedule"}, true},
      {{"k", "Exists", "", "NoExecute"}, {"k", "Equal", "v", "NoExecute"}, true},
      // An empty key with Exists tolerates everything: only the same entry allows it.
      {{"", "Exists", "", ""}, {"", "Exists", "", ""}, true},
      {{"", "Exists", "", ""}, {"any", "Equal", "thing", "NoExecute"}, true},
      {{"", "Exists", "", "NoSchedule"}, {"", "Exists", "", ""}, false},
      {{"", "Exists", "", "NoSchedule"}, {"", "Exists", "", "NoSchedule"}, true},
      {{"", "Exists", "", "NoSchedule"}, {"k", "Exists", "", "NoSchedule"}, true},
      // Operators the API does not know never allow and are never allowed (fail closed).
      {{"k", "Exists", "", ""}, {"k", "exists", "", ""}, false},
      {{"", "Exists", "", ""}, {"k", "Gt", "1", ""}, false},
      {{"k", "In", "", ""}, {"k", "Equal", "v", ""}, false},
      // An empty key with Equal names no taint: it allows nothing, and is allowed only by the wildcard.
      {{"", "Equal", "v", ""}, {"", "Equal", "v", ""}, false},
      {{"k", "Exists", "", ""}, {"", "Equal", "v", ""}, false},
      {{"", "Exists", "", ""}, {"", "Equal", "v", ""}, true},
  };
  for (const auto& c : cases) {
    INFO("allowed " << text(c.allowed) << ", requested " << text(c.requested));
    CHECK(policy::toleration_allows(c.allowed, c.requested) == c.allows);
  }
}

TEST_CASE("device tolerations: allows is exactly containment of the tolerated taints", "[dra][device-tolerations]") {
  // Tolerations over keys k, k2 (or none), values v, w (or none), every operator and effect; taints
  // over those keys and values plus ones no toleration names, so "every key" and "every value" are
  // told apart from any finite list.
  const std::vector<std::string> keys = {"", "k", "k2"}, values = {"", "v", "w"};
  const std::vector<std::string> ops = {"Exists", "Equal", ""}, effects = {"", "NoSchedule", "NoExecute"};
  std::vector<Toleration> tolerations;
  for (const auto& key : keys)
    for (const auto& op : ops)
      for (const auto& value : values)
        for (const auto& effect : effects) {
          if (key.empty() && op != "Exists") continue;  // the API refuses it (and it tolerates no taint)
          if (op == "Exists" && !value.empty()) continue;  // the API refuses it
          tolerations.push_back({key, op, value, effect});
        }
  std::vector<policy::Taint> taints;
  for (const std::string key : {"k", "k2", "k3"})
    for (const std::string value : {"", "v", "w", "x"})
      for (const std::string effect : {"NoSchedule", "NoExecute", "None"}) taints.push_back({key, value, effect});
  size_t allowed_pairs = 0;
  for (const auto& a : tolerations) {
    for (const auto& t : tolerations) {
      bool contained = true;
      for (const auto& taint : taints)
        if (policy::toleration_matches(t, taint) && !policy::toleration_matches(a, taint)) contained = false;
      INFO("allowed " << text(a) << ", requested " << text(t));
      CHECK(policy::toleration_allows(a, t) == contained);
      allowed_pairs += contained;
    }
  }
  CHECK(allowed_pairs > tolerations.size());  // more than each toleration allowing itself
}

TEST_CASE("device tolerations: one entry must cover a toleration on its own", "[dra][device-tolerations]") {
  std::vector<policy::TolerationConfig> allowed = {{"k", "Exists", "", "NoSchedule"}, {"k", "Exists", "", "NoExecute"}};
  // Together they cover both effects Kubernetes has today, but a toleration without an effect also
  // tolerates effects added later: refused.
  CHECK_FALSE(policy::device_toleration_allowed(allowed, {"k", "Exists", "", ""}));
  CHECK(policy::device_toleration_allowed(allowed, {"k", "Equal", "v", "NoExecute"}));
  CHECK_FALSE(policy::device_toleration_allowed({}, {"k", "Equal", "v", "NoExecute"}));
}
