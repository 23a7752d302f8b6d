// The PodGroups (scheduling.k8s.io) among the inputs of `check` (and a `test` case's
// `objects:`), as the PodGroupResolver that resolves the groups of the pods among the same
// inputs, as InputClaims resolves their claims. Each group keeps its own JSON text and parsed
// document, which its PodGroupView points into. Objects of versions that serve no PodGroups
// are not added.
#pragma once

#include <string>

#include "policy/base/json.h"
#include "policy/dra/pod_group.h"
#include "webhook/cli/input_objects.h"

namespace gpu_admission::webhook {

class InputGroups : public policy::PodGroupResolver {
 public:
  InputGroups();
  ~InputGroups() override;

  // Adds `object` when it is a PodGroup that decodes; one that names no namespace belongs to
  // `default_namespace`. Returns false for anything else.
  bool add(const Json& object, const std::string& default_namespace);

  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const override;
  size_t size() const { return objects_.size(); }

 private:
  InputObjects<policy::PodGroupView> objects_;
};

}  // namespace gpu_admission::webhook
