// Counting a claim's GPUs (policy/dra/claim_gpus.h): the CEL pin parser on a table of expressions (pins and
// non-pins, quoting, parentheses, `&&` chains, `||`/`!`/ternaries, strings holding operators),
// slices per subrequest for full, pinned and unpinned MIG, All, count > 1 and overflow;
// firstAvailable's worst case; claim sums; adminAccess; which driver configs make a request MPS.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "policy/dra/claim_gpus.h"
#include "policy/dra/gpu_request.h"

using namespace gpu_admission;
using policy::AllocationMode;
using policy::ClaimView;
using policy::DeviceRequestView;
using policy::DeviceSubrequest;
using policy::DriverConfigView;
using policy::GpuClassKind;
using policy::GpuCounting;
using policy::kSaturatedSlices;

namespace {

const std::string kPin = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'";
const std::string kPin3 = "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'";

DeviceSubrequest sub(std::string_view device_class, int64_t count = 1, std::vector<std::string_view> selectors = {}) {
  DeviceSubrequest s;
  s.device_class = device_class;
  s.count = count;
  s.selectors = std::move(selectors);
  return s;
}

DeviceRequestView request(uint32_t index, std::string_view name, std::vector<DeviceSubrequest> alternatives) {
  DeviceRequestView r;
  r.index = index;
  r.name = name;
  r.first_available = alternatives.size() > 1;
  r.alternatives = std::move(alternatives);
  return r;
}

DriverConfigView config(std::string_view driver, std::string_view kind, std::string_view strategy,
                        std::vector<std::string_view> requests = {}) {
  DriverConfigView c;
  c.driver = driver;
  c.parameters_kind = kind;
  c.sharing_strategy = strategy;
  c.requests = std::move(requests);
  return c;
}

struct PinCase {
  std::string cel;
  const char* profile;
};

const std::vector<PinCase> kPins = {
    {kPin, "1g.10gb"},
    {R"(device.attributes["gpu.nvidia.com"].profile == "1g.10gb")", "1g.10gb"},
    {R"(device.attributes["gpu.nvidia.com"].profile == '2g.20gb')", "2g.20gb"},
    {"  device . attributes\n[ 'gpu.nvidia.com' ]\t.profile   ==\n'3g.40gb'  \n", "3g.40gb"},
    {"(" + kPin + ")", "1g.10gb"},
    {"((( " + kPin + " )))", "1g.10gb"},
    {"device.driver == 'gpu.nvidia.com' && " + kPin, "1g.10gb"},
    {kPin + " && device.attributes['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0", "1g.10gb"},
    {"a && (b && (" + kPin + "))", "1g.10gb"},
    {"'1g.10gb' == device.attributes['gpu.nvidia.com'].profile", "1g.10gb"},
    {"\"7g.80gb\"==device.attributes['gpu.nvidia.com'].profile", "7g.80gb"},
    {"device.attributes['gpu.nvidia.com']['profile'] == '1g.10gb'", "1g.10gb"},
    {"device.attributes['gpu.nvidia.com'].productName == 'a && b || c ? d : e' && " + kPin, "1g.10gb"},
    {"x == \"it's (weird]\" && " + kPin, "1g.10gb"},
    {"x == 'say \\'hi\\' || no' && " + kPin, "1g.10gb"},  // escapes elsewhere are fine
    {kPin + " // || not a pin after all?", "1g.10gb"},
    {"// comment with 'quote\n" + kPin, "1g.10gb"},
    {kPin + " && " + kPin, "1g.10gb"},
    {kPin + " && (x || y)", "1g.10gb"},
    {kPin + " && (c ? a : b)", "1g.10gb"},
    {"{'a': 1}['a'] == 1 && " + kPin, "1g.10gb"},
    {"!x && " + kPin + " && y != 2", "1g.10gb"},
    {"device.attributes['gpu.nvidia.com'].profile == '1g.10gb+me'", "1g.10gb+me"},
    {"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\n", "1g.10gb"},
};

const std::vector<std::string> kNonPins = {
    "",
    "   ",
    kPin + " || x",
    "x || " + kPin,
    kPin + " && x || y",
    "x || y && " + kPin,
    "(" + kPin + " || x) && y",
    "!(" + kPin + ")",
    "!" + kPin,
    "c ? " + kPin + " : false",
    "(c ? " + kPin + " : false) && true",
    kPin + " ? true : false",
    "device.attributes['gpu.nvidia.com'].profile != '1g.10gb'",
    "device.attributes['other.example.com'].profile == '1g.10gb'",
    "device.attributes['gpu.nvidia.com'].productName == '1g.10gb'",
    "device.attributes['gpu.nvidia.com'].profile.startsWith('1g')",
    "device.attributes['gpu.nvidia.com'].profile in ['1g.10gb']",
    "device.attributes['gpu.nvidia.com'].profile == '1g\\x2e10gb'",
    "device.attributes['gpu\\x2envidia.com'].profile == '1g.10gb'",
    "device.attributes['gpu.nvidia.com'].profile == r'1g.10gb'",
    "device.attributes['gpu.nvidia.com'].profile == b'1g.10gb'",
    "device.attributes['gpu.nvidia.com'].profile == '''1g.10gb'''",
    "device.attributes[r'gpu.nvidia.com'].profile == '1g.10gb'",
    "(" + kPin,
    kPin + ")",
    "(" + kPin + "]",
    kPin + " && 'unterminated",
    kPin + " & x",
    kPin + " | x",
    "device.attributes['gpu.nvidia.com'].profile = '1g.10gb'",
    kPin + " == true",
    "(" + kPin + ") == true",
    "cel.bind(device, x, " + kPin + ")",
    "[" + kPin + "][0]",
    "device.attributes['gpu.nvidia.com'].profile == device.attributes['gpu.nvidia.com'].profile",
    "device.attributes['gpu.nvidia.com'].profile == 1",
    "device.attributes['gpu.nvidia.com'].`profile` == '1g.10gb'",
    "-" + kPin,
    kPin + " &&",
    "&& " + kPin,
    kPin + " && && x",
    kPin + " && ()",
    "dev.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
    "device.attributes['gpu.nvidia.com'].profile == '1g.10gb\n'",
    kPin + " && " + kPin3,  // two different pins: none is certain
    kPin + " ; x",
    "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' \xc3\xa9",
};

}  // namespace

