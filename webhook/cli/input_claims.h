// The ResourceClaims and ResourceClaimTemplates among the inputs of `check` (and a `test` case's
// `objects:`), as the ClaimResolver that resolves the claims of the pods among the same inputs.
// Each object keeps its own JSON text and parsed document, which its ClaimView points
// into. Objects of API versions Kubernetes 1.34+ does not serve are not added.
#pragma once

#include <string>

#include "policy/base/json.h"
#include "policy/dra/claim_view.h"
#include "webhook/cli/input_objects.h"

namespace gpu_admission::webhook {

class InputClaims : public policy::ClaimResolver {
 public:
  InputClaims();
  ~InputClaims() override;

  // Adds `object` when it is a claim or claim template that decodes; an object that names no
  // namespace belongs to `default_namespace`. Returns false for anything else.
  bool add(const Json& object, const std::string& default_namespace);

  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override;
  size_t size() const { return objects_.size(); }

 private:
  InputObjects<policy::ClaimView> objects_;
};

}  // namespace gpu_admission::webhook
