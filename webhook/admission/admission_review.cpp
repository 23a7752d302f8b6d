#include "webhook/admission/admission_review.h"

#include "policy/base/quoted_value.h"
#include "policy/decoding/json_reader.h"
#include "policy/evaluation/patch.h"
#include "webhook/ops/base64.h"

namespace gpu_admission::webhook {
namespace {

namespace od = simdjson::ondemand;
using policy::Loc;
using policy::json::keys;

constexpr auto kReviewKeys = keys("apiVersion", "kind", "request");
constexpr auto kRequestKeys = keys("uid", "kind", "resource", "subResource", "name", "namespace", "operation",
                                   "userInfo", "dryRun", "object", "oldObject");
constexpr auto kKindKeys = keys("group", "version", "kind");
constexpr auto kResourceKeys = keys("resource");
constexpr auto kUserInfoKeys = keys("username");

// Reads the envelope's fields; string fields of another type read as absent, as before v2.
class EnvelopeReader : public policy::json::Reader {
 public:
  EnvelopeReader(AdmissionRequest& request, EagerViews eager) : request_(request), eager_(eager) {}

  template <size_t N>
  bool strings(od::value& v, const policy::json::KeyTable<N>& table, std::string_view* const (&out)[N], const Loc& at) {
    od::json_type type;
    if (auto code = v.type().get(type)) return fail(at, code);
    if (type != od::json_type::object) return true;
    od::object object;
    if (auto code = v.get_object().get(object)) return fail(at, code);
    return fields(object, table, at, [&](int key, od::value& value, const Loc& value_at) {
      return string_if_string(value, *out[key], value_at);
    });
  }

  // The object as JSON text; any non-null value (its type is judged when it is decoded).
  bool raw(od::value& v, std::string_view& out, const Loc& at) {
    od::json_type type;
    if (auto code = v.type().get(type)) return fail(at, code);
    simdjson::error_code code = simdjson::SUCCESS;
    if (type == od::json_type::object) {
      od::object object;
      code = v.get_object().get(object);
      if (!code) code = object.raw_json().get(out);
    } else if (type == od::json_type::array) {
      od::array array;
      code = v.get_array().get(array);
      if (!code) code = array.raw_json().get(out);
    } else {
      out = v.raw_json_token();
    }
    return code ? fail(at, code) : true;
  }

  bool request(od::value& v, const Loc& at) {
    od::json_type type;
    if (auto code = v.type().get(type)) return fail(at, code);
    if (type != od::json_type::object) return true;  // "has no request"
    od::object object;
    if (!as_object(v, object, at)) return false;
    has_request = true;
    AdmissionRequest& r = request_;
    return fields(object, kRequestKeys, at, [&](int key, od::value& value, const Loc& value_at) {
      switch (key) {
        case 0: return string_if_string(value, r.uid, value_at);
        case 1: return strings(value, kKindKeys, {&r.kind_group, &r.kind_version, &r.kind}, value_at);
        case 2: return strings(value, kResourceKeys, {&r.resource}, value_at);
        case 3: return string_if_string(value, r.sub_resource, value_at);
        case 4: return string_if_string(value, r.name, value_at);
        case 5: return string_if_string(value, r.namespace_name, value_at);
        case 6: return string_if_string(value, r.operation, value_at);
        case 7: return strings(value, kUserInfoKeys, {&r.username}, value_at);
        case 8: {
          od::json_type type;
          if (auto code = value.type().get(type)) return fail(value_at, code);
          return type != od::json_type::boolean || as_bool(value, r.dry_run, value_at);
        }
        case 9: r.has_object = true; return request_object(value, r.object, eager_.pod, r.object_decoded, value_at);
        default:
          r.has_old_object = true;
          return request_object(value, r.old_object, eager_.old_pod, r.old_object_decoded, value_at);
      }
    });
  }