TEST_CASE("CEL selectors that pin a MIG profile", "[claim][cel]") {
  for (const auto& c : kPins) {
    INFO(c.cel);
    CHECK(policy::pinned_mig_profile(c.cel) == std::optional<std::string>(c.profile));
  }
  for (const auto& cel : kNonPins) {
    INFO(cel);
    CHECK_FALSE(policy::pinned_mig_profile(cel).has_value());
  }
  CHECK(policy::pinned_mig_profiles(kPin + " && " + kPin3) == std::vector<std::string_view>{"1g.10gb", "3g.40gb"});
  CHECK(policy::pinned_mig_profiles(kPin3 + " && x && " + kPin + " && " + kPin3) ==
        std::vector<std::string_view>{"1g.10gb", "3g.40gb"});
  CHECK(policy::pinned_mig_profiles("x || " + kPin).empty());
}

TEST_CASE("CEL pin parser: deep nesting and long chains", "[claim][cel]") {
  std::string deep = std::string(20000, '(') + kPin + std::string(20000, ')');
  CHECK(policy::pinned_mig_profile(deep) == std::optional<std::string>("1g.10gb"));
  std::string chain;
  for (int i = 0; i < 5000; ++i) chain += "(x == " + std::to_string(i) + ") && ";
  CHECK(policy::pinned_mig_profile(chain + kPin) == std::optional<std::string>("1g.10gb"));
  CHECK_FALSE(policy::pinned_mig_profile(chain + kPin + " || y").has_value());
  CHECK_FALSE(policy::pinned_mig_profile(std::string(20000, '(') + kPin).has_value());
}

