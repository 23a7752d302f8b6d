// Where the backstop finds pods: in a Pod, in the template of each core workload kind, and in
// the templates of the ML kinds (policy/config/ml_kinds.cpp) and of the policy's spec.workloads, at
// their template paths. As the webhook does (webhook/cli/offline.cpp), the policy's kinds and the
// ML kinds are known by group and kind, the core kinds by kind alone.
#pragma once

#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/compiled_policy.h"

namespace gpu_admission::webhook::backstop {

// The object's kind and apiVersion (variables.kind, variables.apiVersion): the object's own, else
// the request's (the API server always sets the object's).
std::string kind_expr();
std::string api_version_expr();

// A CEL expression of type list(list(map)): the pod templates ({metadata, spec}) of `root`
// ("object", whose kind and apiVersion are variables.kind and variables.apiVersion), in groups (a template path with two wildcards gives a group per outer item).
// Pod specs named directly (Kubeflow Trainer v2.0 podSpecOverrides) are wrapped as {'spec': x}.
// Paths the expression cannot follow are appended to `notes`.
std::string template_groups(const policy::CompiledPolicy& policy, const std::string& root,
                            std::vector<std::string>& notes);

// matchConstraints.resourceRules for the kinds above, on CREATE; pods also on the UPDATE
// operations named in `pod_updates` ("pods", "pods/ephemeralcontainers").
Json template_resource_rules(const policy::CompiledPolicy& policy, const std::vector<std::string>& pod_updates);

}  // namespace gpu_admission::webhook::backstop
