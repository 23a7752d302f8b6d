// MIG profile tables (NVIDIA MIG user guide) and the mapping from a node's GPU product name
// (`nvidia.com/gpu.product`) to its table.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpu_admission::policy {

struct MigModelTable {
  std::string_view family;                  // e.g. "A100-80GB"
  int compute_slices;                       // 7, or 4 for the A30
  std::span<const std::string_view> profiles;  // e.g. "1g.10gb", "1g.10gb+me"
};

// The table for a GPU product such as "A100-SXM4-80GB" or "NVIDIA-H100-NVL"; nullptr when the
// product has no MIG support known to us.
const MigModelTable* mig_table_for_model(std::string_view gpu_model);

// All known tables, for docs and error messages.
std::span<const MigModelTable> all_mig_tables();

// "1g.10gb+me" -> "1g.10gb.me": how the device plugin's mixed strategy spells a profile in a
// resource name (nvidia.com/mig-<that>).
std::string mig_profile_resource_suffix(std::string_view profile);

// Inverse of the above for a resource suffix: "1g.10gb.me" -> "1g.10gb+me".
std::string mig_profile_from_resource_suffix(std::string_view suffix);

// Number of compute slices (the leading "<g>g") of a profile or resource suffix; nullopt when the
// text does not start with "<digits>g.".
std::optional<int> mig_profile_slices(std::string_view profile);

bool mig_table_has_profile(const MigModelTable& table, std::string_view profile);

}  // namespace gpu_admission::policy