TEST_CASE("pins found once count as the pins found when counting", "[claim][cel]") {
  // Every pin and non-pin above, alone, after another selector, and in pairs, on a MIG and a
  // full-GPU class: counting a subrequest whose pins were found in advance (as the claim decoder
  // does) gives the same slices and profiles as counting one that finds them itself.
  std::vector<std::string> selectors;
  for (const auto& c : kPins) selectors.push_back(c.cel);
  selectors.insert(selectors.end(), kNonPins.begin(), kNonPins.end());
  std::vector<std::vector<std::string_view>> cases = {{}};
  for (const auto& a : selectors) {
    cases.push_back({a});
    cases.push_back({"x == 1", a});
    cases.push_back({a, kPin3});
  }
  GpuCounting seven;
  for (std::string_view device_class : {"mig.nvidia.com", "gpu.nvidia.com"}) {
    for (const auto& list : cases) {
      DeviceSubrequest lazy = sub(device_class, 2, list);
      DeviceSubrequest found = lazy;
      policy::find_pinned_mig_profiles(found);
      CHECK(found.pins_found);
      const auto a = policy::count_subrequest(lazy, seven);
      const auto b = policy::count_subrequest(found, seven);
      INFO(device_class << " " << (list.empty() ? std::string_view("(none)") : list.front()));
      CHECK(a.slices == b.slices);
      CHECK(a.profiles == b.profiles);
      if (device_class == "mig.nvidia.com")
        CHECK(std::vector<std::string_view>(a.profiles.begin(), a.profiles.end()) == found.pinned_profiles);
    }
  }
  // What counting reads when the pins were found: the list, not the selectors.
  DeviceSubrequest stale = sub("mig.nvidia.com", 1, {kPin});
  stale.pins_found = true;
  stale.pinned_profiles = {"3g.40gb"};
  CHECK(policy::count_subrequest(stale, seven).slices == 3);
}

TEST_CASE("device classes", "[claim]") {
  CHECK(policy::default_gpu_class_kind("gpu.nvidia.com") == GpuClassKind::Full);
  CHECK(policy::default_gpu_class_kind("vfio.gpu.nvidia.com") == GpuClassKind::Full);
  CHECK(policy::default_gpu_class_kind("mig.nvidia.com") == GpuClassKind::Mig);
  CHECK(policy::default_gpu_class_kind("imex.nvidia.com") == GpuClassKind::NotGpu);
  CHECK(policy::default_gpu_class_kind("") == GpuClassKind::NotGpu);
}

