#include "webhook/io/policy_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "policy/config/policy_loader.h"
#include "webhook/io/default_policy.h"
#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {

std::string PolicyLoad::report() const {
  std::string out;
  for (const auto& issue : issues) {
    out += policy::format_issue(issue, source);
    out += '\n';
  }
  return out;
}

PolicyLoad load_policy_text(std::string_view text, const std::string& source_name, const PolicyLoadOptions& options) {
  PolicyLoad load;
  load.source = source_name;
  YamlParse parsed = parse_yaml_or_json(text);
  if (parsed.error) {
    load.unusable = true;
    load.issues.push_back({policy::Issue::Severity::Error, "", parsed.error->message, parsed.error->mark});
    return load;
  }
  if (parsed.documents.size() != 1) {
    load.issues.push_back({policy::Issue::Severity::Error, "",
                           parsed.documents.empty() ? "the file holds no policy document"
                                                    : "expected one YAML document, found " +
                                                          std::to_string(parsed.documents.size()),
                           parsed.documents.size() > 1 ? policy::SourceMark{parsed.documents[1].line, 1}
                                                       : policy::SourceMark{}});
    return load;
  }
  const YamlDocument& doc = parsed.documents.front();
  policy::PolicyLoadResult config = policy::load_policy_config(doc.value, doc.marks);
  load.issues = std::move(config.issues);
  if (policy::has_errors(load.issues)) return load;
  load.policy = policy::CompiledPolicy::compile(config.config, doc.marks, load.issues, {options.now, options.enforcement});
  return load;
}

PolicyLoad load_policy_file(const std::string& path, const PolicyLoadOptions& options) {
  if (path.empty()) return load_policy_text(default_policy_yaml(), std::string(kDefaultPolicyName), options);
  TextFile file = read_text_file(path, kMaxPolicyFileBytes);
  if (!file.error.empty()) {
    PolicyLoad load;
    load.source = path;
    load.unusable = true;
    load.issues.push_back({policy::Issue::Severity::Error, "", file.error, {}});
    return load;
  }
  return load_policy_text(file.text, path, options);
}

}  // namespace gpu_admission::webhook
