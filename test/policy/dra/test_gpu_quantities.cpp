// GPU quantities never count as zero unless they are zero (the effective GPU request): a
// table of quantity spellings (strings and JSON numbers, every suffix, exponents, many digits)
// with the exact count and status; pods that carry each spelling in requests, limits or both, in
// app, init and sidecar containers; and that every such pod is a GPU pod that gets pinned to its
// tenant's default pool and checked by gpu-tolerations and gpu-cap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <simdjson.h>

#include "policy/evaluation/decision.h"
#include "policy/dra/gpu_request.h"
#include "policy/base/ids.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/views/mig.h"
#include "policy/views/quantity.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using policy::Quantity;
using Status = policy::Quantity::Status;

namespace {

constexpr int64_t kMax = Quantity::kMax;

struct Spelling {
  const char* text;
  Status status;
  int64_t value;  // the count: ceiling for NotInteger, kMax for TooLarge, 0 for Negative/Invalid
};

// String quantities, read exactly.
const std::vector<Spelling> kStrings = {
    // zero, however spelled
    {"0", Status::Integer, 0}, {"0.0", Status::Integer, 0}, {"0m", Status::Integer, 0},
    {"-0", Status::Integer, 0}, {"+0", Status::Integer, 0}, {".0", Status::Integer, 0},
    {"0e9", Status::Integer, 0}, {"0Ki", Status::Integer, 0}, {"000000000000000000000000", Status::Integer, 0},
    {"0e-99999999999999999999", Status::Integer, 0}, {"0.000n", Status::Integer, 0},
    // whole numbers
    {"1", Status::Integer, 1}, {"+1", Status::Integer, 1}, {"007", Status::Integer, 7}, {"5.", Status::Integer, 5},
    {"2.0", Status::Integer, 2}, {"2000m", Status::Integer, 2}, {"1000000u", Status::Integer, 1},
    {"1000000000n", Status::Integer, 1},
    // decimal SI suffixes
    {"1k", Status::Integer, 1000}, {"1M", Status::Integer, 1000000}, {"1G", Status::Integer, 1000000000},
    {"1T", Status::Integer, 1000000000000}, {"1P", Status::Integer, 1000000000000000},
    {"1E", Status::Integer, 1000000000000000000}, {"9E", Status::Integer, 9000000000000000000},
    {"1.5k", Status::Integer, 1500}, {"10E", Status::TooLarge, kMax},
    // binary SI suffixes
    {"1Ki", Status::Integer, 1024}, {"1Mi", Status::Integer, 1048576}, {"1Gi", Status::Integer, 1073741824},
    {"1Ti", Status::Integer, 1099511627776}, {"1Pi", Status::Integer, 1125899906842624},
    {"1Ei", Status::Integer, 1152921504606846976}, {"7Ei", Status::Integer, 8070450532247928832},
    {"8Ei", Status::TooLarge, kMax}, {"0.5Ki", Status::Integer, 512}, {"0.1Ki", Status::NotInteger, 103},
    {"0.001Ki", Status::NotInteger, 2}, {"0.0009765625Ki", Status::Integer, 1},
    // fractions count as their ceiling (what the kubelet hands out)
    {"500m", Status::NotInteger, 1}, {"1500m", Status::NotInteger, 2}, {"999900u", Status::NotInteger, 1},
    {"1000001u", Status::NotInteger, 2}, {"1999999u", Status::NotInteger, 2}, {"1n", Status::NotInteger, 1},
    {"1500000000n", Status::NotInteger, 2}, {".5", Status::NotInteger, 1}, {"+.5", Status::NotInteger, 1},
    {"0.9999", Status::NotInteger, 1}, {"1.0001", Status::NotInteger, 2}, {"1.5", Status::NotInteger, 2},
    // exponents
    {"1e3", Status::Integer, 1000}, {"1E3", Status::Integer, 1000}, {"1e+3", Status::Integer, 1000},
    {"1E+3", Status::Integer, 1000}, {"1e0", Status::Integer, 1}, {"3e0", Status::Integer, 3},
    {"20e-1", Status::Integer, 2}, {"1.e3", Status::Integer, 1000}, {"1e18", Status::Integer, 1000000000000000000},
    {"1e-3", Status::NotInteger, 1}, {"1E-3", Status::NotInteger, 1}, {"15e-1", Status::NotInteger, 2},
    {"1e-100", Status::NotInteger, 1}, {"1e-1000000", Status::NotInteger, 1},
    {"1.5e-99999999999999999999", Status::NotInteger, 1},
    {"1e19", Status::TooLarge, kMax}, {"1e100", Status::TooLarge, kMax},
    {"1e99999999999999999999999", Status::TooLarge, kMax},
    // the edge of int64
    {"9223372036854775807", Status::Integer, kMax}, {"9223372036854775808", Status::TooLarge, kMax},
    {"9223372036854775806.5", Status::NotInteger, kMax}, {"9223372036854775807.1", Status::TooLarge, kMax},
    {"99999999999999999999", Status::TooLarge, kMax},
    // many digits (the long-digit path)
    {"00000000000000000000000000000000000000003", Status::Integer, 3},
    {"3.00000000000000000000000000000000000000", Status::Integer, 3},
    {"0.00000000000000000000000000000000000001", Status::NotInteger, 1},
    {"1.00000000000000000000000000000001", Status::NotInteger, 2},
    {"123456789012345678.9", Status::NotInteger, 123456789012345679},
    {"1234567890123456789.01", Status::NotInteger, 1234567890123456790},
    {"123456789012345678901234567890.5", Status::TooLarge, kMax},
    {"0.000000000000000000000000000000000000000000000000001Ki", Status::NotInteger, 1},
    {"1.00000000000000000000000000000001Ki", Status::NotInteger, 1025},
    {"0.000000000931322574615478515625Gi", Status::Integer, 1},            // 2^-30 x 2^30
    {"0.000000000931322574615478515625Ei", Status::Integer, 1073741824},   // 2^-30 x 2^60
    {"0.000000000931322574615478515626Gi", Status::NotInteger, 2},
    // negative: 0 units, still a GPU pod
    {"-1", Status::Negative, 0}, {"-500m", Status::Negative, 0}, {"-1e100", Status::Negative, 0},
    {"-.5", Status::Negative, 0},
    // unreadable: counted as more than any cap
    {"", Status::Invalid, 0}, {"abc", Status::Invalid, 0}, {"1x", Status::Invalid, 0}, {"1 ", Status::Invalid, 0},
    {" 1", Status::Invalid, 0}, {"1Zi", Status::Invalid, 0}, {"1ki", Status::Invalid, 0}, {"1e", Status::Invalid, 0},
    {"1e+", Status::Invalid, 0}, {"e3", Status::Invalid, 0}, {".", Status::Invalid, 0}, {"+", Status::Invalid, 0},
    {"1.2.3", Status::Invalid, 0}, {"0x10", Status::Invalid, 0}, {"1Kib", Status::Invalid, 0},
    {"1m1", Status::Invalid, 0}, {"--1", Status::Invalid, 0}, {"1,5", Status::Invalid, 0},
};

// JSON numbers (the decoder's Integer and Float forms), as JSON text.
const std::vector<Spelling> kNumbers = {
    {"0", Status::Integer, 0}, {"0.0", Status::Integer, 0}, {"-0.0", Status::Integer, 0},
    {"2", Status::Integer, 2}, {"2.0", Status::Integer, 2}, {"1e3", Status::Integer, 1000},
    {"0.5", Status::NotInteger, 1}, {"1.5", Status::NotInteger, 2}, {"0.9999", Status::NotInteger, 1},
    {"1e-3", Status::NotInteger, 1}, {"1E-300", Status::NotInteger, 1},
    {"1e18", Status::Integer, 1000000000000000000}, {"9.3e18", Status::TooLarge, kMax},
    {"1e300", Status::TooLarge, kMax}, {"18446744073709551615", Status::TooLarge, kMax},
    {"-1", Status::Negative, 0}, {"-0.5", Status::Negative, 0}, {"-1e300", Status::Negative, 0},
};

std::string show(Status s) { return policy::describe(s); }

const policy::CompiledPolicy& quantity_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(R"(
apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: quantities}
spec:
  defaults:
    maxGpusPerPod: 2
    gpuTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  pools:
    - name: coop
      nodeSelector: {gpu.example.com/pool: coop}
      trust: cooperative
      gpuModel: H100-SXM5-80GB
  tenants:
    - name: team
      namespaces: [team]
      pools: [coop]
      defaultPool: coop
      maxGpusPerPod: 4
)",
                                                                     "quantities.yaml");
  if (!load.ok()) FAIL("the quantity policy does not load:\n" << load.report());
  return *load.policy;
}

