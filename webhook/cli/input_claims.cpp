#include "webhook/cli/input_claims.h"

#include "policy/dra/claim_decoder.h"

namespace gpu_admission::webhook {

InputClaims::InputClaims() = default;
InputClaims::~InputClaims() = default;

bool InputClaims::add(const Json& object, const std::string& default_namespace) {
  return objects_.add(
      object, default_namespace,
      [](const InputType& type) {
        policy::ClaimKind kind;
        return policy::is_claim_kind(type.kind, &kind) && policy::claim_api_version_supported(type.api_version);
      },
      [](simdjson::dom::element root, policy::ClaimView& view) { return policy::decode_claim(root, view); });
}

const policy::ClaimView* InputClaims::find(policy::ClaimKind kind, std::string_view namespace_name,
                                           std::string_view name) const {
  return objects_.find(namespace_name, name, [kind](const policy::ClaimView& view) { return view.kind == kind; });
}

}  // namespace gpu_admission::webhook
