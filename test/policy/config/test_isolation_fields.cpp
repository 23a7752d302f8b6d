// The policy fields of issue 42's isolation checks: spec.gpuSharingAnnotations (gpu-sharing),
// spec.deviceClasses.imex and .imexAllowed (gpu-device-access), with their defaults, errors and
// `policy show` round trip; and the note `policy lint` prints about DRA adminAccess.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/config/lint.h"
#include "policy/config/policy_loader.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using Strings = std::vector<std::string>;

namespace {

std::string policy_with(const std::string& spec_lines) {
  return "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nmetadata: {name: fields}\nspec:\n" +
         spec_lines + "\n";
}

}  // namespace

TEST_CASE("gpuSharingAnnotations: the default, a list of one's own, none", "[loader][gpu-sharing]") {
  auto plain = webhook::load_policy_text(policy_with("  exemptions: {namespaces: [kube-system]}"), "p.yaml");
  REQUIRE(plain.ok());
  CHECK(plain.policy->gpu_sharing_annotations() == Strings{"gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"});

  auto own = webhook::load_policy_text(policy_with("  gpuSharingAnnotations: [gpu-fraction, example.com/gpu-share]"),
                                       "p.yaml");
  INFO(own.report());
  REQUIRE(own.ok());
  CHECK(own.issues.empty());
  CHECK(own.policy->gpu_sharing_annotations() == Strings{"gpu-fraction", "example.com/gpu-share"});

  auto none = webhook::load_policy_text(policy_with("  gpuSharingAnnotations: []"), "p.yaml");
  REQUIRE(none.ok());
  CHECK(none.policy->gpu_sharing_annotations().empty());
}

TEST_CASE("gpuSharingAnnotations errors name the entry", "[loader][gpu-sharing]") {
  struct Case {
    std::string spec, error;
  };
  const Case cases[] = {
      {"  gpuSharingAnnotations: gpu-fraction", "spec.gpuSharingAnnotations: must be a list of strings, got a string"},
      {"  gpuSharingAnnotations: [gpu-fraction, 3]", "spec.gpuSharingAnnotations[1]: must be a string, got an integer"},
      {"  gpuSharingAnnotations: [\"\"]", "spec.gpuSharingAnnotations[0]"},
      {"  gpuSharingAnnotations: [a, \"gpu fraction\"]",
       "spec.gpuSharingAnnotations[1]: must be an annotation key: name or prefix/name, without spaces"},
      {"  gpuSharingAnnotations: [a/b/c]", "spec.gpuSharingAnnotations[0]: must be an annotation key"},
      {"  gpuSharingAnnotations: [/gpu-fraction]", "spec.gpuSharingAnnotations[0]: must be an annotation key"},
      {"  gpuSharingAnnotations: [example.com/]", "spec.gpuSharingAnnotations[0]: must be an annotation key"},
  };
  for (const Case& c : cases) {
    auto load = webhook::load_policy_text(policy_with(c.spec), "p.yaml");
    INFO(c.spec << "\n" << load.report());
    CHECK_FALSE(load.ok());
    CHECK(load.report().find(c.error) != std::string::npos);
  }
}