TEST_CASE("slices of one subrequest", "[claim]") {
  GpuCounting seven;
  GpuCounting a30;
  a30.slices_per_gpu = 4;
  auto slices = [](const DeviceSubrequest& s, const GpuCounting& c) { return policy::count_subrequest(s, c).slices; };
  CHECK(slices(sub("gpu.nvidia.com"), seven) == 7);
  CHECK(slices(sub("gpu.nvidia.com", 2), seven) == 14);
  CHECK(slices(sub("gpu.nvidia.com", 3), a30) == 12);
  CHECK(slices(sub("gpu.nvidia.com", 1, {kPin}), seven) == 7);  // a full GPU is whole, pinned or not
  CHECK(slices(sub("mig.nvidia.com", 1, {kPin}), seven) == 1);
  CHECK(slices(sub("mig.nvidia.com", 3, {kPin3}), seven) == 9);
  CHECK(slices(sub("mig.nvidia.com", 28, {kPin}), seven) == 28);  // exactly 4 GPUs
  CHECK(slices(sub("mig.nvidia.com"), seven) == 7);               // unpinned: a whole GPU
  CHECK(slices(sub("mig.nvidia.com", 2, {"device.attributes['gpu.nvidia.com'].profile != 'x'"}), seven) == 14);
  CHECK(slices(sub("mig.nvidia.com", 1, {"device.attributes['gpu.nvidia.com'].profile == '7g.80gb'"}), a30) == 7);  // never under-counted
  CHECK(slices(sub("mig.nvidia.com", 1, {"device.attributes['gpu.nvidia.com'].profile == 'odd'"}), seven) == 7);
  CHECK(slices(sub("mig.nvidia.com", 1, {"device.attributes['gpu.nvidia.com'].profile == '0g.1gb'"}), seven) == 7);
  CHECK(slices(sub("mig.nvidia.com", 1, {kPin, kPin3}), seven) == 3);  // different pins: the largest
  CHECK(slices(sub("mig.nvidia.com", 1, {"x == 1", kPin}), seven) == 1);
  CHECK(slices(sub("imex.nvidia.com", 5), seven) == 0);

  auto pinned = policy::count_subrequest(sub("mig.nvidia.com", 1, {kPin, kPin3, kPin}), seven);
  CHECK(pinned.gpu);
  CHECK(pinned.kind == GpuClassKind::Mig);
  CHECK_FALSE(pinned.all);
  CHECK(pinned.profiles == policy::ProfileList{"1g.10gb", "3g.40gb"});
  CHECK(policy::count_subrequest(sub("gpu.nvidia.com", 1, {kPin}), seven).profiles.empty());
  CHECK_FALSE(policy::count_subrequest(sub("other"), seven).gpu);

  DeviceSubrequest all = sub("mig.nvidia.com", 1, {kPin});
  all.mode = AllocationMode::All;
  auto every = policy::count_subrequest(all, seven);
  CHECK(every.all);
  CHECK(every.slices == kSaturatedSlices);
  CHECK(every.profiles == policy::ProfileList{"1g.10gb"});
  DeviceSubrequest all_other = sub("other");
  all_other.mode = AllocationMode::All;
  CHECK_FALSE(policy::count_subrequest(all_other, seven).all);  // only GPU classes count

  CHECK(slices(sub("gpu.nvidia.com", int64_t{1} << 62), seven) == kSaturatedSlices);
  CHECK(slices(sub("gpu.nvidia.com", INT64_MAX), seven) == kSaturatedSlices);
  CHECK(slices(sub("gpu.nvidia.com", kSaturatedSlices / 7), seven) == kSaturatedSlices / 7 * 7);
  CHECK(slices(sub("gpu.nvidia.com", 0), seven) == 7);  // a count below 1 counts as the default 1
}

TEST_CASE("the caller decides classes, slices per GPU and profile sizes", "[claim]") {
  GpuCounting custom;
  custom.class_kind = [](std::string_view c) {
    if (c == "big") return GpuClassKind::Full;
    if (c == "small") return GpuClassKind::Mig;
    return GpuClassKind::NotGpu;
  };
  custom.profile_slices = [](std::string_view p) -> std::optional<int> {
    if (p == "1g.10gb") return 2;
    return std::nullopt;
  };
  CHECK(policy::count_subrequest(sub("gpu.nvidia.com"), custom).slices == 0);
  CHECK(policy::count_subrequest(sub("big"), custom).slices == 7);
  CHECK(policy::count_subrequest(sub("small", 1, {kPin}), custom).slices == 2);
  CHECK(policy::count_subrequest(sub("small", 1, {kPin3}), custom).slices == 7);  // unknown to the caller
  custom.slices_per_gpu = 0;  // nonsense: counts as 7
  CHECK(policy::count_subrequest(sub("big"), custom).slices == 7);
  custom.slices_per_gpu = 1;
  CHECK(policy::count_subrequest(sub("small", 3, {kPin}), custom).slices == 6);  // its slices, even above one GPU
}

