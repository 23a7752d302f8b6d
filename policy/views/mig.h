// MIG profile tables (NVIDIA MIG user guide) and the mapping from a node's GPU product name
// (`nvidia.com/gpu.product`) to its table. A profile may carry an attribute (`1g.10gb+me`,
// `1g.24gb+me.all`, `1g.24gb+gfx`, `1g.24gb-me`): the same slice as its base profile, valid only on
// the models whose table lists it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpu_admission::policy {

struct MigModelTable {
  std::string_view family;                  // e.g. "A100-80GB"
  int compute_slices;                       // 7, or 4 for the A30 and the RTX PRO 6000 Blackwell
  std::span<const std::string_view> profiles;  // e.g. "1g.10gb", "1g.10gb+me"
};

// The table for a GPU product such as "A100-SXM4-80GB", "NVIDIA-H100-NVL", "NVIDIA-B300-SXM6-AC"
// or "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition" (case, spaces, `-` and `_` ignored), or for a
// table's family name; nullptr when the product has no MIG support known to us.
const MigModelTable* mig_table_for_model(std::string_view gpu_model);

// All known tables, for docs and error messages.
std::span<const MigModelTable> all_mig_tables();

// "1g.10gb+me" -> "1g.10gb.me", "1g.24gb+me.all" -> "1g.24gb.me.all": how the device plugin's
// mixed strategy spells a profile in a resource name (nvidia.com/mig-<that>; `-me` stays).
std::string mig_profile_resource_suffix(std::string_view profile);

// Inverse of the above for a resource suffix: "1g.10gb.me" -> "1g.10gb+me", ".me.all" -> "+me.all",
// ".gfx" -> "+gfx".
std::string mig_profile_from_resource_suffix(std::string_view suffix);

// Number of compute slices (the leading "<g>g") of a profile or resource suffix; nullopt when the
// text does not start with "<digits>g.".
std::optional<int> mig_profile_slices(std::string_view profile);

bool mig_table_has_profile(const MigModelTable& table, std::string_view profile);

// Compute slices of one GPU when its model is not known (a pod with no pool): a common multiple
// of every table's compute slices (7 and 4), so that a profile's share of a GPU in any table is a
// whole number of them: one slice of an A100 is 4 of these, one slice of an A30 is 7.
inline constexpr int kAnyModelSlicesPerGpu = 28;

// Slices (of kAnyModelSlicesPerGpu) one device of a MIG profile counts for when the GPU model is
// not known: its largest share in any table that lists it (`1g.6gb` exists only on the A30: 1/4,
// 7 slices; `1g.10gb`: 1/7, 4 slices). A profile no table lists counts as its share of the
// smallest GPU with that many compute slices (`<g>`/4 up to 4g, else `<g>`/7): never under-count.
// `profile` is the table's spelling or the resource suffix ("1g.10gb+me" or "1g.10gb.me");
// nullopt when it does not start with "<g>g.".
std::optional<int> mig_profile_slices_any_model(std::string_view profile);

}  // namespace gpu_admission::policy
