// Reads a policy document into a PolicyConfig and prints one back, both by walking the policy
// schema's tables (policy_schema.h); see policy_loader.h.
#include "policy/config/policy_loader.h"

#include "policy/config/field_reader.h"
#include "policy/config/policy_schema.h"

namespace gpu_admission::policy {

// The fields are declared once, in the schema's tables (policy_schema.cpp and
// policy_schema_items.cpp): the loader and `policy show` walk them, and accepted_policy_fields()
// lists them, so a field added there is a field documented in docs/policy-reference.md (generated
// from the same tables).

PolicyLoadResult load_policy_config(const Json& document, const SourceMap& marks) {
  PolicyLoadResult result;
  FieldReader r(marks, result.issues);
  if (!document.is_object()) {
    r.error("", std::string("the policy must be a mapping, got ") + type_name(document));
    return result;
  }
  read_mapping(r, document, "", policy_document_schema(), &result.config);
  return result;
}

std::string PolicyField::path() const {
  std::string out(object);
  if (!out.empty()) out += '.';
  out += name;
  return out;
}

std::vector<PolicyField> accepted_policy_fields() {
  std::vector<PolicyField> out;
  for (const Mapping* m : policy_mappings())
    for (const auto& f : m->fields)
      if (!f.name.empty()) out.push_back({m->path, f.name});
  return out;
}

Json policy_config_to_json(const PolicyConfig& config) { return write_mapping(policy_document_schema(), &config); }

}  // namespace gpu_admission::policy
