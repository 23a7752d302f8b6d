// MIG profile tables of the newer models (GB200, B300, GB300, RTX PRO 6000 Blackwell), how
// product names pick them, and the profile attributes +me.all, +gfx and -me in resource names.
#include <catch2/catch.hpp>

#include <string>

#include "policy/views/mig.h"

using namespace gpu_admission::policy;

namespace {
std::string family(const char* product) {
  const MigModelTable* t = mig_table_for_model(product);
  return t ? std::string(t->family) : std::string("(none)");
}
bool has(const char* product, const char* profile) {
  const MigModelTable* t = mig_table_for_model(product);
  return t && mig_table_has_profile(*t, profile);
}
}  // namespace

TEST_CASE("MIG: product names pick the newer tables, longest family first", "[mig]") {
  // GB200 and GB300 contain B200 and B300.
  CHECK(family("NVIDIA-GB200") == "GB200");
  CHECK(family("NVIDIA-B200") == "B200");
  CHECK(family("NVIDIA-B300-SXM6-AC") == "B300");
  CHECK(family("NVIDIA-GB300") == "GB300");
  // Spaces, dashes, underscores and case do not matter; the three RTX PRO 6000 editions share a table.
  CHECK(family("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition") == "RTX-PRO-6000-Blackwell");
  CHECK(family("NVIDIA RTX PRO 6000 Blackwell Workstation Edition") == "RTX-PRO-6000-Blackwell");
  CHECK(family("nvidia_rtx_pro_6000_blackwell_max-q_workstation_edition") == "RTX-PRO-6000-Blackwell");
  CHECK(family("nvidia-gb300") == "GB300");
  // Each family name picks its own table (policy errors list them as gpuModel values).
  for (const MigModelTable& t : all_mig_tables()) {
    INFO(t.family);
    CHECK(family(std::string(t.family).c_str()) == t.family);
  }
  // Earlier mappings stay.
  CHECK(family("NVIDIA-H100-80GB-HBM3") == "H100-80GB");
  CHECK(family("H100-SXM5-94GB") == "H100-94GB");
  CHECK(family("NVIDIA-A100-SXM4-40GB") == "A100-40GB");
  CHECK(family("A30-24GB") == "A30-24GB");
  // RTX PRO 5000 and other cards have no table of ours.
  CHECK(family("NVIDIA-RTX-PRO-5000-Blackwell") == "(none)");
  CHECK(family("NVIDIA-L40S") == "(none)");
}

TEST_CASE("MIG: compute slices per model", "[mig]") {
  CHECK(mig_table_for_model("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")->compute_slices == 4);
  for (const char* p : {"NVIDIA-GB200", "NVIDIA-B300-SXM6-AC", "NVIDIA-GB300", "NVIDIA-B200"}) {
    INFO(p);
    CHECK(mig_table_for_model(p)->compute_slices == 7);
  }
}

TEST_CASE("MIG: the newer tables list the guide's profiles and no others", "[mig]") {
  for (const char* p : {"1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"})
    CHECK(has("NVIDIA-GB200", p));
  CHECK_FALSE(has("NVIDIA-GB200", "1g.45gb"));  // B200's
  CHECK_FALSE(has("NVIDIA-B200", "1g.47gb"));   // GB200's
  for (const char* p : {"1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"})
    CHECK(has("NVIDIA-B300-SXM6-AC", p));
  for (const char* p : {"1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"})
    CHECK(has("NVIDIA-GB300", p));
  CHECK_FALSE(has("NVIDIA-GB300", "1g.34gb"));
  for (const char* p : {"1g.24gb", "1g.24gb+me", "1g.24gb+gfx", "1g.24gb+me.all", "1g.24gb-me", "2g.48gb",
                        "2g.48gb+gfx", "2g.48gb+me.all", "2g.48gb-me", "4g.96gb", "4g.96gb+gfx"})
    CHECK(has("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", p));
  // An attribute is valid only where the guide lists it for the model.
  CHECK_FALSE(has("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "2g.48gb+me"));
  CHECK_FALSE(has("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "4g.96gb+me.all"));
  CHECK_FALSE(has("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "4g.96gb-me"));
  CHECK_FALSE(has("NVIDIA-B300-SXM6-AC", "1g.34gb+gfx"));
  CHECK_FALSE(has("A100-SXM4-80GB", "1g.10gb+me.all"));
  CHECK_FALSE(has("A100-SXM4-80GB", "1g.10gb-me"));
  // The resource spelling is not the table's.
  CHECK_FALSE(has("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "1g.24gb.gfx"));
}

TEST_CASE("MIG: attributes in resource names and back", "[mig]") {
  // The device plugin turns '+' into '.'; '-me' has no '+' and stays.
  CHECK(mig_profile_resource_suffix("1g.24gb+me.all") == "1g.24gb.me.all");
  CHECK(mig_profile_resource_suffix("1g.24gb+gfx") == "1g.24gb.gfx");
  CHECK(mig_profile_resource_suffix("1g.24gb-me") == "1g.24gb-me");
  CHECK(mig_profile_from_resource_suffix("1g.24gb.me.all") == "1g.24gb+me.all");
  CHECK(mig_profile_from_resource_suffix("2g.48gb.gfx") == "2g.48gb+gfx");
  CHECK(mig_profile_from_resource_suffix("1g.24gb-me") == "1g.24gb-me");
  CHECK(mig_profile_from_resource_suffix("1g.10gb.me") == "1g.10gb+me");
  CHECK(mig_profile_from_resource_suffix("1g.10gb") == "1g.10gb");
  // Round trip over every profile of every table.
  for (const MigModelTable& t : all_mig_tables())
    for (std::string_view p : t.profiles) {
      INFO(t.family << " " << p);
      CHECK(mig_profile_from_resource_suffix(mig_profile_resource_suffix(p)) == p);
      CHECK(mig_profile_slices(mig_profile_resource_suffix(p)) == mig_profile_slices(p));
    }
}

TEST_CASE("MIG: a newer profile's share of an unknown model is its largest share", "[mig]") {
  // 1g.24gb exists only on the RTX PRO 6000 Blackwell (4 slices): a quarter of a GPU, 7 of 28,
  // in every spelling of its attributes.
  for (const char* p : {"1g.24gb", "1g.24gb.gfx", "1g.24gb+gfx", "1g.24gb.me.all", "1g.24gb-me"}) {
    INFO(p);
    CHECK(mig_profile_slices_any_model(p) == 7);
  }
  CHECK(mig_profile_slices_any_model("4g.96gb.gfx") == 28);
  // B300's 1g.34gb is one of 7: 4 of 28.
  CHECK(mig_profile_slices_any_model("1g.34gb.me") == 4);
  CHECK(mig_profile_slices_any_model("7g.278gb") == 28);
}
