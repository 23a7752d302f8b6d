// /validate of the policy ConfigMap (policy_review.h): the label, and the answer.
#include "webhook/admission/policy_review.h"

namespace gpu_admission::webhook {

std::optional<ObjectError> read_policy_label(simdjson::dom::parser& parser, std::string_view object, bool& labelled,
                                             std::string_view& name) {
  labelled = false;
  name = {};
  simdjson::dom::element root;
  if (auto err = parse_object(parser, object, root)) return ObjectError{"request.object", *err};
  simdjson::dom::element metadata;
  if (root["metadata"].get(metadata) != simdjson::SUCCESS || !metadata.is_object()) return std::nullopt;
  std::string_view text;
  if (metadata["name"].get(text) == simdjson::SUCCESS || metadata["generateName"].get(text) == simdjson::SUCCESS)
    name = text;
  std::string_view value;
  labelled = metadata["labels"][kPolicyLabel].get(value) == simdjson::SUCCESS && value == kPolicyLabelValue;
  return std::nullopt;
}

void answer_policy_check(const PolicyCheck& check, std::string_view namespace_name, std::string_view name,
                         AdmissionResponse& response) {
  for (const auto& warning : check.warnings) response.warnings.push_back(warning_text(warning));
  if (check.errors.empty()) return;
  response.allowed = false;
  response.code = 403;
  response.reason = "Forbidden";
  const size_t n = check.errors.size();
  std::string& message = response.message;
  message = "invalid gpu-admission policy in ConfigMap " + std::string(namespace_name) + "/" + std::string(name);
  if (!check.key.empty()) message += ", key " + check.key;
  message += " (" + std::to_string(n) + (n == 1 ? " error" : " errors") +
             "; the running webhook keeps its last good policy): ";
  for (size_t i = 0; i < n && i < kMaxListedErrors; ++i) message += (i == 0 ? "" : "; ") + check.errors[i];
  if (n > kMaxListedErrors) message += "; and " + std::to_string(n - kMaxListedErrors) + " more";
  message += " -- fix the policy and apply it again (check it first: gpu-admission policy lint FILE)";
}

}  // namespace gpu_admission::webhook
