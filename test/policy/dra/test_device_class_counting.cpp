// Counting GPUs beyond nvidia.com/gpu: DRA extended resources (deviceclass.resource.kubernetes.io/
// <class>, one device per unit) classified once against spec.deviceClasses and counted by every
// counter; and MIG profiles of a pod with no pool, counted exactly at their largest share on any
// model in slices of kAnyModelSlicesPerGpu (28: a multiple of the A30's 4 and the others' 7).
// The quantity spellings of both are covered by test_gpu_quantities.cpp.
#include <catch2/catch.hpp>

#include <deque>
#include <string>

#include "policy/dra/gpu_request.h"
#include "policy/dra/pod_claims.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/views/mig.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using Kind = policy::CompiledPolicy::GpuKind;

namespace {

constexpr int kNoPool = policy::kAnyModelSlicesPerGpu;
const std::string kDc = "deviceclass.resource.kubernetes.io/";

const policy::CompiledPolicy& load(const std::string& text) {
  static std::deque<webhook::PolicyLoad> keep;  // references handed out stay valid
  keep.push_back(webhook::load_policy_text(text, "counting.yaml"));
  if (!keep.back().ok()) FAIL("policy does not load:\n" << keep.back().report());
  return *keep.back().policy;
}

const policy::CompiledPolicy& default_policy() {
  static const policy::CompiledPolicy& p = load(R"(
apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: counting}
spec:
  pools:
    - {name: a30, nodeSelector: {pool: a30}, gpuModel: A30-24GB, mig: {strategy: mixed, defaultProfile: 1g.6gb}}
    - {name: a100, nodeSelector: {pool: a100}, gpuModel: A100-SXM4-80GB, mig: {strategy: mixed, defaultProfile: 1g.10gb}}
)");
  return p;
}

const policy::Pool& pool_named(const policy::CompiledPolicy& p, const std::string& name) {
  const policy::Pool* found = nullptr;
  for (const auto& pool : p.pools())
    if (pool.name == name) found = &pool;
  REQUIRE(found);
  return *found;
}

// The effective request of a pod whose one app container has `limits` (JSON), in `pool`.
policy::GpuRequest count(const policy::CompiledPolicy& p, const std::string& limits, const policy::Pool* pool = nullptr) {
  static policy::PodDocument document;
  static policy::PodView view;
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n"},
    "spec":{"containers":[{"name":"c","image":"i","resources":{"limits":)" + limits + "}}]}}";
  auto error = policy::decode_pod_json(pod, false, view, document);
  REQUIRE_FALSE(error);
  return policy::compute_gpu_request(p, view, pool, nullptr);
}

}  // namespace

TEST_CASE("DRA extended resources are classified by their device class", "[quantity][dra]") {
  const auto& p = default_policy();
  const std::pair<std::string, Kind> cases[] = {
      {kDc + "gpu.nvidia.com", Kind::DeviceClassFull},
      {kDc + "vfio.gpu.nvidia.com", Kind::DeviceClassFull},
      {kDc + "mig.nvidia.com", Kind::DeviceClassMig},
      {kDc + "nic.example.com", Kind::NotGpu},  // a class that hands out no GPUs
      {kDc, Kind::NotGpu},
      {kDc + "gpu.nvidia.com/", Kind::NotGpu},
      {kDc + "GPU.nvidia.com", Kind::NotGpu},  // names are case-sensitive
      {"DeviceClass.resource.kubernetes.io/gpu.nvidia.com", Kind::NotGpu},
      {"deviceclass.resource.kubernetes.io.gpu.nvidia.com", Kind::NotGpu},
      {"example.com/deviceclass.resource.kubernetes.io/gpu.nvidia.com", Kind::NotGpu},
      {"gpu.nvidia.com", Kind::NotGpu},  // a class name alone is no resource
      {"nvidia.com/gpu", Kind::Full},
  };
  for (const auto& [name, kind] : cases) {
    INFO(name);
    CHECK(p.classify_resource(name) == kind);
  }
}

