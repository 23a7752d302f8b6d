// AdmissionReview admission.k8s.io/v1: the request fields the webhook reads (decoded with
// simdjson, views into the parsed document) and the response writer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "policy/decision.h"

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
  simdjson::dom::element object;
  simdjson::dom::element old_object;
};

struct RequestError {
  int http_status;      // 400 for bodies that are not AdmissionReviews
  std::string message;
};

// Decodes the envelope. On error, `uid` may still have been filled (for a 200 reply).
std::optional<RequestError> decode_admission_request(simdjson::dom::element root, AdmissionRequest& request);

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

// A warning as the API server wants it: one line, under 120 characters, valid UTF-8.
std::string warning_text(std::string_view message);

}  // namespace gpu_admission::webhook