enum class Where { Requests, Limits, Both };
constexpr Where kPlaces[] = {Where::Requests, Where::Limits, Where::Both};
const char* name_of(Where w) { return w == Where::Requests ? "requests" : w == Where::Limits ? "limits" : "both"; }

// Every spelling of a GPU resource: the device plugin's, and the DRA extended resources of a
// full-GPU and a MIG device class (one whole GPU per unit each).
const char* const kGpuNames[] = {"nvidia.com/gpu", "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
                                 "deviceclass.resource.kubernetes.io/mig.nvidia.com"};

// `quantity` is JSON text: "\"500m\"" for a string, "0.5" for a number.
Json resources(const std::string& quantity, Where where, const std::string& name = "nvidia.com/gpu") {
  Json r = Json::object();
  if (where != Where::Limits) r["requests"] = {{name, Json::parse(quantity)}, {"cpu", "500m"}};
  if (where != Where::Requests) r["limits"] = {{name, Json::parse(quantity)}};
  return r;
}

Json container(const std::string& name, const Json& res = Json::object()) {
  Json c = {{"name", name}, {"image", "registry.example.com/app:1"}};
  if (!res.empty()) c["resources"] = res;
  return c;
}

Json pod_with(Json app_containers, Json init_containers = Json::array()) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "q"}, {"namespace", "team"}}}};
  pod["spec"]["containers"] = std::move(app_containers);
  if (!init_containers.empty()) pod["spec"]["initContainers"] = std::move(init_containers);
  return pod;
}

