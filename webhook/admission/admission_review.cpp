#include "webhook/admission/admission_review.h"

#include "policy/patch.h"
#include "webhook/admission/base64.h"

namespace gpu_admission::webhook {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

bool member(object obj, std::string_view key, element& out) {
  auto r = obj.at_key(key);
  if (r.error()) return false;
  out = r.value_unsafe();
  return out.type() != element_type::NULL_VALUE;
}

bool string_member(object obj, std::string_view key, std::string_view& out) {
  element e;
  if (!member(obj, key, e) || e.type() != element_type::STRING) return false;
  out = e.get_string().value_unsafe();
  return true;
}

}  // namespace

std::optional<RequestError> decode_admission_request(element root, AdmissionRequest& request) {
  if (root.type() != element_type::OBJECT) return RequestError{400, "body is not a JSON object"};
  object review = root.get_object().value_unsafe();
  std::string_view api_version, kind;
  string_member(review, "apiVersion", api_version);
  string_member(review, "kind", kind);
  if (kind != "AdmissionReview") return RequestError{400, "body is not an AdmissionReview (kind is \"" + std::string(kind) + "\")"};
  if (api_version != "admission.k8s.io/v1")
    return RequestError{400, "unsupported AdmissionReview apiVersion \"" + std::string(api_version) +
                                 "\" (this webhook speaks admission.k8s.io/v1)"};
  element req_el;
  if (!member(review, "request", req_el) || req_el.type() != element_type::OBJECT)
    return RequestError{400, "AdmissionReview has no request"};
  object req = req_el.get_object().value_unsafe();
  if (!string_member(req, "uid", request.uid) || request.uid.empty())
    return RequestError{400, "AdmissionReview request has no uid"};

  element e;
  if (member(req, "kind", e) && e.type() == element_type::OBJECT) {
    object k = e.get_object().value_unsafe();
    string_member(k, "group", request.kind_group);
    string_member(k, "version", request.kind_version);
    string_member(k, "kind", request.kind);
  }
  if (member(req, "resource", e) && e.type() == element_type::OBJECT)
    string_member(e.get_object().value_unsafe(), "resource", request.resource);
  string_member(req, "subResource", request.sub_resource);
  string_member(req, "name", request.name);
  string_member(req, "namespace", request.namespace_name);
  string_member(req, "operation", request.operation);
  if (member(req, "userInfo", e) && e.type() == element_type::OBJECT)
    string_member(e.get_object().value_unsafe(), "username", request.username);
  if (member(req, "dryRun", e) && e.type() == element_type::BOOL) request.dry_run = e.get_bool().value_unsafe();
  request.has_object = member(req, "object", request.object);
  request.has_old_object = member(req, "oldObject", request.old_object);
  if (request.operation.empty()) return RequestError{400, "AdmissionReview request has no operation"};
  return std::nullopt;
}

std::string warning_text(std::string_view message) {
  constexpr size_t kMax = 119;  // "under 120 characters"
  std::string out;
  out.reserve(std::min(message.size(), kMax));
  for (char c : message) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (out.size() <= kMax) return out;
  size_t cut = kMax - 3;
  // Do not cut a UTF-8 sequence in half: back up to a lead byte.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  out += "...";
  return out;
}

std::string encode_admission_response(const AdmissionResponse& r) {
  using policy::append_json_string;
  std::string out;
  out.reserve(256 + r.message.size() + (r.patch ? r.patch->size() * 96 : 0));
  out += R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)";
  append_json_string(out, r.uid);
  out += r.allowed ? ",\"allowed\":true" : ",\"allowed\":false";
  if (!r.allowed || r.code != 0) {
    out += ",\"status\":{\"status\":\"Failure\",\"code\":";
    out += std::to_string(r.code == 0 ? 403 : r.code);
    out += ",\"reason\":";
    append_json_string(out, r.reason.empty() ? std::string_view("Forbidden") : r.reason);
    out += ",\"message\":";
    append_json_string(out, r.message);
    out += '}';
  }
  if (!r.warnings.empty()) {
    out += ",\"warnings\":[";
    for (size_t i = 0; i < r.warnings.size(); ++i) {
      if (i) out += ',';
      append_json_string(out, r.warnings[i]);
    }
    out += ']';
  }
  if (!r.audit_annotations.empty()) {
    out += ",\"auditAnnotations\":{";
    for (size_t i = 0; i < r.audit_annotations.size(); ++i) {
      if (i) out += ',';
      append_json_string(out, r.audit_annotations[i].first);
      out += ':';
      append_json_string(out, r.audit_annotations[i].second);
    }
    out += '}';
  }
  if (r.patch && !r.patch->empty()) {
    out += ",\"patchType\":\"JSONPatch\",\"patch\":\"";
    append_base64(out, policy::patch_to_json(*r.patch));
    out += '"';
  }
  out += "}}";
  return out;
}

}  // namespace gpu_admission::webhook
