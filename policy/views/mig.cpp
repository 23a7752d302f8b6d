#include "policy/views/mig.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace gpu_admission::policy {
namespace {

constexpr std::array<std::string_view, 5> kA30 = {"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"};
constexpr std::array<std::string_view, 7> kA100_40 = {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb",
                                                      "3g.20gb", "4g.20gb", "7g.40gb"};
constexpr std::array<std::string_view, 7> k80 = {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb",
                                                 "3g.40gb", "4g.40gb", "7g.80gb"};
constexpr std::array<std::string_view, 7> kH100_94 = {"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb",
                                                      "3g.47gb", "4g.47gb", "7g.94gb"};
constexpr std::array<std::string_view, 7> kH200 = {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb",
                                                   "3g.71gb", "4g.71gb", "7g.141gb"};
constexpr std::array<std::string_view, 7> kB200 = {"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb",
                                                   "3g.90gb", "4g.90gb", "7g.180gb"};

const std::array<MigModelTable, 7> kTables = {{
    {"A30-24GB", 4, kA30},
    {"A100-40GB", 7, kA100_40},
    {"A100-80GB", 7, k80},
    {"H100-80GB", 7, k80},
    {"H100-94GB", 7, kH100_94},
    {"H200-141GB", 7, kH200},
    {"B200", 7, kB200},
}};

bool contains_token(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

std::span<const MigModelTable> all_mig_tables() { return kTables; }

const MigModelTable* mig_table_for_model(std::string_view gpu_model) {
  std::string upper(gpu_model);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view m = upper;
  // Order matters: GH200/H200 before H100, NVL and 94GB before plain H100.
  if (contains_token(m, "B200")) return &kTables[6];
  if (contains_token(m, "H200")) return &kTables[5];
  if (contains_token(m, "H100")) {
    if (contains_token(m, "94GB") || contains_token(m, "NVL")) return &kTables[4];
    return &kTables[3];
  }
  if (contains_token(m, "A100")) {
    if (contains_token(m, "40GB")) return &kTables[1];
    return &kTables[2];
  }
  if (contains_token(m, "A30")) return &kTables[0];
  return nullptr;
}

std::string mig_profile_resource_suffix(std::string_view profile) {
  std::string out(profile);
  std::replace(out.begin(), out.end(), '+', '.');
  return out;
}

std::string mig_profile_from_resource_suffix(std::string_view suffix) {
  std::string out(suffix);
  if (out.size() > 3 && out.compare(out.size() - 3, 3, ".me") == 0) out[out.size() - 3] = '+';
  return out;
}

std::optional<int> mig_profile_slices(std::string_view profile) {
  size_t i = 0;
  int slices = 0;
  while (i < profile.size() && std::isdigit(static_cast<unsigned char>(profile[i])) && i < 3) {
    slices = slices * 10 + (profile[i] - '0');
    ++i;
  }
  if (i == 0 || i + 1 >= profile.size() || profile[i] != 'g' || profile[i + 1] != '.' || slices == 0)
    return std::nullopt;
  return slices;
}

bool mig_table_has_profile(const MigModelTable& table, std::string_view profile) {
  return std::find(table.profiles.begin(), table.profiles.end(), profile) != table.profiles.end();
}

std::optional<int> mig_profile_slices_any_model(std::string_view profile) {
  const std::optional<int> g = mig_profile_slices(profile);
  if (!g) return std::nullopt;
  // The table spells "+me" where the resource suffix has ".me".
  auto same = [&](std::string_view listed) {
    return listed.size() == profile.size() &&
           std::equal(listed.begin(), listed.end(), profile.begin(),
                      [](char l, char p) { return l == p || (l == '+' && p == '.'); });
  };
  int listed_in = 0;  // the fewest compute slices of a model that lists it (the largest share)
  int fits_in = 0;    // the fewest compute slices of a model with at least g of them
  int largest = 0;
  for (const MigModelTable& table : kTables) {
    const int n = table.compute_slices;
    largest = std::max(largest, n);
    if (n >= *g && (fits_in == 0 || n < fits_in)) fits_in = n;
    if ((listed_in == 0 || n < listed_in) && std::any_of(table.profiles.begin(), table.profiles.end(), same))
      listed_in = n;
  }
  const int per_gpu = listed_in ? listed_in : fits_in ? fits_in : largest;
  return *g * (kAnyModelSlicesPerGpu / per_gpu);
}

}  // namespace gpu_admission::policy