struct Computed {
  policy::GpuRequest gpu;
  size_t problems = 0;
};

// Decodes `pod` and computes its GPU request with no pool (kAnyModelSlicesPerGpu slices per GPU).
Computed compute(const Json& pod) {
  policy::PodDocument document;
  policy::PodView view;
  auto error = policy::decode_pod_json(pod.dump(), false, view, document);
  INFO((error ? error->field + ": " + error->message : std::string()));
  REQUIRE_FALSE(error);
  std::vector<policy::QuantityProblem> problems;
  Computed out;
  out.gpu = policy::compute_gpu_request(quantity_policy(), view, nullptr, &problems);
  out.problems = problems.size();
  return out;
}

constexpr int64_t kNoPool = policy::kAnyModelSlicesPerGpu;

int64_t expected_slices(const Spelling& s, int64_t per_gpu = kNoPool) {
  const int64_t units = policy::units_of({s.status, s.value});
  int64_t slices;
  if (__builtin_mul_overflow(units, per_gpu, &slices) || slices > policy::kSaturatedSlices)
    return policy::kSaturatedSlices;
  return slices;
}

bool has_rule(const policy::Decision& d, policy::RuleId rule) {
  return std::any_of(d.findings.begin(), d.findings.end(), [&](const auto& f) { return f.rule == rule; });
}