TEST_CASE("DRA extended resources follow the policy's deviceClasses, short names included", "[quantity][dra]") {
  const auto& p = load(R"(
apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: classes}
spec:
  gpuResources: {full: [nvidia.com/gpu, "deviceclass.resource.kubernetes.io/listed"]}
  deviceClasses: {full: [g], mig: [m.example.com]}
)");
  CHECK(p.classify_resource(kDc + "g") == Kind::DeviceClassFull);
  CHECK(p.classify_resource(kDc + "m.example.com") == Kind::DeviceClassMig);
  CHECK(p.classify_resource(kDc + "gpu.nvidia.com") == Kind::NotGpu);  // not in this policy's classes
  CHECK(p.classify_resource(kDc + "listed") == Kind::Full);             // a name in gpuResources wins
  CHECK(count(p, R"({")" + kDc + R"(g": 3})").slices == 3 * kNoPool);
  CHECK(count(p, R"({")" + kDc + R"(gpu.nvidia.com": 3})").slices == 0);
}

TEST_CASE("a DRA extended resource counts one whole GPU per unit, a MIG class's too", "[quantity][dra]") {
  const auto& p = default_policy();
  const policy::Pool& a30 = pool_named(p, "a30");
  for (const char* cls : {"gpu.nvidia.com", "vfio.gpu.nvidia.com", "mig.nvidia.com"}) {
    INFO(cls);
    const std::string limits = R"({")" + kDc + cls + R"(": 3, "cpu": "2"})";
    const auto none = count(p, limits);
    CHECK(none.slices == 3 * kNoPool);
    CHECK(none.resource_slices == 3 * kNoPool);
    CHECK(none.asks_for_gpu);
    CHECK(none.device_class_resources);
    CHECK(policy::gpus_text(none.slices, none.slices_per_gpu) == "3");
    const auto in_a30 = count(p, limits, &a30);
    CHECK(in_a30.slices == 3 * 4);
    CHECK(policy::slices_per_unit(p, kDc + cls, &a30) == 4);
  }
  CHECK(policy::slices_per_unit(p, kDc + "nic.example.com", nullptr) == 0);
  const auto mixed = count(p, R"({"nvidia.com/gpu": 1, ")" + kDc + R"(gpu.nvidia.com": 2, ")" + kDc + R"(nic.example.com": 9})");
  CHECK(mixed.slices == 3 * kNoPool);
  CHECK(mixed.several_resources);
  CHECK(policy::gpu_sources_text(mixed) == "3 through resources");
  CHECK(policy::gpu_sources_text(count(p, R"({")" + kDc + R"(mig.nvidia.com": 2})")) ==
        "2 " + kDc + "mig.nvidia.com (a whole GPU each)");
  CHECK_FALSE(count(p, R"({")" + kDc + R"(nic.example.com": 1})").gpu_pod());
}

TEST_CASE("no pool: a MIG profile counts its largest share on any model that lists it", "[quantity][mig]") {
  for (const auto& table : policy::all_mig_tables()) {
    INFO(table.family);
    CHECK(kNoPool % table.compute_slices == 0);  // every share is a whole number of slices
    for (std::string_view profile : table.profiles) {
      INFO(profile);
      auto slices = policy::mig_profile_slices_any_model(profile);
      REQUIRE(slices);
      // At least its share on this model; the same for the resource spelling.
      CHECK(*slices >= *policy::mig_profile_slices(profile) * (kNoPool / table.compute_slices));
      CHECK(policy::mig_profile_slices_any_model(policy::mig_profile_resource_suffix(profile)) == slices);
    }
  }
  using policy::mig_profile_slices_any_model;
  CHECK(mig_profile_slices_any_model("1g.6gb") == 7);       // A30 only: 1/4
  CHECK(mig_profile_slices_any_model("1g.6gb.me") == 7);
  CHECK(mig_profile_slices_any_model("2g.12gb+me") == 14);  // 1/2
  CHECK(mig_profile_slices_any_model("4g.24gb") == 28);     // the whole A30
  CHECK(mig_profile_slices_any_model("1g.10gb") == 4);      // 1/7 on every model that has it
  CHECK(mig_profile_slices_any_model("7g.80gb") == 28);
  CHECK(mig_profile_slices_any_model("4g.40gb") == 16);     // 4/7: the A30's 4g.24gb is another profile
  // Listed nowhere: its share of the smallest GPU with that many slices.
  CHECK(mig_profile_slices_any_model("3g.30gb") == 21);  // 3/4
  CHECK(mig_profile_slices_any_model("5g.50gb") == 20);  // 5/7
  CHECK(mig_profile_slices_any_model("8g.96gb") == 32);  // 8/7: more than any model has
  CHECK_FALSE(mig_profile_slices_any_model("big"));
  CHECK_FALSE(mig_profile_slices_any_model("0g.5gb"));
}

