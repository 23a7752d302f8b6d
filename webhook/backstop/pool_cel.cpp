// Pools in CEL; see pool_cel.h.
#include "webhook/backstop/pool_cel.h"

#include <vector>

#include "webhook/backstop/cel_text.h"

namespace gpu_admission::webhook::backstop {
namespace {

const std::string kTermsPath = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";

std::string selector_holds(const std::string& spec, const std::string& key, const std::string& value) {
  return "(has(" + spec + ".nodeSelector) && " + map_holds(spec + ".nodeSelector", key, value) + ")";
}

std::string term_allows(const std::string& key, const std::string& value) {
  return "(has(term.matchExpressions) && term.matchExpressions.exists(x, has(x.key) && x.key == " + quote(key) +
         " && has(x.operator) && x.operator == 'In' && has(x.values) && " + quote(value) + " in x.values))";
}

// Every label of the pool is in the nodeSelector.
std::string selector_names(const policy::Pool& pool, const std::string& spec) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : pool.node_selector) parts.push_back(selector_holds(spec, k, v));
  if (parts.empty()) return "true";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " && " : "") + parts[i];
  return out;
}

// The term (ANDed with the nodeSelector) requires every label of the pool.
std::string term_covers(const policy::Pool& pool, const std::string& spec) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : pool.node_selector) parts.push_back("(" + selector_holds(spec, k, v) + " || " + term_allows(k, v) + ")");
  if (parts.empty()) return "true";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " && " : "") + parts[i];
  return out;
}

std::string terms(const std::string& spec) { return spec + "." + kTermsPath; }

std::string names_pool(const policy::Pool& pool, const std::string& spec) {
  std::string out = "(" + selector_names(pool, spec) + ") || (" + has_path(spec, kTermsPath) + " && " + terms(spec) +
                    ".exists(term, " + term_covers(pool, spec) + "))";
  if (!pool.node_selector.empty()) return out;
  // A pool without labels is named by any pod with a nodeSelector or affinity term (as resolved).
  return "((has(" + spec + ".nodeSelector) && " + spec + ".nodeSelector.size() > 0) || (" + has_path(spec, kTermsPath) +
         " && " + terms(spec) + ".size() > 0)) && (" + out + ")";
}

// Pinned: the nodeSelector names the pool, or every (ORed) term does.
std::string pins_pool(const policy::Pool& pool, const std::string& spec) {
  return "(" + selector_names(pool, spec) + ") || (" + has_path(spec, kTermsPath) + " && " + terms(spec) +
         ".size() > 0 && " + terms(spec) + ".all(term, " + term_covers(pool, spec) + "))";
}

}  // namespace

std::string named_pools(const policy::CompiledPolicy& policy, const std::string& spec) {
  if (policy.pools().empty()) return "[]";
  std::string out = "[";
  for (size_t i = 0; i < policy.pools().size(); ++i) {
    const policy::Pool& p = policy.pools()[i];
    out += (i ? ",\n " : "") + std::string("(") + names_pool(p, spec) + ") ? " + quote(p.name) + " : ''";
  }
  return out + "].filter(n, n != '')";
}

std::string with_pools(const policy::CompiledPolicy& policy, const std::string& spec, const std::string& body) {
  std::string pinned;  // pins_pool of the one pool named
  for (const auto& p : policy.pools()) pinned += "named[0] == " + quote(p.name) + " ? (" + pins_pool(p, spec) + ") :\n";
  pinned += "false";
  const std::string judged =
      "named.size() > 1 ? named[0] : (named.size() == 1 && (" + pinned + ") ? named[0] : '')";
  return "[" + named_pools(policy, spec) + "].exists(named, [" + judged + "].exists(pool,\n" + body + "))";
}

}  // namespace gpu_admission::webhook::backstop
