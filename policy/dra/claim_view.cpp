// ClaimView: the decoded ResourceClaim / ResourceClaimTemplate; see claim_view.h.
#include "policy/dra/claim_view.h"

namespace gpu_admission::policy {

void ClaimView::clear() {
  kind = ClaimKind::Claim;
  api_version = {};
  name = {};
  namespace_name = {};
  requests.clear();
  configs.clear();
}

}  // namespace gpu_admission::policy
