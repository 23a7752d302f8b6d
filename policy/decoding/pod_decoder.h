// Decodes a Pod, the pod template of a workload, or a pod template of a kind from a table (ML
// workloads) from JSON text into a PodView, in one forward On-Demand pass (policy/decoding/json_reader.h
// says what is checked on the way: the types of the fields read, and keys read twice).
// The single decoding path: YAML input is converted to JSON text first and comes through here.
// A field we read that has the wrong type is an error naming the field; fields we do not need
// are skipped unread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "policy/views/pod_view.h"

namespace gpu_admission::policy {

struct DecodeError {
  std::string field;    // e.g. spec.containers[0].securityContext.privileged
  std::string message;  // e.g. must be a boolean
  bool invalid_json = false;  // the text is not JSON (else: JSON of the wrong shape, or ambiguous)
};

// "invalid JSON: <what>" at `field`, flagged as such.
DecodeError invalid_json(std::string_view what, std::string field = {});
DecodeError invalid_json(simdjson::error_code code, std::string field = {});

// What a decoded PodView points into: the parser (its strings) and, for text that came without
// padding, a padded copy. Reuse one per thread and per role (object, old object).
struct PodDocument {
  simdjson::ondemand::parser parser;
  std::string copy;
};

// An object's own identity (a workload's, for its templates).
struct ObjectIdentity {
  std::string_view api_version, name, generate_name, namespace_name;
};

// Workload kind for an object kind ("Pod", "Deployment", ...); nullopt for other kinds.
std::optional<WorkloadKind> workload_kind_from(std::string_view kind);

// Finds a duplicate key anywhere under `root`, a document parsed into a DOM (JSON with duplicate
// keys is ambiguous: parsers disagree on which value wins). Returns the field path and key.
// For the DOM readers (claims, ML kinds, the command line); policy/decoding/duplicate_keys.cpp.
std::optional<DecodeError> find_duplicate_keys(simdjson::dom::element root);

// Decodes `json` as an object of `kind` into `pod`, which is cleared first. `padded`: `json` is
// followed by simdjson::SIMDJSON_PADDING readable bytes (else it is copied into document.copy).
// Views in `pod` point into `json` (when padded) and `document`: keep both alive, and the
// document unused by another decode, meanwhile.
// `policy_env_vars`: the judging policy's own env names (CompiledPolicy::gpu_env_vars(), the
// policy's spec.gpuEnvVars), read from env as the built-in names are; kept as a view in
// PodView::policy_env_vars, so the policy must outlive `pod`. Every decode call below takes them.
std::optional<DecodeError> decode_pod_json(std::string_view json, bool padded, WorkloadKind kind, PodView& pod,
                                           PodDocument& document, std::span<const std::string> policy_env_vars = {});
// The same for an object inside a document being read On-Demand (the AdmissionReview's
// request.object, decoded in the envelope's pass); views point into that document.
std::optional<DecodeError> decode_pod_value(simdjson::ondemand::value& value, WorkloadKind kind, PodView& pod,
                                            std::span<const std::string> policy_env_vars = {});
// The same with the kind read from the object's "kind" (a Pod or a built-in workload kind).
std::optional<DecodeError> decode_pod_json(std::string_view json, bool padded, PodView& pod, PodDocument& document,
                                           std::span<const std::string> policy_env_vars = {});

// apiVersion and metadata name, generateName and namespace of the object in `json`.
std::optional<DecodeError> decode_identity(std::string_view json, bool padded, ObjectIdentity& out,
                                           PodDocument& document);

// Decodes one pod template of a kind from a table (ML workloads, spec.workloads): identity from the
// object (decode_identity), the pod from `template_json`. Field paths start with `field_prefix`
// ("spec.x.Worker.template."); `field_prefix` and `pointer` are kept as views in `pod`: they
// must outlive it. `pod_spec`: `template_json` is a pod's spec, not a template (a Trainer v2.0
// podSpecOverrides entry: PodView::template_is_spec).
std::optional<DecodeError> decode_pod_template(const ObjectIdentity& identity, std::string_view template_json,
                                               bool padded, std::string_view field_prefix, std::string_view pointer,
                                               bool pod_spec, PodView& pod, PodDocument& document,
                                               std::span<const std::string> policy_env_vars = {});

}  // namespace gpu_admission::policy