  // An object: decoded now into `pod` when its kind is a Pod or a built-in workload kind and the
  // operation CREATE were already read (the API server writes both first), else kept as text.
  // An UPDATE's objects are kept as text: whether it is a commit point is read from the text of
  // both, and the decision phase decodes them from it. An
  // object that does not decode (a wrong type, a key read twice) is left there and the pass goes
  // on: the decision phase refuses it. Invalid JSON ends the pass: the body is refused.
  bool request_object(od::value& v, std::string_view& text, policy::PodView* pod, AdmissionRequest::Decoded& decoded,
                      const Loc& at) {
    const AdmissionRequest& r = request_;
    const bool builtin_group = r.kind_group.empty() || r.kind_group == "apps" || r.kind_group == "batch";
    const auto kind = builtin_group ? policy::workload_kind_from(r.kind) : std::nullopt;
    if (!pod || !kind || r.operation != "CREATE") return raw(v, text, at);
    auto error = policy::decode_pod_value(v, *kind, *pod, eager_.policy_env_vars);
    if (!error) {
      decoded = AdmissionRequest::Decoded::Yes;
      return true;
    }
    if (error->invalid_json) {
      this->error = std::move(error);
      return false;
    }
    decoded = AdmissionRequest::Decoded::Failed;
    if (&decoded == &request_.object_decoded) request_.object_error = std::move(error);
    return true;
  }

  bool has_request = false;

 private:
  AdmissionRequest& request_;
  EagerViews eager_;
};

std::optional<RequestError> envelope_error(const policy::DecodeError& error) {
  if (error.invalid_json) return RequestError{400, error.message};
  return RequestError{400, "ambiguous JSON: " + (error.field.empty() ? std::string() : error.field + ": ") +
                               error.message};
}

}  // namespace

std::optional<RequestError> ReviewReader::read(std::string_view body, AdmissionRequest& request, EagerViews eager,
                                               bool padded) {
  request = AdmissionRequest{};
  od::document doc;
  if (auto code = policy::json::iterate(parser_, body, padded, padded_).get(doc))
    return RequestError{400, policy::invalid_json(code).message};
  od::json_type type;
  if (auto code = doc.type().get(type)) return RequestError{400, policy::invalid_json(code).message};
  od::object review;
  if (type != od::json_type::object) return RequestError{400, "body is not a JSON object"};
  if (auto code = doc.get_object().get(review))
    return RequestError{400, policy::invalid_json(code).message};
  EnvelopeReader reader(request, eager);
  std::string_view api_version, kind;
  const bool read = reader.fields(review, kReviewKeys, Loc{}, [&](int key, od::value& value, const Loc& at) {
    if (key == 0) return reader.string_if_string(value, api_version, at);
    if (key == 1) return reader.string_if_string(value, kind, at);
    return reader.request(value, at);
  });
  if (!read) return envelope_error(*reader.error);
  if (!doc.current_location().error())
    return RequestError{400, policy::invalid_json("content after the AdmissionReview").message};
  if (kind != "AdmissionReview") return RequestError{400, "body is not an AdmissionReview (kind is " + policy::quoted(kind) + ")"};
  if (api_version != "admission.k8s.io/v1")
    return RequestError{400, "unsupported AdmissionReview apiVersion " + policy::quoted(api_version) +
                                 " (this webhook speaks admission.k8s.io/v1)"};
  if (!reader.has_request) return RequestError{400, "AdmissionReview has no request"};
  if (request.uid.empty()) return RequestError{400, "AdmissionReview request has no uid"};
  if (request.operation.empty()) return RequestError{400, "AdmissionReview request has no operation"};
  return std::nullopt;
}

std::string warning_text(std::string_view message) {
  constexpr size_t kMax = 119;  // "under 120 characters"
  std::string out;
  out.reserve(kMax + 1);
  // The API server drops a warning holding a control character (C0, DEL or C1, as a tenant's
  // value may): each becomes a space. Only as much of the message as can be shown is read.
  size_t i = 0;
  for (; i < message.size() && out.size() <= kMax; ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    const bool c1 = c == 0xC2 && i + 1 < message.size() && static_cast<unsigned char>(message[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(message[i + 1]) <= 0x9F;
    if (c1) ++i;
    out += (c < 0x20 || c == 0x7F || c1) ? ' ' : static_cast<char>(c);
  }
  if (i == message.size() && out.size() <= kMax) return out;
  size_t cut = kMax - 3;
  // Do not cut a UTF-8 sequence in half: back up to a lead byte.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  out += "...";
  return out;
}

std::string encode_admission_response(const AdmissionResponse& r) {
  std::string out;
  encode_admission_response(r, out);
  return out;
}

void encode_admission_response(const AdmissionResponse& r, std::string& out) {
  using policy::append_json_string;
  out.clear();
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
    thread_local std::string patch_json;  // per-thread scratch: cleared, its capacity kept
    patch_json.clear();
    policy::append_patch_json(patch_json, *r.patch);
    append_base64(out, patch_json);
    out += '"';
  }
  out += "}}";
}

}  // namespace gpu_admission::webhook