TEST_CASE("deviceClasses.imex and imexAllowed: defaults, lists of one's own, errors", "[loader][imex]") {
  auto plain = webhook::load_policy_text(policy_with("  exemptions: {namespaces: [kube-system]}"), "p.yaml");
  REQUIRE(plain.ok());
  const auto& p = *plain.policy;
  CHECK(p.imex_device_class("compute-domain-default-channel.nvidia.com"));
  CHECK(p.imex_device_class("compute-domain-daemon.nvidia.com"));
  CHECK(p.imex_device_class("imex.nvidia.com"));
  CHECK_FALSE(p.imex_device_class("gpu.nvidia.com"));
  CHECK_FALSE(p.imex_device_class_allowed("compute-domain-default-channel.nvidia.com"));

  auto own = webhook::load_policy_text(
      policy_with("  deviceClasses: {imex: [imex.example.com], imexAllowed: [imex.example.com]}"), "p.yaml");
  INFO(own.report());
  REQUIRE(own.ok());
  CHECK(own.policy->imex_device_class("imex.example.com"));
  CHECK_FALSE(own.policy->imex_device_class("imex.nvidia.com"));  // the list replaces the default
  CHECK(own.policy->imex_device_class_allowed("imex.example.com"));
  // full and mig keep their defaults when only imex is set.
  CHECK(own.policy->classify_device_class("gpu.nvidia.com") != policy::CompiledPolicy::GpuKind::NotGpu);

  auto bad = webhook::load_policy_text(policy_with("  deviceClasses: {imexAllowed: imex.example.com}"), "p.yaml");
  CHECK_FALSE(bad.ok());
  CHECK(bad.report().find("spec.deviceClasses.imexAllowed: must be a list of strings") != std::string::npos);
  auto unknown = webhook::load_policy_text(policy_with("  deviceClasses: {imexAllow: [x]}"), "p.yaml");
  CHECK_FALSE(unknown.ok());
  CHECK(unknown.report().find("spec.deviceClasses") != std::string::npos);
}

TEST_CASE("policy show prints the isolation fields back; its output loads the same", "[loader][show]") {
  auto load = webhook::load_policy_text(
      policy_with("  gpuSharingAnnotations: [gpu-fraction]\n"
                  "  deviceClasses: {imex: [imex.nvidia.com, imex.example.com], imexAllowed: [imex.example.com]}"),
      "p.yaml");
  REQUIRE(load.ok());
  Json shown = policy::policy_config_to_json(load.policy->config());
  CHECK(shown["spec"]["gpuSharingAnnotations"] == Json::array({"gpu-fraction"}));
  CHECK(shown["spec"]["deviceClasses"]["imex"] == Json::array({"imex.nvidia.com", "imex.example.com"}));
  CHECK(shown["spec"]["deviceClasses"]["imexAllowed"] == Json::array({"imex.example.com"}));
  auto again = webhook::load_policy_text(shown.dump(), "shown.json");
  INFO(again.report());
  REQUIRE(again.ok());
  CHECK(again.policy->hash() == load.policy->hash());
  // A changed list is a changed policy.
  auto other = webhook::load_policy_text(policy_with("  gpuSharingAnnotations: [gpu-memory]"), "p.yaml");
  REQUIRE(other.ok());
  CHECK(other.policy->hash() != load.policy->hash());
}

TEST_CASE("lint notes: DRA adminAccess is refused outside exempt namespaces, whatever their labels", "[lint][notes]") {
  auto exempt = webhook::load_policy_text(policy_with("  exemptions: {namespaces: [kube-system, gpu-operator]}"), "p.yaml");
  REQUIRE(exempt.ok());
  policy::Issues notes;
  policy::lint_notes(exempt.policy->config(), notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].severity == policy::Issue::Severity::Note);
  CHECK(notes[0].path == "spec.exemptions.namespaces");
  CHECK(notes[0].message.find("resource.kubernetes.io/admin-access") != std::string::npos);
  CHECK(notes[0].message.find("\"kube-system\", \"gpu-operator\"") != std::string::npos);
  CHECK(policy::format_issue(notes[0], "p.yaml").find("p.yaml: note: spec.exemptions.namespaces: ") == 0);
  // A load never carries notes: they are not warnings.
  for (const auto& issue : exempt.issues) CHECK(issue.severity != policy::Issue::Severity::Note);

  auto none = webhook::load_policy_text(policy_with("  exemptions: {namespaces: []}"), "p.yaml");
  REQUIRE(none.ok());
  notes.clear();
  policy::lint_notes(none.policy->config(), notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].message.find("no namespace is exempt") != std::string::npos);

  auto off = webhook::load_policy_text(policy_with("  rules: {gpu-device-access: off}"), "p.yaml");
  REQUIRE(off.ok());
  notes.clear();
  policy::lint_notes(off.policy->config(), notes);
  CHECK(notes.empty());
}