std::string findings(const policy::Decision& d) {
  std::string out;
  for (const auto& f : d.findings)
    out += "[" + std::string(policy::name_of(f.rule)) + "] " + f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

policy_test::Judged evaluate(const Json& pod) {
  auto r = policy_test::judge(quantity_policy(), pod, "");
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  return r;
}

// One spelling in one place of an app container: its count, whether the pod is a GPU pod, and
// (for GPU pods) that it is pinned to the tenant's default pool and checked.
void check_spelling(const Spelling& s, const std::string& json_text, Where where, const std::string& name) {
  INFO(name << " quantity " << json_text << " in " << name_of(where) << ", expected " << show(s.status) << " "
            << s.value);
  const Json pod = pod_with(Json::array({container("main", resources(json_text, where, name))}));
  const Computed c = compute(pod);
  const bool gpu = !(s.status == Status::Integer && s.value == 0);
  CHECK(c.gpu.gpu_pod() == gpu);
  CHECK(c.gpu.asks_for_gpu == gpu);
  CHECK(c.gpu.slices == expected_slices(s));
  const size_t places = where == Where::Both ? 2 : 1;
  CHECK(c.problems == (s.status == Status::Integer || s.status == Status::TooLarge ? 0 : places));  // too large: a whole number, over any cap
  if (!gpu) return;

  const auto r = evaluate(pod);
  INFO(findings(r.decision));
  REQUIRE(r.decision.pool != nullptr);
  CHECK(r.decision.pool->name == "coop");
  CHECK(r.decision.mutated[static_cast<size_t>(policy::MutationId::PoolSelector)]);
  CHECK(r.mutated["spec"]["nodeSelector"]["gpu.example.com/pool"] == "coop");
  CHECK(has_rule(r.decision, policy::RuleId::GpuTolerations));  // the pod tolerates no GPU taint
  const bool over_cap = s.status == Status::TooLarge || s.status == Status::Invalid || s.value > 4;
  CHECK(has_rule(r.decision, policy::RuleId::GpuCap) == (s.status != Status::Integer || over_cap));
  CHECK_FALSE(r.decision.allowed);
}

std::string json_string(const char* text) { return Json(text).dump(); }

}  // namespace

TEST_CASE("quantity spellings parse to their exact ceiling", "[quantity]") {
  for (const auto& s : kStrings) {
    INFO("\"" << s.text << "\"");
    const Quantity q = policy::parse_quantity(s.text);
    CHECK(show(q.status) == show(s.status));
    CHECK(q.value == s.value);
  }
}

TEST_CASE("JSON number quantities count like their string spelling", "[quantity]") {
  for (const auto& s : kNumbers) {
    const Json pod = pod_with(Json::array({container("main", resources(s.text, Where::Limits))}));
    INFO("number " << s.text << " sent as " << pod.dump());
    const Computed c = compute(pod);
    CHECK(c.gpu.slices == expected_slices(s));
    CHECK(c.problems == (s.status == Status::Integer || s.status == Status::TooLarge ? 0u : 1u));  // too large: a whole number, over any cap
  }
}

TEST_CASE("units_of: fractions count up, too large and unreadable saturate, negatives count 0", "[quantity]") {
  using policy::units_of;
  CHECK(units_of(policy::parse_quantity("999900u")) == 1);
  CHECK(units_of(policy::parse_quantity("1e100")) == policy::kSaturatedSlices);
  CHECK(units_of(policy::parse_quantity("not-a-number")) == policy::kSaturatedSlices);
  CHECK(units_of(policy::parse_quantity("-3")) == 0);
  CHECK(units_of(policy::parse_quantity("0")) == 0);
  CHECK(policy::parse_quantity("-3").nonzero());
  CHECK_FALSE(policy::parse_quantity("0.000").nonzero());
}

TEST_CASE("every GPU string quantity in requests, limits or both makes a pinned, checked GPU pod", "[quantity]") {
  for (const char* name : kGpuNames)
    for (const auto& s : kStrings)
      for (Where where : kPlaces) check_spelling(s, json_string(s.text), where, name);
}

TEST_CASE("every GPU number quantity in requests, limits or both makes a pinned, checked GPU pod", "[quantity]") {
  for (const char* name : kGpuNames)
    for (const auto& s : kNumbers)
      for (Where where : kPlaces) check_spelling(s, s.text, where, name);
}