TEST_CASE("requests: firstAvailable counts its largest alternative", "[claim]") {
  ClaimView claim;
  claim.requests.push_back(request(0, "fa", {sub("mig.nvidia.com", 1, {kPin}), sub("gpu.nvidia.com", 2),
                                             sub("mig.nvidia.com", 4, {kPin3})}));
  claim.requests.push_back(request(1, "mixed", {sub("imex.nvidia.com", 9), sub("mig.nvidia.com", 1, {kPin})}));
  claim.requests.push_back(request(2, "none", {sub("imex.nvidia.com", 9)}));
  DeviceSubrequest admin = sub("gpu.nvidia.com");
  admin.admin_access = true;
  claim.requests.push_back(request(3, "admin", {admin}));
  DeviceSubrequest other_admin = sub("imex.nvidia.com");
  other_admin.admin_access = true;
  claim.requests.push_back(request(4, "other-admin", {other_admin}));

  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  REQUIRE(gpus.requests.size() == 5);
  CHECK(gpus.requests[0].index == 0);
  CHECK(gpus.requests[0].name == "fa");
  CHECK(gpus.requests[0].first_available);
  CHECK(gpus.requests[0].gpu);
  CHECK(gpus.requests[0].slices == 14);  // max(1, 14, 12)
  CHECK(gpus.requests[0].profiles == policy::ProfileList{"1g.10gb", "3g.40gb"});
  CHECK(gpus.requests[0].full_class);
  CHECK(gpus.requests[0].mig_class);
  CHECK(gpus.requests[1].gpu);
  CHECK_FALSE(gpus.requests[1].full_class);
  CHECK(gpus.requests[1].mig_class);
  CHECK(gpus.requests[1].slices == 1);
  CHECK_FALSE(gpus.requests[2].gpu);
  CHECK(gpus.requests[2].slices == 0);
  CHECK(gpus.requests[3].admin_access);
  CHECK(gpus.requests[3].full_class);
  CHECK_FALSE(gpus.requests[3].mig_class);
  CHECK_FALSE(gpus.requests[2].full_class);
  CHECK(gpus.requests[3].index == 3);
  CHECK_FALSE(gpus.requests[4].admin_access);  // not a GPU request
  CHECK(gpus.slices == 14 + 1 + 7);
  CHECK(gpus.gpu);
  CHECK(gpus.admin_access);
  CHECK_FALSE(gpus.all);
  CHECK_FALSE(gpus.mps);

  DeviceSubrequest every = sub("gpu.nvidia.com");
  every.mode = AllocationMode::All;
  claim.requests.push_back(request(5, "every", {sub("mig.nvidia.com"), every}));
  gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.requests[5].all);
  CHECK(gpus.requests[5].slices == kSaturatedSlices);
  CHECK(gpus.all);
  CHECK(gpus.slices == kSaturatedSlices);

  ClaimView empty;
  auto none = policy::count_claim_gpus(empty, GpuCounting{});
  CHECK(none.slices == 0);
  CHECK_FALSE(none.gpu);
  CHECK(none.requests.empty());
}

TEST_CASE("claim sums saturate", "[claim]") {
  ClaimView claim;
  for (uint32_t i = 0; i < 8; ++i) claim.requests.push_back(request(i, "r", {sub("gpu.nvidia.com", kSaturatedSlices / 8)}));
  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.slices == kSaturatedSlices);
  for (const auto& r : gpus.requests) CHECK(r.slices == kSaturatedSlices / 8 * 7);
  ClaimView two;
  two.requests.push_back(request(0, "a", {sub("gpu.nvidia.com", kSaturatedSlices / 14)}));
  two.requests.push_back(request(1, "b", {sub("gpu.nvidia.com", kSaturatedSlices / 14)}));
  CHECK(policy::count_claim_gpus(two, GpuCounting{}).slices == kSaturatedSlices / 14 * 14);
  two.requests.push_back(request(2, "c", {sub("gpu.nvidia.com", 1)}));
  CHECK(policy::count_claim_gpus(two, GpuCounting{}).slices == kSaturatedSlices);
}

