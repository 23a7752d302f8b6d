// AdmissionReview admission.k8s.io/v1: the request fields the webhook reads (decoded On-Demand
// in one pass, views into the ReviewReader) and the response writer.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "policy/evaluation/decision.h"
#include "policy/decoding/pod_decoder.h"

namespace gpu_admission::webhook {

struct AdmissionRequest {
  std::string_view uid;
  std::string_view kind_group, kind_version, kind;  // request.kind
  std::string_view resource;                        // request.resource.resource ("pods")
  std::string_view sub_resource;                    // "ephemeralcontainers", "status", ...
  std::string_view name;
  std::string_view namespace_name;
  std::string_view operation;  // CREATE | UPDATE | DELETE | CONNECT
  std::string_view username;
  bool dry_run = false;
  bool has_object = false;
  bool has_old_object = false;
  // request.object and request.oldObject as JSON text, followed by simdjson::SIMDJSON_PADDING
  // readable bytes (inside the body, or the ReviewReader's copy of it), decoded by the decision
  // phase.
  std::string_view object;
  std::string_view old_object;
  // Pods and built-in workloads are decoded in the envelope's pass when their kind comes first
  // (the API server writes it first), into ReviewReader's EagerViews; the text is then not kept.
  enum class Decoded : uint8_t { No, Yes, Failed };
  Decoded object_decoded = Decoded::No;
  Decoded old_object_decoded = Decoded::No;
  std::optional<policy::DecodeError> object_error;  // object_decoded == Failed
};

// Where the envelope's pass decodes request.object and request.oldObject (null: kept as text),
// and the env names of the policy that judges them (CompiledPolicy::gpu_env_vars()).
struct EagerViews {
  policy::PodView* pod = nullptr;
  policy::PodView* old_pod = nullptr;
  std::span<const std::string> policy_env_vars;
};

struct RequestError {
  int http_status;      // 400 for bodies that are not AdmissionReviews
  std::string message;
};

// Reads AdmissionReview bodies, one at a time: what it decoded points into it until the next
// read. Reuse one per thread.
class ReviewReader {
 public:
  // Decodes the envelope of `body` into `request` (cleared first): a 400 for a body that is not
  // JSON, is ambiguous (a key read twice: json_reader.h) or is not an AdmissionReview. On error,
  // `uid` may still have been filled. The objects are kept as text, decoded later.
  // `padded`: SIMDJSON_PADDING readable bytes follow `body`, which is then read where it lies
  // (and must stay there while `request` is used) instead of copied.
  std::optional<RequestError> read(std::string_view body, AdmissionRequest& request, EagerViews eager = {},
                                   bool padded = false);

 private:
  simdjson::ondemand::parser parser_;
  std::string padded_;
};

struct AdmissionResponse {
  std::string_view uid;
  bool allowed = true;
  int code = 0;                 // status.code when denied (403, 400, 500)
  std::string_view reason;      // status.reason ("Forbidden", "BadRequest", "InternalError")
  std::string message;          // status.message
  std::vector<std::string> warnings;
  std::vector<std::pair<std::string, std::string>> audit_annotations;
  const policy::Patch* patch = nullptr;  // non-empty patch -> patchType JSONPatch
};

std::string encode_admission_response(const AdmissionResponse& response);
// The same written over `out` (its capacity is reused).
void encode_admission_response(const AdmissionResponse& response, std::string& out);

// A warning as the API server wants it: one line, under 120 characters, valid UTF-8, no control
// characters (each is a space).
std::string warning_text(std::string_view message);

}  // namespace gpu_admission::webhook
