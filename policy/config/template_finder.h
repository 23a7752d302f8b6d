// The expansion of a workload kind's template paths over a simdjson DOM into the pod templates
// it names, each with its field path and JSON Pointer from the object's root.
// Implemented in policy/config/template_paths.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <simdjson.h>

#include "policy/decoding/pod_decoder.h"  // DecodeError
#include "policy/config/template_paths.h"

namespace gpu_admission::policy {

// One template found in an object.
struct TemplateMatch {
  std::string field;    // "spec.pytorchReplicaSpecs.Worker.template"
  std::string prefix;   // the same with a trailing '.', for PodView
  std::string pointer;  // "/spec/pytorchReplicaSpecs/Worker/template"
  simdjson::dom::element element;
  bool pod_spec = false;  // a pod's spec, not a template (TemplatePath::pod_spec)
};

// Every template of `def` in `object`, in path order and then document order. Absent or null
// members on the way name no template; a member of the wrong type is an error naming the field.
std::optional<DecodeError> find_templates(simdjson::dom::element object, const WorkloadKindDef& def,
                                          std::vector<TemplateMatch>& out);

}  // namespace gpu_admission::policy
