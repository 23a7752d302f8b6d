// Running the Auditor on YAML written in a test: the objects go through the file source
// (read_files_into) as `gpu-admission audit FILE` reads them, judged with the fixture policy
// (test/fixtures/policy.yaml) unless the test gives its own.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "webhook/audit/audit_sources.h"
#include "webhook/audit/auditor.h"
#include "webhook/io/policy_file.h"
#include "test_paths.h"

namespace audit_test {

using namespace gpu_admission::webhook;
using namespace gpu_admission::webhook::audit;

inline const std::string kFixturePolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";

inline std::string write_temp(const std::string& text, const std::string& suffix = ".yaml") {
  static int counter = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpa-audit-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix);
  std::ofstream(path) << text;
  return path.string();
}

inline const gpu_admission::policy::CompiledPolicy& fixture_policy() {
  static PolicyLoad load = load_policy_file(kFixturePolicy);
  REQUIRE(load.ok());
  return *load.policy;
}

inline AuditResult audit_yaml(const std::string& yaml, const gpu_admission::policy::CompiledPolicy& policy = fixture_policy()) {
  Auditor auditor(policy, 1'800'000'000);
  const auto kinds = wanted_kinds(policy);
  const std::string path = write_temp(yaml);
  const auto error = read_files_into({path}, kinds, auditor);
  std::filesystem::remove(path);
  INFO(error.value_or(""));
  REQUIRE(!error);
  return auditor.finish();
}

inline const AuditSubject* find_subject(const AuditResult& r, const std::string& kind, const std::string& name) {
  for (const auto& s : r.subjects)
    if (s.ref.kind == kind && s.ref.name == name) return &s;
  return nullptr;
}

inline bool has_rule(const AuditSubject& s, const std::string& rule) {
  return std::any_of(s.findings.begin(), s.findings.end(),
                     [&](const auto& f) { return gpu_admission::policy::name_of(f.rule) == rule; });
}

inline const AuditTotal* find_total(const AuditResult& r, const std::string& tenant, const std::string& rule,
                                    FindingLabel label = FindingLabel::Deny) {
  for (const auto& t : r.totals)
    if (t.tenant == tenant && gpu_admission::policy::name_of(t.rule) == rule && t.label == label) return &t;
  return nullptr;
}

// The labels /mutate gives pods of tenant alpha in the fixture policy: a stored pod of team-alpha
// without them is a tenant-label finding.
inline const std::string kAlphaLabels = "labels: {gpu-admission.io/tenant: alpha, cost-center: cc-1042}";
inline std::string labels_for(const std::string& ns) { return ns == "team-alpha" ? ", " + kAlphaLabels : ""; }

// A pod (or template spec) that runs one container; `extra` is YAML spliced into the container.
inline std::string container_spec(const std::string& indent, const std::string& extra = "") {
  return indent + "containers:\n" + indent + "- name: main\n" + indent + "  image: registry.example.com/train:1\n" +
         (extra.empty() ? "" : indent + "  " + extra + "\n");
}

inline std::string owner_ref(const std::string& api_version, const std::string& kind, const std::string& name,
                             const std::string& uid) {
  return "ownerReferences: [{apiVersion: " + api_version + ", kind: " + kind + ", name: " + name + ", uid: " + uid +
         ", controller: true}]";
}

}  // namespace audit_test
