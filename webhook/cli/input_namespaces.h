// Namespace labels for `check` and `test` (tenants chosen by namespace labels): the Namespace objects among the inputs (or a
// test case's `objects:`), and labels given on the command line (`--namespace-labels k=v,...`,
// a case's `namespaceLabels:`) for namespaces that have no Namespace object there. Every
// namespace also carries kubernetes.io/metadata.name=<name>, as the API server sets it.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "policy/base/json.h"
#include "policy/config/label_selector.h"

namespace gpu_admission::webhook {

class InputNamespaces : public policy::NamespaceLabels {
 public:
  // Adds the labels of `object` when it is a v1 Namespace; false otherwise.
  bool add(const Json& object);
  // Labels for namespaces with no Namespace object among the inputs.
  void set_fallback(policy::LabelPairs labels) { fallback_ = std::move(labels); }

  const policy::LabelPairs* labels_of(std::string_view namespace_name) const override;

 private:
  std::map<std::string, policy::LabelPairs, std::less<>> namespaces_;
  policy::LabelPairs fallback_;
  mutable std::mutex mutex_;  // guards fallback_by_name_, filled on first lookup of a namespace
  mutable std::map<std::string, policy::LabelPairs, std::less<>> fallback_by_name_;
};

// Parses "k=v,k2=v2" (--namespace-labels); an error message naming the bad entry, or labels.
std::optional<policy::LabelPairs> parse_label_list(std::string_view text, std::string& error);

}  // namespace gpu_admission::webhook