TEST_CASE("MPS: which driver configs apply to which requests", "[claim][mps]") {
  CHECK(policy::config_asks_mps(config("gpu.nvidia.com", "GpuConfig", "MPS")));
  CHECK(policy::config_asks_mps(config("gpu.nvidia.com", "MigDeviceConfig", "MPS")));
  CHECK(policy::config_asks_mps(config("gpu.nvidia.com", "GpuConfig", "mps")));
  CHECK_FALSE(policy::config_asks_mps(config("gpu.nvidia.com", "GpuConfig", "TimeSlicing")));
  CHECK_FALSE(policy::config_asks_mps(config("gpu.nvidia.com", "GpuConfig", "")));
  CHECK_FALSE(policy::config_asks_mps(config("gpu.nvidia.com", "VfioDeviceConfig", "MPS")));
  CHECK_FALSE(policy::config_asks_mps(config("gpu.nvidia.com", "", "MPS")));
  CHECK_FALSE(policy::config_asks_mps(config("other.example.com", "GpuConfig", "MPS")));
  CHECK_FALSE(policy::config_asks_mps(config("compute-domain.nvidia.com", "GpuConfig", "MPS")));

  CHECK(policy::config_applies_to(config("", "", ""), "anything"));
  CHECK(policy::config_applies_to(config("", "", "", {"a", "gpu"}), "gpu"));
  CHECK(policy::config_applies_to(config("", "", "", {"gpu/big"}), "gpu"));
  CHECK_FALSE(policy::config_applies_to(config("", "", "", {"gpus"}), "gpu"));
  CHECK_FALSE(policy::config_applies_to(config("", "", "", {"gpu2/x"}), "gpu"));
  CHECK_FALSE(policy::config_applies_to(config("", "", "", {"gp"}), "gpu"));
  CHECK_FALSE(policy::config_applies_to(config("", "", "", {"other"}), "gpu"));

  ClaimView claim;
  claim.requests.push_back(request(0, "ts", {sub("gpu.nvidia.com")}));
  claim.requests.push_back(request(1, "mps", {sub("gpu.nvidia.com")}));
  claim.requests.push_back(request(2, "fa", {sub("mig.nvidia.com"), sub("gpu.nvidia.com")}));
  claim.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "TimeSlicing", {"ts"}));
  claim.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "MPS", {"mps"}));
  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK_FALSE(gpus.requests[0].mps);
  CHECK(gpus.requests[1].mps);
  CHECK_FALSE(gpus.requests[2].mps);
  CHECK(gpus.mps);

  claim.configs.push_back(config("gpu.nvidia.com", "MigDeviceConfig", "MPS", {"fa/0"}));
  gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.requests[2].mps);
  CHECK_FALSE(gpus.requests[0].mps);

  ClaimView all_requests;
  all_requests.requests.push_back(request(0, "a", {sub("gpu.nvidia.com")}));
  all_requests.requests.push_back(request(1, "b", {sub("imex.nvidia.com")}));
  all_requests.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "MPS"));
  gpus = policy::count_claim_gpus(all_requests, GpuCounting{});
  CHECK(gpus.requests[0].mps);
  CHECK(gpus.requests[1].mps);  // the config is the NVIDIA driver's whatever the class
  CHECK(gpus.mps);
  all_requests.configs[0].driver = "other.example.com";
  CHECK_FALSE(policy::count_claim_gpus(all_requests, GpuCounting{}).mps);
}

