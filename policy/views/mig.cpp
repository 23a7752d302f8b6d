#include "policy/views/mig.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace gpu_admission::policy {
namespace {

// Profiles per model, as NVIDIA's MIG user guide lists them ("Supported MIG Profiles"). An
// attribute (`+me`, `+me.all`, `+gfx`, `-me`) names the same slice as its base profile with other
// media or graphics engines; a model has only the attributes the guide lists for it.
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
constexpr std::array<std::string_view, 7> kGB200 = {"1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb",
                                                    "3g.93gb", "4g.93gb", "7g.186gb"};
constexpr std::array<std::string_view, 7> kB300 = {"1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb",
                                                   "3g.135gb", "4g.135gb", "7g.269gb"};
constexpr std::array<std::string_view, 7> kGB300 = {"1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb",
                                                    "3g.139gb", "4g.139gb", "7g.278gb"};
// RTX PRO 6000 Blackwell (Server, Workstation and Max-Q Workstation Editions): 4 compute slices;
// the first Blackwell GPUs with `+gfx` (graphics APIs in an instance), `+me.all` (every media
// engine in one instance) and `-me` (no media engine) profiles.
constexpr std::array<std::string_view, 11> kRtxPro6000 = {
    "1g.24gb",    "1g.24gb+me",  "1g.24gb+gfx",    "1g.24gb+me.all", "1g.24gb-me", "2g.48gb",
    "2g.48gb+gfx", "2g.48gb+me.all", "2g.48gb-me", "4g.96gb",        "4g.96gb+gfx"};

enum TableIndex : size_t { kA30Table, kA100_40Table, kA100_80Table, kH100_80Table, kH100_94Table, kH200Table,
                           kB200Table, kGB200Table, kB300Table, kGB300Table, kRtxPro6000Table, kTableCount };

const std::array<MigModelTable, kTableCount> kTables = {{
    {"A30-24GB", 4, kA30},
    {"A100-40GB", 7, kA100_40},
    {"A100-80GB", 7, k80},
    {"H100-80GB", 7, k80},
    {"H100-94GB", 7, kH100_94},
    {"H200-141GB", 7, kH200},
    {"B200", 7, kB200},
    {"GB200", 7, kGB200},
    {"B300", 7, kB300},
    {"GB300", 7, kGB300},
    {"RTX-PRO-6000-Blackwell", 4, kRtxPro6000},
}};

// How a product name picks its table, first match wins: the token the name contains (upper case,
// with spaces, `-` and `_` removed: `NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition` holds
// RTXPRO6000), and a second token the name must (or, for `unless`, must not) contain. Order
// matters: GB200 and GB300 hold B200 and B300; GH200 holds H200; the H100 NVL and 94GB before the
// other H100s; the A100 40GB before the other A100s. The tables' family names match themselves.
struct ModelMatch {
  std::string_view token;
  std::string_view also;  // "" or a token that must also be present
  TableIndex table;
};
constexpr std::array<ModelMatch, 12> kMatches = {{
    {"RTXPRO6000", "", kRtxPro6000Table},
    {"GB300", "", kGB300Table},
    {"B300", "", kB300Table},
    {"GB200", "", kGB200Table},
    {"B200", "", kB200Table},
    {"H200", "", kH200Table},
    {"H100", "94GB", kH100_94Table},
    {"H100", "NVL", kH100_94Table},
    {"H100", "", kH100_80Table},
    {"A100", "40GB", kA100_40Table},
    {"A100", "", kA100_80Table},
    {"A30", "", kA30Table},
}};

// Upper case, without the separators product names use between words.
std::string squeezed(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

// Resource suffix spelling of each attribute, longest first (".me.all" before ".me"); `-me` is
// spelled the same in both.
struct AttributeSpelling {
  std::string_view suffix;   // in a resource name or node label: "1g.24gb.me.all"
  std::string_view profile;  // in the table: "1g.24gb+me.all"
};
constexpr std::array<AttributeSpelling, 3> kAttributeSpellings = {{
    {".me.all", "+me.all"},
    {".gfx", "+gfx"},
    {".me", "+me"},
}};

}  // namespace

std::span<const MigModelTable> all_mig_tables() { return kTables; }

const MigModelTable* mig_table_for_model(std::string_view gpu_model) {
  const std::string m = squeezed(gpu_model);
  auto has = [&](std::string_view token) { return m.find(token) != std::string::npos; };
  for (const ModelMatch& match : kMatches)
    if (has(match.token) && (match.also.empty() || has(match.also))) return &kTables[match.table];
  return nullptr;
}

std::string mig_profile_resource_suffix(std::string_view profile) {
  std::string out(profile);
  std::replace(out.begin(), out.end(), '+', '.');
  return out;
}

std::string mig_profile_from_resource_suffix(std::string_view suffix) {
  std::string out(suffix);
  for (const AttributeSpelling& a : kAttributeSpellings) {
    if (out.size() <= a.suffix.size() || out.compare(out.size() - a.suffix.size(), a.suffix.size(), a.suffix) != 0)
      continue;
    out.replace(out.size() - a.suffix.size(), a.suffix.size(), a.profile);
    break;
  }
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
