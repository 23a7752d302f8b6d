// Decodes a Pod, or the pod template of a workload, from a simdjson DOM element into a PodView.
// The single decoding path: YAML input is converted to JSON text first and comes through here.
// A field we read that has the wrong type is an error naming the field; fields we do not need
// are not looked at.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "policy/pod_view.h"

namespace gpu_admission::policy {

struct DecodeError {
  std::string field;    // e.g. spec.containers[0].securityContext.privileged
  std::string message;  // e.g. must be a boolean
};

// Workload kind for an object kind ("Pod", "Deployment", ...); nullopt for other kinds.
std::optional<WorkloadKind> workload_kind_from(std::string_view kind);

// Finds a duplicate key anywhere under `root` (JSON with duplicate keys is ambiguous: parsers
// disagree on which value wins). Returns the field path and key when there is one.
std::optional<DecodeError> find_duplicate_keys(simdjson::dom::element root);

// Decodes `object` (its kind must be a workload kind) into `pod`, which is cleared first.
// Objects with duplicate keys are refused.
// Views in `pod` point into the parser's document: keep the parser alive while using them.
std::optional<DecodeError> decode_pod(simdjson::dom::element object, PodView& pod);

// The same for a known kind (the AdmissionReview's request.kind). `check_duplicates` false: the
// caller has already checked a document containing `object` for duplicate keys.
std::optional<DecodeError> decode_pod_as(simdjson::dom::element object, WorkloadKind kind, PodView& pod,
                                         bool check_duplicates = true);

// Decodes one pod template of a kind from a table (ML workloads, SPEC 5): identity (name,
// namespace) from `object`, the pod from `template_el` (an element inside `object`). Field paths
// start with `field_prefix` ("spec.x.Worker.template."); `field_prefix` and `pointer` are kept
// as views in `pod`: they must outlive it.
std::optional<DecodeError> decode_pod_template(simdjson::dom::element object, simdjson::dom::element template_el,
                                               std::string_view field_prefix, std::string_view pointer, PodView& pod,
                                               bool check_duplicates = true);

}  // namespace gpu_admission::policy