TEST_CASE("time-slicing and shares of a device: which requests they mark", "[claim][gpu-sharing]") {
  CHECK(policy::config_asks_time_slicing(config("gpu.nvidia.com", "GpuConfig", "TimeSlicing")));
  CHECK(policy::config_asks_time_slicing(config("gpu.nvidia.com", "MigDeviceConfig", "timeslicing")));
  CHECK_FALSE(policy::config_asks_time_slicing(config("gpu.nvidia.com", "GpuConfig", "MPS")));
  CHECK_FALSE(policy::config_asks_time_slicing(config("gpu.nvidia.com", "GpuConfig", "Time-Slicing")));
  CHECK_FALSE(policy::config_asks_time_slicing(config("gpu.nvidia.com", "VfioDeviceConfig", "TimeSlicing")));
  CHECK_FALSE(policy::config_asks_time_slicing(config("other.example.com", "GpuConfig", "TimeSlicing")));

  ClaimView claim;
  claim.requests.push_back(request(0, "ts", {sub("gpu.nvidia.com")}));
  claim.requests.push_back(request(1, "mps", {sub("gpu.nvidia.com")}));
  claim.requests.push_back(request(2, "fa", {sub("mig.nvidia.com"), sub("gpu.nvidia.com")}));
  claim.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "TimeSlicing", {"ts"}));
  claim.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "MPS", {"mps"}));
  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.requests[0].time_slicing);
  CHECK_FALSE(gpus.requests[0].mps);
  CHECK_FALSE(gpus.requests[1].time_slicing);
  CHECK_FALSE(gpus.requests[2].time_slicing);
  CHECK(gpus.time_slicing);
  CHECK_FALSE(gpus.capacity);
  for (size_t i = 0; i < claim.requests.size(); ++i)
    CHECK(policy::count_request(claim, claim.requests[i], GpuCounting{}).time_slicing == gpus.requests[i].time_slicing);

  // capacity on a GPU alternative (of firstAvailable too) is a share; on a class that is no GPU's, not.
  claim.requests[2].alternatives[1].capacity = true;
  claim.requests.push_back(request(3, "nic", {sub("nic.example.com")}));
  claim.requests[3].alternatives[0].capacity = true;
  gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.requests[2].capacity);
  CHECK_FALSE(gpus.requests[3].capacity);
  CHECK(gpus.capacity);
  claim.requests[2].alternatives[1].capacity = false;
  CHECK_FALSE(policy::count_claim_gpus(claim, GpuCounting{}).capacity);
}

TEST_CASE("large claims: MPS marking and profile lists stay n log n", "[claim][mps]") {
  constexpr int kN = 20000;
  std::vector<std::string> names, listed;
  names.reserve(kN);
  listed.reserve(kN);
  for (int i = 0; i < kN; ++i) {
    names.push_back("r" + std::to_string(i));
    listed.push_back("r" + std::to_string(i * 2) + "/sub");
  }
  ClaimView claim;
  for (int i = 0; i < kN; ++i) {
    claim.requests.push_back(request(static_cast<uint32_t>(i), names[i], {sub("gpu.nvidia.com")}));
    claim.configs.push_back(config("gpu.nvidia.com", "GpuConfig", "MPS", {listed[i]}));
  }
  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  REQUIRE(gpus.requests.size() == kN);
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += gpus.requests[i].mps != (i % 2 == 0);
  CHECK(wrong == 0);
  CHECK(gpus.slices == int64_t{7} * kN);
  // The per-request function agrees with the claim-wide one.
  for (int i : {0, 1, 2, 9999, kN - 1})
    CHECK(policy::count_request(claim, claim.requests[i], GpuCounting{}).mps == gpus.requests[i].mps);

  std::string many;
  for (int i = 0; i < kN; ++i) many += "device.attributes['gpu.nvidia.com'].profile == '" + names[i % 100] + "' && ";
  many += kPin;
  CHECK(policy::pinned_mig_profiles(many).size() == 101);
  CHECK_FALSE(policy::pinned_mig_profile(many).has_value());
}

