#include "policy/evaluation/pool_resolution.h"

#include <algorithm>

namespace gpu_admission::policy {
namespace {

bool listed(const NodeSelectorRequirement& expr, std::string_view value) {
  return std::find(expr.values.begin(), expr.values.end(), value) != expr.values.end();
}

bool in_selector(const PodView& pod, const std::string& key, const std::string& value) {
  bool found = false;
  return pod.node_selector_value(key, &found) == value && found;
}


// The term allows `key`=`value` (an In that lists it): the pod may reach the pool through it.
bool term_allows(const NodeSelectorTerm& term, std::string_view key, std::string_view value) {
  return std::any_of(term.match_expressions.begin(), term.match_expressions.end(), [&](const auto& expr) {
    return expr.key == key && expr.op == "In" && listed(expr, value);
  });
}

// nodeSelector and a term are ANDed: every pool label is required by one or the other.
template <typename TermTest>
bool term_covers(const PodView& pod, const NodeSelectorTerm& term, const Pool& pool, TermTest test) {
  return std::all_of(pool.node_selector.begin(), pool.node_selector.end(), [&](const auto& kv) {
    return in_selector(pod, kv.first, kv.second) || test(term, kv.first, kv.second);
  });
}

// Whether the required node affinity names `pool`: some (ORed) term names it together with the
// nodeSelector. A term that names a pool counts even when another term lets the pod go elsewhere:
// the pod targets that pool.
bool affinity_names(const PodView& pod, const Pool& pool) {
  const auto& terms = pod.required_node_affinity;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& t) { return term_covers(pod, t, pool, term_allows); });
}

// Pinned (the pod names only `pool`): the nodeSelector names it, or every (ORed) term does.
bool pins(const PodView& pod, const Pool& pool) {
  if (selector_holds(pod, pool)) return true;
  const auto& terms = pod.required_node_affinity;
  return !terms.empty() && std::all_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& t) {
    return term_covers(pod, t, pool, term_allows);
  });
}

}  // namespace

bool selector_holds(const PodView& pod, const Pool& pool) {
  return std::all_of(pool.node_selector.begin(), pool.node_selector.end(),
                     [&](const auto& kv) { return in_selector(pod, kv.first, kv.second); });
}

const std::string* selector_contradicts(const PodView& pod, const Pool& pool) {
  for (const auto& [key, value] : pool.node_selector) {
    bool found = false;
    if (pod.node_selector_value(key, &found) != value && found) return &key;
  }
  return nullptr;
}

PoolResolution resolve_pools(const CompiledPolicy& policy, const PodView& pod) {
  PoolResolution out;
  if (pod.node_selector.empty() && pod.required_node_affinity.empty()) return out;
  for (const auto& pool : policy.pools())
    if (selector_holds(pod, pool) || affinity_names(pod, pool)) out.named.push_back(&pool);
  if (out.named.size() > 1) {
    out.pool = out.named.front();
    out.pinned = true;  // several pools: tenant-pool says so, and the first is judged
  } else if (out.named.size() == 1 && pins(pod, *out.named.front())) {
    out.pool = out.named.front();
    out.pinned = true;
  }
  return out;
}

}  // namespace gpu_admission::policy
