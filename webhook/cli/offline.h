// Offline evaluation of one manifest object (for `check` and `test`) through the webhook's own
// decision phase (decide_review): each object is the CREATE the API server would send for it, plus
// the mutated object (our patch applied to the input). A Pod goes through the API server's chain
// (/mutate: mutated, then judged as mutated) unless `mutate_pods` is false (`check --no-mutate`:
// what /validate alone would say); an AdmissionReview is judged exactly as /validate judges it
// (operation, user, namespace, oldObject).
#pragma once

#include <string>
#include <vector>

#include "policy/dra/claim_view.h"
#include "policy/config/compiled_policy.h"
#include "policy/evaluation/evaluator.h"
#include "policy/evaluation/decision.h"
#include "policy/base/json.h"
#include "webhook/io/manifests.h"

namespace gpu_admission::webhook {

struct OfflineResult {
  enum class Status { Evaluated, Skipped, Error };
  Status status = Status::Evaluated;
  std::string api_version;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string uid;            // metadata.uid, when the input has one (objects read from a cluster)
  // The object names no namespace (nor does its AdmissionReview): it was judged in the default one.
  bool namespace_defaulted = false;
  std::string source;
  std::string note;           // why skipped, or the error (naming the field)
  policy::Decision decision;  // when evaluated
  Json patch = Json::array(); // the patch as JSON
  Json mutated;               // the object after the patch
  // Kinds judged by template paths (ML workloads, spec.workloads): the template this result is about
  // ("spec.pytorchReplicaSpecs.Worker.template"), empty otherwise. `repeat`: the same object as
  // the result before it (one result per template; printed once as YAML).
  std::string template_path;
  bool repeat = false;
  // The whole object's result holds one result per template here; its decision is theirs merged
  // (denied when any template is), its patch and mutated object those of all templates.
  std::vector<OfflineResult> templates;

  bool allowed() const { return status != Status::Evaluated || decision.allowed; }
};

// `default_namespace` is used for objects that name none (and are not AdmissionReviews).
// ResourceClaims and ResourceClaimTemplates are judged on their own; a pod's claims and its
// namespace's labels come from `facts` (the claims and Namespaces among the same inputs).
// Kinds judged by template paths (spec.workloads, then the built-in ML kinds, by apiVersion group
// and kind) are judged template by template, each as the pod it will create (mutated).
OfflineResult evaluate_offline(const policy::CompiledPolicy& policy, const ManifestObject& manifest,
                               const std::string& default_namespace, bool mutate_pods = true,
                               const policy::ExternalFacts& facts = {});

// The results to print for one object: its templates' results when it has them, else itself.
std::vector<OfflineResult> split_templates(OfflineResult whole);

}  // namespace gpu_admission::webhook
