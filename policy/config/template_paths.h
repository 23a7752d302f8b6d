// Pod template paths of workload kinds as data: a small path language
// (`spec.pytorchReplicaSpecs.*.template`, `spec.replicatedJobs[*].template.spec.template`: `.`
// separates fields, `*` is every value of a map, `[*]` every item of a list) and the built-in
// table of ML workload kinds (policy/config/ml_kinds.cpp). Finding the templates of an object is in
// policy/config/template_finder.h (this header stays free of simdjson: the compiled policy includes it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::policy {

struct PathStep {
  enum class Kind : uint8_t { Field, MapValues, ListItems };
  Kind kind = Kind::Field;
  std::string name;  // Kind::Field
};

struct TemplatePath {
  std::string text;  // as written
  std::vector<PathStep> steps;
  // The path names pod specs, not templates ({metadata, spec}): Kubeflow Trainer v2.0's
  // podSpecOverrides. Built-in kinds only; spec.workloads name templates.
  bool pod_spec = false;
};

// Parses `text`; returns an error message (no field) when it is malformed.
std::optional<std::string> parse_template_path(std::string_view text, TemplatePath& out);

// A workload kind whose pod templates are judged: built-in (ML operators) or from spec.workloads.
struct WorkloadKindDef {
  std::string group;  // API group: "kubeflow.org"
  std::string kind;   // "PyTorchJob"
  std::vector<TemplatePath> templates;
};

// The built-in ML kinds (PyTorchJob, ..., RayService, Volcano Job).
const std::vector<WorkloadKindDef>& builtin_ml_kinds();
// The built-in entry for (group, kind), or nullptr.
const WorkloadKindDef* find_builtin_ml_kind(std::string_view group, std::string_view kind);

// The API group of an apiVersion: "kubeflow.org/v1" -> "kubeflow.org", "v1" -> "".
std::string_view api_group_of(std::string_view api_version);

}  // namespace gpu_admission::policy
