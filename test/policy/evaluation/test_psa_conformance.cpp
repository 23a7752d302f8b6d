// Conformance with Kubernetes Pod Security Admission fixtures (../shared/corpora/psa, v1.37):
// with privileged, host-namespaces and gpu-device-access enforced, every baseline and restricted
// `pass` pod is allowed, and every `fail` pod of the privileged and hostNamespaces checks is
// denied by the matching rule. Skips visibly when the corpus is absent.
#include <catch2/catch.hpp>

#include <filesystem>
#include <iostream>
#include <string>

#include "policy/base/ids.h"
#include "webhook/io/manifests.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"
#include "test_paths.h"

using namespace gpu_admission;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: psa-conformance}
spec:
  rules:
    privileged: deny
    host-namespaces: deny
    gpu-device-access: deny
    gpu-cap: off
    mps-adversarial: off
    gpu-tolerations: off
    tenant-pool: off
    tenant-label: off
    mig-profile: off
)";


std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The PSA check a fixture file exercises: its stem without the trailing index.
std::string check_of(const fs::path& file) {
  std::string stem = file.stem().string();
  while (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem.back()))) stem.pop_back();
  return stem;
}

policy_test::Judged evaluate(const policy::CompiledPolicy& policy, const fs::path& file) {
  webhook::ManifestRead read = webhook::read_manifest_file(file.string());
  INFO(file.string());
  REQUIRE_FALSE(read.error.has_value());
  REQUIRE(read.objects.size() == 1);
  return policy_test::judge(policy, read.objects[0].object, "psa-conformance");
}

bool denied_by(const policy_test::Judged& r, policy::RuleId rule) {
  for (const auto& f : r.decision.findings)
    if (f.rule == rule && f.action == policy::Action::Deny) return true;
  return false;
}

}  // namespace

TEST_CASE("PSA v1.37 fixtures agree with privileged, host-namespaces and gpu-device-access", "[psa][corpus]") {
  const fs::path kPsa = test_paths::corpus("psa");
  if (kPsa.empty()) {
    return;
  }
  auto load = webhook::load_policy_text(kPolicy, "psa-conformance.yaml");
  INFO(load.report());
  REQUIRE(load.ok());

  size_t pass_total = 0, pass_agree = 0, fail_total = 0, fail_agree = 0;
  for (const char* level : {"baseline", "restricted"}) {
    for (const auto& file : yaml_files(kPsa / level / "v1.37" / "pass")) {
      auto r = evaluate(*load.policy, file);
      ++pass_total;
      INFO(file.string());
      CHECK(r.status == policy_test::Judged::Status::Evaluated);
      CHECK(r.decision.allowed);
      pass_agree += r.decision.allowed;
    }
    for (const auto& file : yaml_files(kPsa / level / "v1.37" / "fail")) {
      std::string check = check_of(file);
      policy::RuleId rule;
      if (check == "privileged") rule = policy::RuleId::Privileged;
      else if (check == "hostnamespaces") rule = policy::RuleId::HostNamespaces;
      else continue;
      auto r = evaluate(*load.policy, file);
      ++fail_total;
      INFO(file.string());
      CHECK(denied_by(r, rule));
      fail_agree += denied_by(r, rule);
    }
  }
  std::cout << "PSA v1.37 agreement: pass pods allowed " << pass_agree << "/" << pass_total
            << ", privileged/hostNamespaces fail pods denied " << fail_agree << "/" << fail_total << "\n";
  CHECK(pass_total >= 30);  // 15 baseline + 23 restricted in the corpus
  CHECK(fail_total >= 10);
}
