// The audit's engine: objects go in one at a time (from list pages or files, in the order of
// wanted_kinds: facts first, pods last) and are judged as /validate judges a stored object, by
// the admission decision phase itself (decide_review with a CREATE of the object; no second
// implementation of any rule). What it keeps does not grow with the pods: one subject per
// object a person edits that has pods or templates (a workload, an ML job), plus the pods that
// violate and have no owner; passing pods without an owner are only counted.
//
// Judged and not judged:
// - Pods as they are (not mutated: they passed /mutate when created), except finished ones
//   (phase Succeeded or Failed: nothing runs).
// - The pod templates of workloads and ML kinds at the top of an ownership chain, as the pods
//   they create. An object with a controller (a ReplicaSet of a Deployment, a Job of a CronJob)
//   is judged through its pods, so an old ReplicaSet kept for rollback does not keep a fixed
//   Deployment in the report. Jobs that finished are not judged.
// - Claims and claim templates on their own, except claims generated for a pod from a template
//   (their template is judged); PodGroups on their own (their claims), and with each of their
//   pods.
// - Nothing in an exempt namespace (spec.exemptions.namespaces): such objects are counted as not
//   judged, and as exempt in their namespace's counts.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include <simdjson.h>

#include "policy/config/compiled_policy.h"
#include "webhook/admission/review_decision.h"
#include "webhook/audit/audit_facts.h"
#include "webhook/audit/audit_kinds.h"
#include "webhook/audit/audit_result.h"
#include "webhook/audit/owner_index.h"

namespace gpu_admission::webhook::audit {

class Auditor {
 public:
  // `now` (Unix seconds) decides which exceptions have expired.
  Auditor(const policy::CompiledPolicy& policy, int64_t now);

  // One object of `kind` as listed (list items carry no apiVersion or kind: `kind` says them).
  void add(const AuditKind& kind, simdjson::dom::element object);
  void note(std::string text) { result_.notes.push_back(std::move(text)); }
  // Counts an object that was not judged, by why.
  void skip(std::string_view why) { ++result_.skipped[std::string(why)]; }

  // Resolves every subject to the top of its ownership chain and returns the result (the
  // auditor is spent).
  AuditResult finish();

  const AuditFacts& facts() const { return facts_; }

 private:
  struct Meta;
  void add_claim(const AuditKind& kind, simdjson::dom::element object, const Meta& meta);
  void judge(const AuditKind& kind, simdjson::dom::element object, const Meta& meta);
  AuditSubject& subject_for(const ObjectRef& ref, const std::string& namespace_name);
  void record(const policy::Decision& decision, AuditSubject& subject, bool is_pod);

  const policy::CompiledPolicy& policy_;
  int64_t now_;
  AuditFacts facts_;
  OwnerIndex owners_;
  std::unordered_map<std::string, AuditSubject> subjects_;  // by uid (or apiVersion/kind/namespace/name)
  AuditResult result_;
  ReviewScratch scratch_;
  policy::Decision decision_;
  std::string text_;  // the object being judged, as JSON text with simdjson's padding after it
};

}  // namespace gpu_admission::webhook::audit