TEST_CASE("fractional GPUs in init containers and sidecars make a GPU pod", "[quantity]") {
  const Json cpu_only = Json::array({container("main")});
  const Json init = container("warmup", resources(json_string("999900u"), Where::Limits));
  Json sidecar = container("proxy", resources(json_string("500m"), Where::Requests));
  sidecar["restartPolicy"] = "Always";

  SECTION("init container") {
    const Computed c = compute(pod_with(cpu_only, Json::array({init})));
    CHECK(c.gpu.gpu_pod());
    CHECK(c.gpu.slices == kNoPool);
    CHECK(c.problems == 1);
  }
  SECTION("sidecar") {
    const Computed c = compute(pod_with(cpu_only, Json::array({sidecar})));
    CHECK(c.gpu.gpu_pod());
    CHECK(c.gpu.slices == kNoPool);
  }
  SECTION("sidecar plus an app container: sidecars add up") {
    const Json app = Json::array({container("main", resources(json_string("1.5"), Where::Both))});
    const Computed c = compute(pod_with(app, Json::array({sidecar})));
    CHECK(c.gpu.slices == 3 * kNoPool);  // ceil(1.5) + ceil(0.5)
    CHECK(c.problems == 3);
  }
  SECTION("an init container too large to count saturates the pod") {
    const Json huge = container("warmup", resources(json_string("1e100"), Where::Limits));
    const Computed c = compute(pod_with(cpu_only, Json::array({huge})));
    CHECK(c.gpu.slices == policy::kSaturatedSlices);
  }
  SECTION("pinned and checked") {
    const auto r = evaluate(pod_with(cpu_only, Json::array({sidecar, init})));
    INFO(findings(r.decision));
    REQUIRE(r.decision.pool != nullptr);
    CHECK(r.decision.pool->name == "coop");
    CHECK(has_rule(r.decision, policy::RuleId::GpuTolerations));
    CHECK(has_rule(r.decision, policy::RuleId::GpuCap));
    CHECK(r.decision.gpu_slices == 14);  // the sidecar starts first and runs beside the init container
  }
}

TEST_CASE("a pod that asks for a GPU is a GPU pod even when its total is zero", "[quantity]") {
  SECTION("a negative quantity") {
    const Computed c = compute(pod_with(Json::array({container("main", resources(json_string("-1"), Where::Limits))})));
    CHECK(c.gpu.slices == 0);
    CHECK(c.gpu.asks_for_gpu);
    CHECK(c.gpu.gpu_pod());
  }
  SECTION("a request of 0 beside a negative limit") {
    Json res = {{"requests", {{"nvidia.com/gpu", "0"}}}, {"limits", {{"nvidia.com/gpu", "-2"}}}};
    const Json pod = pod_with(Json::array({container("main", res)}));
    const Computed c = compute(pod);
    CHECK(c.gpu.slices == 0);
    CHECK(c.gpu.gpu_pod());
    CHECK(c.problems == 1);
    const auto r = evaluate(pod);
    INFO(findings(r.decision));
    REQUIRE(r.decision.pool != nullptr);
    CHECK(has_rule(r.decision, policy::RuleId::GpuTolerations));
    CHECK(has_rule(r.decision, policy::RuleId::GpuCap));
  }
}

TEST_CASE("a GPU resource in requests and limits counts the larger", "[quantity]") {
  // The API server requires the two to be equal for extended resources; `check` reads files.
  SECTION("a request of 0 beside a fractional limit") {
    Json res = {{"requests", {{"nvidia.com/gpu", "0"}}}, {"limits", {{"nvidia.com/gpu", "500m"}}}};
    const Json pod = pod_with(Json::array({container("main", res)}));
    const Computed c = compute(pod);
    CHECK(c.gpu.slices == kNoPool);
    CHECK(c.gpu.gpu_pod());
    const auto r = evaluate(pod);
    INFO(findings(r.decision));
    REQUIRE(r.decision.pool != nullptr);
    CHECK(has_rule(r.decision, policy::RuleId::GpuTolerations));
    CHECK(has_rule(r.decision, policy::RuleId::GpuCap));
  }
  SECTION("a limit above its request") {
    Json res = {{"requests", {{"nvidia.com/gpu", "1"}}}, {"limits", {{"nvidia.com/gpu", 8}}}};
    const auto r = evaluate(pod_with(Json::array({container("main", res)})));
    INFO(findings(r.decision));
    CHECK(r.decision.gpu_slices == 56);
    CHECK(has_rule(r.decision, policy::RuleId::GpuCap));
  }
  SECTION("a request above its limit") {
    Json res = {{"requests", {{"nvidia.com/gpu", "1e100"}}}, {"limits", {{"nvidia.com/gpu", 1}}}};
    CHECK(compute(pod_with(Json::array({container("main", res)}))).gpu.slices == policy::kSaturatedSlices);
  }
}

