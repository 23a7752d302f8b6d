// The policy engine's path for one object, for the tests of test/policy: decode, evaluate (with
// the mutations where the API server's chain would run /mutate), apply the patch, through policy/
// alone. It mirrors what `check` does with one object (webhook/cli/offline.cpp, through the
// webhook's decide_review) for a CREATE: a Pod is mutated and judged as mutated unless `mutate_pods`
// is false; workloads, claims and PodGroups are judged as /validate judges them; kinds judged by
// template paths (spec.workloads, the built-in ML kinds) template by template, each as the pod it
// creates. AdmissionReviews (UPDATEs, users) are the webhook's business: test/webhook judges those.
// A pod's claims and PodGroup come from TestClaims and TestGroups, through policy/'s own resolver
// interfaces. test/webhook/cli/test_policy_judge_agrees.cpp holds it to check's path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/compiled_policy.h"
#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/evaluation/decision.h"
#include "policy/evaluation/evaluator.h"

namespace policy_test {

using gpu_admission::Json;
namespace policy = gpu_admission::policy;

// One object's result: what the tests compare (the fields of check's result they read).
struct Judged {
  enum class Status { Evaluated, Skipped, Error };
  Status status = Status::Evaluated;
  std::string api_version, kind, namespace_name, name;
  std::string note;  // why skipped, or the error: "field: message"
  policy::Decision decision;
  Json patch = Json::array();  // the decision's patch as JSON
  Json mutated;                // the object after the patch
  // A kind judged by template paths: one result per template (its path in template_path), each
  // with its own decision and patch; the whole object's decision is theirs merged.
  std::string template_path;
  std::vector<Judged> templates;

  bool allowed() const { return status != Status::Evaluated || decision.allowed; }
};

// `default_namespace` is the namespace of an object that names none.
Judged judge(const policy::CompiledPolicy& policy, const Json& object, const std::string& default_namespace,
             bool mutate_pods = true, const policy::ExternalFacts& facts = {});

// ResourceClaims and ResourceClaimTemplates a test names, as the ClaimResolver of its pods.
class TestClaims : public policy::ClaimResolver {
 public:
  TestClaims();
  ~TestClaims() override;
  // Adds a claim or claim template (of a served API version) that decodes; false for anything else.
  bool add(const Json& object, const std::string& default_namespace);
  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// PodGroups a test names, as the PodGroupResolver of its pods.
class TestGroups : public policy::PodGroupResolver {
 public:
  TestGroups();
  ~TestGroups() override;
  // Adds a PodGroup (of a version that serves them) that decodes; false for anything else.
  bool add(const Json& object, const std::string& default_namespace);
  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const override;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace policy_test
