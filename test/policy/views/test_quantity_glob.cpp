// Kubernetes quantity parsing and name globs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/config/glob.h"
#include "policy/views/host_path.h"
#include "policy/views/mig.h"
#include "policy/views/quantity.h"

using namespace gpu_admission::policy;

namespace {
int64_t whole(const char* text) {
  Quantity q = parse_quantity(text);
  INFO(text);
  REQUIRE(q.is_integer());
  return q.value;
}
Quantity::Status status(const char* text) { return parse_quantity(text).status; }
}  // namespace

TEST_CASE("quantities parse exactly", "[quantity]") {
  CHECK(whole("2") == 2);
  CHECK(whole("0") == 0);
  CHECK(whole("+3") == 3);
  CHECK(whole("1k") == 1000);
  CHECK(whole("1Ki") == 1024);
  CHECK(whole("2M") == 2000000);
  CHECK(whole("1e3") == 1000);
  CHECK(whole("1E2") == 100);
  CHECK(whole("2000m") == 2);
  CHECK(whole("1.5k") == 1500);
  CHECK(whole("2.0") == 2);
  CHECK(whole("0.5Ki") == 512);
  CHECK(whole("007") == 7);
  CHECK(whole("1000000000n") == 1);
}

TEST_CASE("fractional and invalid quantities are flagged", "[quantity]") {
  CHECK(status("500m") == Quantity::Status::NotInteger);
  CHECK(status("1.5") == Quantity::Status::NotInteger);
  CHECK(status("1500m") == Quantity::Status::NotInteger);
  CHECK(status("1e-1") == Quantity::Status::NotInteger);
  CHECK(status("-1") == Quantity::Status::Negative);
  CHECK(status("") == Quantity::Status::Invalid);
  CHECK(status("abc") == Quantity::Status::Invalid);
  CHECK(status("1x") == Quantity::Status::Invalid);
  CHECK(status("1 ") == Quantity::Status::Invalid);
  CHECK(status("1Zi") == Quantity::Status::Invalid);
  CHECK(status("99999999999999999999") == Quantity::Status::TooLarge);
  CHECK(status("1E") == Quantity::Status::Integer);  // exa: 10^18 fits
  CHECK(status("100E") == Quantity::Status::TooLarge);
  CHECK(status("8Ei") == Quantity::Status::TooLarge);
}

TEST_CASE("glob matching", "[glob]") {
  CHECK(glob_match("team-*", "team-a"));
  CHECK(glob_match("team-*", "team-"));
  CHECK_FALSE(glob_match("team-*", "team"));
  CHECK(glob_match("*", ""));
  CHECK(glob_match("a*b*c", "axxbyyc"));
  CHECK_FALSE(glob_match("a*b*c", "axxbyy"));
  CHECK(glob_match("system:serviceaccount:kube-system:*", "system:serviceaccount:kube-system:job-controller"));
  CHECK_FALSE(glob_match("exact", "exactly"));
}

TEST_CASE("GlobIndex returns the first owner in insertion order", "[glob]") {
  GlobIndex index;
  index.add("ml-*", 0);
  index.add("ml-special", 1);
  index.add("*-prod", 2);
  index.add("team-a", 3);
  CHECK(index.first_match("ml-special") == 0);  // the earlier glob wins over a later exact name
  CHECK(index.first_match("team-a") == 3);
  CHECK(index.first_match("web-prod") == 2);
  CHECK(index.first_match("ml-prod") == 0);
  CHECK(index.first_match("other") == GlobIndex::kNoMatch);
  CHECK(index.matching_pattern("web-prod") == "*-prod");

  GlobIndex big;
  for (int i = 0; i < 2000; ++i) big.add((i % 2 ? "ns-" : "team-") + std::to_string(i) + (i % 3 ? "" : "-*"), i / 10);
  CHECK(big.first_match("team-0-x") == 0);
  CHECK(big.first_match("ns-1") == 0);
  CHECK(big.first_match("team-1998") == GlobIndex::kNoMatch);  // only the glob "team-1998-*" exists
  CHECK(big.first_match("team-1996") == 199);
  CHECK(big.first_match("team-1998-a") == 199);
}

TEST_CASE("GlobIndex agrees with trying every pattern in order, whatever the shapes", "[glob]") {
  // Patterns and names over a small alphabet, so that lengths, first bytes, empty prefixes
  // ("*"), empty names and exact names collide often: the index's pre-filter must never skip
  // a pattern that matches.
  const std::vector<std::string> pieces = {"", "a", "b", "ab", "ba", "kube-", "x", "*"};
  std::vector<std::string> patterns;
  for (const auto& p1 : pieces)
    for (const auto& p2 : pieces) patterns.push_back(p1 + p2);
  std::vector<std::string> names;
  for (const auto& p1 : pieces)
    for (const auto& p2 : pieces)
      if (p1 != "*" && p2 != "*") names.push_back(p1 + p2 + (p1.size() % 2 ? "b" : ""));
  for (size_t start = 0; start < patterns.size(); start += 7) {
    GlobIndex index;
    std::vector<std::string> added;
    for (size_t i = start; i < patterns.size(); i += 3) {
      index.add(patterns[i], static_cast<int>(added.size()));
      added.push_back(patterns[i]);
    }
    for (const auto& name : names) {
      int expected = GlobIndex::kNoMatch;
      for (size_t i = 0; i < added.size() && expected == GlobIndex::kNoMatch; ++i)
        if (glob_match(added[i], name)) expected = static_cast<int>(i);
      INFO("name \"" << name << "\", patterns from " << start);
      CHECK(index.first_match(name) == expected);
    }
  }
}

TEST_CASE("host paths normalize lexically", "[hostpath]") {
  CHECK(normalize_host_path("/dev/../dev//nvidia0") == "/dev/nvidia0");
  CHECK(normalize_host_path("/var/run/nvidia-container-devices") == "/run/nvidia-container-devices");
  CHECK(normalize_host_path("/") == "/");
  CHECK(normalize_host_path("/dev/") == "/dev");
  CHECK(normalize_host_path("/../..") == "/");
  CHECK(normalize_host_path("dev/./dri") == "/dev/dri");
  CHECK(path_within("/dev/dri/card0", "/dev/dri"));
  CHECK_FALSE(path_within("/dev/drix", "/dev/dri"));
  CHECK(path_exposes("/tmp", "/tmp/nvidia-mps"));
}

TEST_CASE("MIG tables map products and profiles", "[mig]") {
  REQUIRE(mig_table_for_model("A100-SXM4-80GB"));
  CHECK(mig_table_for_model("A100-SXM4-80GB")->family == "A100-80GB");
  CHECK(mig_table_for_model("NVIDIA-A100-PCIE-40GB")->family == "A100-40GB");
  CHECK(mig_table_for_model("H100-SXM5-80GB")->family == "H100-80GB");
  CHECK(mig_table_for_model("NVIDIA-H100-NVL")->family == "H100-94GB");
  CHECK(mig_table_for_model("H200-141GB")->family == "H200-141GB");
  CHECK(mig_table_for_model("A30-24GB")->compute_slices == 4);
  CHECK(mig_table_for_model("Tesla-T4") == nullptr);
  CHECK(mig_profile_resource_suffix("1g.10gb+me") == "1g.10gb.me");
  CHECK(mig_profile_from_resource_suffix("1g.10gb.me") == "1g.10gb+me");
  CHECK(mig_profile_slices("7g.80gb") == 7);
  CHECK_FALSE(mig_profile_slices("gpu").has_value());
}
