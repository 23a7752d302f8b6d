// Kubernetes label selectors (matchLabels, matchExpressions with In, NotIn, Exists,
// DoesNotExist) for tenants chosen by their namespaces' labels, and the interface
// through which the evaluator learns a namespace's labels: from the cluster in `serve`, from
// Namespace objects or --namespace-labels in `check` and `test`. Never by I/O.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_admission::policy {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct LabelRequirement {
  enum class Op : uint8_t { In, NotIn, Exists, DoesNotExist };
  std::string key;
  Op op = Op::In;
  std::vector<std::string> values;
};

struct LabelSelector {
  LabelPairs match_labels;
  std::vector<LabelRequirement> match_expressions;

  // Kubernetes semantics: every matchLabels pair and every expression must hold; an empty
  // selector matches every namespace. NotIn and DoesNotExist hold when the key is absent.
  bool matches(const LabelPairs& labels) const;
};

// What is known of a namespace's labels: the labels, or nullptr when the namespace has none known
// (not in the cluster, or no Namespace object was given); `unreadable` when they exist or may exist
// but could not be read (the API server failed or was too slow), which is not the same as none.
struct NamespaceLookup {
  const LabelPairs* labels = nullptr;
  bool unreadable = false;
};

// A namespace's labels, or nullptr when they are not known: then no namespaceSelector matches it.
class NamespaceLabels {
 public:
  virtual ~NamespaceLabels() = default;
  virtual const LabelPairs* labels_of(std::string_view namespace_name) const = 0;
  // Sources that can fail (cluster state) say so here; the others never do.
  virtual NamespaceLookup lookup(std::string_view namespace_name) const { return {labels_of(namespace_name), false}; }
};

}  // namespace gpu_admission::policy