TEST_CASE("IMEX: which requests reach every channel of a compute domain", "[claim][imex]") {
  using policy::config_reaches_every_imex_channel;
  auto cd = [](std::string_view kind, std::string_view mode, std::vector<std::string_view> requests = {}) {
    DriverConfigView c = config("compute-domain.nvidia.com", kind, "", std::move(requests));
    c.allocation_mode = mode;
    return c;
  };
  CHECK(config_reaches_every_imex_channel(cd("ComputeDomainChannelConfig", "All")));
  CHECK(config_reaches_every_imex_channel(cd("ComputeDomainChannelConfig", "all")));
  CHECK(config_reaches_every_imex_channel(cd("ComputeDomainDaemonConfig", "")));
  CHECK_FALSE(config_reaches_every_imex_channel(cd("ComputeDomainChannelConfig", "Single")));
  CHECK_FALSE(config_reaches_every_imex_channel(cd("ComputeDomainChannelConfig", "")));
  DriverConfigView other = cd("ComputeDomainChannelConfig", "All");
  other.driver = "gpu.nvidia.com";
  CHECK_FALSE(config_reaches_every_imex_channel(other));

  CHECK(policy::default_imex_class("compute-domain-default-channel.nvidia.com"));
  CHECK(policy::default_imex_class("compute-domain-daemon.nvidia.com"));
  CHECK(policy::default_imex_class("imex.nvidia.com"));
  CHECK_FALSE(policy::default_imex_class("gpu.nvidia.com"));

  DeviceSubrequest all = sub("compute-domain-default-channel.nvidia.com");
  all.mode = AllocationMode::All;
  ClaimView claim;
  claim.requests.push_back(request(0, "one", {sub("imex.nvidia.com")}));
  claim.requests.push_back(request(1, "range", {sub("imex.nvidia.com", 4)}));
  claim.requests.push_back(request(2, "fa", {sub("compute-domain-default-channel.nvidia.com"), all}));
  claim.requests.push_back(request(3, "gpu", {sub("gpu.nvidia.com", 2)}));
  auto gpus = policy::count_claim_gpus(claim, GpuCounting{});
  CHECK(gpus.requests[0].imex_every_channel.empty());
  CHECK(gpus.requests[1].imex_every_channel.size() == 1);
  REQUIRE(gpus.requests[2].imex_every_channel.size() == 1);  // the worst alternative counts
  CHECK(gpus.requests[2].imex_every_channel[0] == "compute-domain-default-channel.nvidia.com");
  CHECK(gpus.requests[3].imex_every_channel.empty());  // a GPU class with count 2 is no channel
  CHECK(gpus.imex_every_channel);
  CHECK(gpus.slices == 2 * 7);  // channels count no GPUs

  // A config for all channels marks the requests it applies to, whatever their count.
  ClaimView configured;
  configured.requests.push_back(request(0, "channel", {sub("compute-domain-default-channel.nvidia.com")}));
  configured.requests.push_back(request(1, "other", {sub("imex.nvidia.com")}));
  configured.configs.push_back(cd("ComputeDomainChannelConfig", "All", {"channel"}));
  gpus = policy::count_claim_gpus(configured, GpuCounting{});
  CHECK(gpus.requests[0].imex_every_channel.size() == 1);
  CHECK(gpus.requests[1].imex_every_channel.empty());
  configured.configs[0].allocation_mode = "Single";
  CHECK_FALSE(policy::count_claim_gpus(configured, GpuCounting{}).imex_every_channel);

  // The caller decides which classes hand out channels.
  GpuCounting site;
  site.imex_class = [](std::string_view c) { return c == "imex.example.com"; };
  ClaimView custom;
  custom.requests.push_back(request(0, "a", {sub("imex.example.com", 2)}));
  custom.requests.push_back(request(1, "b", {sub("imex.nvidia.com", 2)}));
  gpus = policy::count_claim_gpus(custom, site);
  CHECK(gpus.requests[0].imex_every_channel.size() == 1);
  CHECK(gpus.requests[1].imex_every_channel.empty());
}