TEST_CASE("no pool: 7 x 1g.6gb is exactly 1 3/4 GPUs; in a pool, the pool's model counts", "[quantity][mig]") {
  const auto& p = default_policy();
  const auto none = count(p, R"({"nvidia.com/mig-1g.6gb": 7})");
  CHECK(none.slices_per_gpu == kNoPool);
  CHECK(none.slices == 49);
  CHECK(policy::gpus_text(none.slices, none.slices_per_gpu) == "1 3/4");
  const auto a30 = count(p, R"({"nvidia.com/mig-1g.6gb": 7})", &pool_named(p, "a30"));
  CHECK(a30.slices == 7);
  CHECK(policy::gpus_text(a30.slices, a30.slices_per_gpu) == "1 3/4");
  // 28 x 1g.10gb is exactly 4 GPUs with or without a pool; one more is above 4.
  CHECK(count(p, R"({"nvidia.com/mig-1g.10gb": 28})").slices == 4 * kNoPool);
  CHECK(count(p, R"({"nvidia.com/mig-1g.10gb": 29})").slices > 4 * kNoPool);
  CHECK(count(p, R"({"nvidia.com/mig-1g.10gb": 28})", &pool_named(p, "a100")).slices == 4 * 7);
  // 8 x 1g.6gb is exactly 2 GPUs, 9 is above: the cap comparison is exact.
  CHECK(count(p, R"({"nvidia.com/mig-1g.6gb": 8})").slices == 2 * kNoPool);
  CHECK(count(p, R"({"nvidia.com/mig-1g.6gb": 9})").slices == 2 * kNoPool + 7);
  // Two profiles in two entries: 1/4 + 1/7 = 11/28.
  const auto two = count(p, R"({"nvidia.com/mig-1g.6gb": 1, "nvidia.com/mig-1g.10gb": 1})");
  CHECK(policy::gpus_text(two.slices, two.slices_per_gpu) == "11/28");
  // An unreadable MIG name is a whole GPU.
  CHECK(count(p, R"({"nvidia.com/mig-huge": 1})").slices == kNoPool);
}

TEST_CASE("no pool: a DRA claim's pinned MIG profile counts its largest share too", "[quantity][mig][dra]") {
  const auto& p = default_policy();
  const policy::GpuCounting none = policy::gpu_counting(p, nullptr);
  CHECK(none.slices_per_gpu == kNoPool);
  CHECK(none.profile_slices("1g.6gb") == 7);
  CHECK(none.profile_slices("1g.10gb") == 4);
  const policy::GpuCounting a30 = policy::gpu_counting(p, &pool_named(p, "a30"));
  CHECK(a30.slices_per_gpu == 4);
  CHECK(a30.profile_slices("1g.6gb") == 1);
  CHECK_FALSE(a30.profile_slices("1g.10gb"));  // not an A30 profile: a whole GPU
}

TEST_CASE("gpus_text writes the fraction in lowest terms", "[quantity]") {
  using policy::gpus_text;
  CHECK(gpus_text(0, kNoPool) == "0");
  CHECK(gpus_text(7, kNoPool) == "1/4");
  CHECK(gpus_text(14, kNoPool) == "1/2");
  CHECK(gpus_text(16, kNoPool) == "4/7");
  CHECK(gpus_text(49, kNoPool) == "1 3/4");
  CHECK(gpus_text(56, kNoPool) == "2");
  CHECK(gpus_text(2, 4) == "1/2");
  CHECK(gpus_text(9, 7) == "1 2/7");
  CHECK(gpus_text(policy::kSaturatedSlices, kNoPool) == "more than can be counted");
}