TEST_CASE("zero GPUs, however spelled, is not a GPU pod", "[quantity]") {
  Json res = {{"requests", {{"nvidia.com/gpu", "0m"}}}, {"limits", {{"nvidia.com/gpu", 0.0}}}};
  const Computed c = compute(pod_with(Json::array({container("main", res)})));
  CHECK_FALSE(c.gpu.gpu_pod());
  CHECK(c.problems == 0);
}

TEST_CASE("gpu-cap names the field of a fractional quantity and what it counts as", "[quantity]") {
  const auto r = evaluate(pod_with(Json::array({container("main", resources(json_string("999900u"), Where::Limits))})));
  INFO(findings(r.decision));
  auto it = std::find_if(r.decision.findings.begin(), r.decision.findings.end(),
                         [](const auto& f) { return f.rule == policy::RuleId::GpuCap; });
  REQUIRE(it != r.decision.findings.end());
  CHECK(it->field == "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]");
  CHECK(it->message.find("not a whole number") != std::string::npos);
  CHECK(it->message.find("counts as 1") != std::string::npos);
}

TEST_CASE("container_asks_for_gpu agrees with the pod's count", "[quantity]") {
  for (const char* name : kGpuNames) {
    for (const auto& s : kStrings) {
      INFO(name << " \"" << s.text << "\"");
      policy::PodDocument document;
      const Json pod = pod_with(Json::array({container("main", resources(json_string(s.text), Where::Limits, name))}));
      policy::PodView view;
      REQUIRE_FALSE(policy::decode_pod_json(pod.dump(), false, view, document));
      REQUIRE(view.containers.size() == 1);
      CHECK(policy::container_asks_for_gpu(quantity_policy(), view.containers[0]) ==
            policy::compute_gpu_request(quantity_policy(), view, nullptr, nullptr).gpu_pod());
    }
  }
}

TEST_CASE("resource names are classified whatever their length, against the policy's names", "[quantity]") {
  // Names shorter than every GPU resource are answered without a lookup; the shortest here is
  // one byte, then the MIG prefix is the shortest.
  for (const bool one_byte_name : {true, false}) {
    const std::string full = one_byte_name ? "[g, nvidia.com/gpu]" : "[nvidia.com/gpu]";
    const webhook::PolicyLoad load = webhook::load_policy_text(R"(
apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: names}
spec:
  gpuResources: {full: )" + full + R"(, shared: [ex.io/s], migPrefix: m/}
)", "names.yaml");
    INFO(load.report());
    REQUIRE(load.policy);
    using Kind = policy::CompiledPolicy::GpuKind;
    const std::pair<const char*, Kind> cases[] = {
        {"g", one_byte_name ? Kind::Full : Kind::NotGpu}, {"", Kind::NotGpu}, {"m", Kind::NotGpu},
        {"m/", Kind::Mig}, {"m/1g.10gb", Kind::Mig}, {"cpu", Kind::NotGpu}, {"ex.io/s", Kind::Shared},
        {"ex.io/", Kind::NotGpu}, {"nvidia.com/gpu", Kind::Full}, {"nvidia.com/gpu2", Kind::NotGpu},
        {"memory", Kind::NotGpu}};
    for (const auto& [name, kind] : cases) {
      INFO("\"" << name << "\"" << (one_byte_name ? " with a one-byte GPU name" : ""));
      CHECK(load.policy->classify_resource(name) == kind);
    }
  }
}
