// Policies carried in ConfigMaps (policy_configmap.h): recognising the ConfigMap, choosing its
// policy key, loading the embedded document, and relocating the document's problems into the
// ConfigMap file.
#include "webhook/io/policy_configmap.h"

#include <cctype>
#include <optional>
#include <vector>

#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

using policy::Issue;
using policy::SourceMark;

std::string text_at(const Json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : "";
}

bool is_configmap(const Json& doc) { return text_at(doc, "kind") == "ConfigMap" && text_at(doc, "apiVersion") == "v1"; }

bool holds_policy(const Json& value) {
  if (!value.is_string()) return false;
  YamlLimits limits;
  limits.record_marks = false;
  YamlParse parsed = parse_yaml_or_json(value.get<std::string>(), limits);
  return !parsed.error && parsed.documents.size() == 1 && text_at(parsed.documents[0].value, "kind") == "GpuAdmissionPolicy";
}

std::string key_list(const Json& data) {
  std::string out;
  for (auto it = data.begin(); it != data.end(); ++it) out += (out.empty() ? "" : ", ") + it.key();
  return out.empty() ? "none" : out;
}

// The data key that carries the policy, or an error message.
std::optional<std::string> policy_key(const Json& data, std::string& error) {
  std::vector<std::string> found;
  for (auto it = data.begin(); it != data.end(); ++it)
    if (holds_policy(*it)) found.push_back(it.key());
  if (found.size() == 1) return found[0];
  if (found.size() > 1) {
    error = "several data keys hold a GpuAdmissionPolicy document (" + key_list(data) +
            "); keep the policy under one key (the chart uses policy.yaml)";
    return std::nullopt;
  }
  // None reads as a policy: lint the one it must be, so its own problems are shown.
  if (data.contains("policy.yaml")) return std::string("policy.yaml");
  if (data.size() == 1) return data.begin().key();
  error = "no data key holds a GpuAdmissionPolicy document (keys: " + key_list(data) +
          "); the chart keeps the policy under policy.yaml";
  return std::nullopt;
}

// Where the lines of a literal block scalar (`key: |`) start in the file: line L of the value is
// file line `first_line + L - 1`, column C is file column `indent + C`.
struct BlockPlacement {
  int first_line = 0;  // 0: the value is not a literal block; its lines cannot be placed
  int indent = 0;
};

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

BlockPlacement literal_block(std::string_view file_text, SourceMark value_mark) {
  const auto lines = lines_of(file_text);
  if (value_mark.line < 1 || value_mark.line >= static_cast<int>(lines.size())) return {};
  std::string_view header = lines[value_mark.line - 1];
  const size_t at = static_cast<size_t>(value_mark.column - 1);
  if (at >= header.size() || header[at] != '|') return {};
  // An explicit indentation indicator (`|2`) is rare; only the automatic indentation is placed.
  for (size_t i = at + 1; i < header.size() && header[i] != ' ' && header[i] != '#'; ++i)
    if (std::isdigit(static_cast<unsigned char>(header[i]))) return {};
  for (size_t n = static_cast<size_t>(value_mark.line); n < lines.size(); ++n) {
    const size_t indent = lines[n].find_first_not_of(' ');
    if (indent == std::string_view::npos || lines[n].substr(indent) == "\r") continue;  // blank
    return {value_mark.line + 1, static_cast<int>(indent)};
  }
  return {};
}

// Names the ConfigMap, key and position in the embedded document, and points at the file.
void relocate(Issue& issue, const std::string& carrier, BlockPlacement block) {
  std::string where = "[" + carrier;
  if (issue.mark.line > 0)
    where += ", line " + std::to_string(issue.mark.line) + ":" + std::to_string(issue.mark.column);
  where += "]";
  issue.path = issue.path.empty() ? where : where + " " + issue.path;
  if (block.first_line > 0 && issue.mark.line > 0)
    issue.mark = {block.first_line + issue.mark.line - 1, block.indent + issue.mark.column};
  else
    issue.mark = {};
}

PolicyLoad carrier_error(const std::string& source, const std::string& message, SourceMark mark) {
  PolicyLoad load;
  load.source = source;
  load.unusable = true;
  load.issues.push_back({Issue::Severity::Error, "data", message, mark});
  return load;
}

// The policy inside a ConfigMap document, its issues placed within the chosen key's value.
// `key` is set when one was chosen.
PolicyLoad load_carried(const YamlDocument& doc, const std::string& source, const PolicyLoadOptions& options,
                        std::string& key) {
  const Json& cm = doc.value;
  const std::string name = cm.contains("metadata") ? text_at(cm["metadata"], "name") : "";
  const std::string what = "ConfigMap " + (name.empty() ? std::string("(unnamed)") : name);
  if (!cm.contains("data") || !cm["data"].is_object() || cm["data"].empty())
    return carrier_error(source, what + " has no data: it carries no policy", doc.marks.find("data"));
  const Json& data = cm["data"];
  std::string error;
  auto chosen = policy_key(data, error);
  if (!chosen) return carrier_error(source, what + ": " + error, doc.marks.find("data"));
  key = *chosen;
  if (!data[key].is_string())
    return carrier_error(source, what + ": data key " + key + " must be a string holding the policy",
                         doc.marks.find(policy::child_path("data", key)));
  PolicyLoad load = load_policy_text(data[key].get<std::string>(), source, options);
  load.carrier = what + ", key " + key;
  return load;
}

PolicyLoad load_from_configmap(std::string_view text, const YamlDocument& doc, const std::string& source) {
  std::string key;
  PolicyLoad load = load_carried(doc, source, {}, key);
  if (load.carrier.empty()) return load;  // the ConfigMap itself is at fault: its own marks
  const BlockPlacement block = literal_block(text, doc.marks.find(policy::child_path("data", key)));
  for (auto& issue : load.issues) relocate(issue, load.carrier, block);
  return load;
}

// "KEY:LINE:COL: PATH: MESSAGE", the place left out where unknown.
std::string carried_issue(const Issue& issue, const std::string& key) {
  std::string out = key;
  if (issue.mark.line > 0)
    out += (out.empty() ? "line " : ":") + std::to_string(issue.mark.line) + ":" + std::to_string(issue.mark.column);
  if (!out.empty()) out += ": ";
  if (!issue.path.empty()) out += issue.path + ": ";
  return out + issue.message;
}

}  // namespace

PolicyLoad load_policy_document_text(std::string_view text, const std::string& source_name) {
  YamlParse parsed = parse_yaml_or_json(text);
  if (parsed.error || parsed.documents.size() != 1 || !is_configmap(parsed.documents[0].value))
    return load_policy_text(text, source_name);
  return load_from_configmap(text, parsed.documents[0], source_name);
}

ConfigMapPolicyCheck check_configmap_policy(std::string_view object_text, const PolicyLoadOptions& options) {
  ConfigMapPolicyCheck out;
  YamlParse parsed = parse_yaml_or_json(object_text);
  if (parsed.error || parsed.documents.size() != 1 || !parsed.documents[0].value.is_object()) {
    out.errors.push_back("the ConfigMap cannot be read" + (parsed.error ? ": " + parsed.error->message : std::string()));
    return out;
  }
  out.load = load_carried(parsed.documents[0], "ConfigMap", options, out.key);
  // A problem of the ConfigMap itself (no data, no policy key) is placed in no key.
  const std::string key = out.load.carrier.empty() ? std::string() : out.key;
  for (const Issue& issue : out.load.issues) {
    Issue placed = issue;
    if (key.empty()) placed.mark = {};
    (issue.severity == Issue::Severity::Error ? out.errors : out.warnings).push_back(carried_issue(placed, key));
  }
  if (!out.load.ok() && out.errors.empty()) out.errors.push_back("the policy cannot be loaded");
  return out;
}

PolicyLoad load_policy_document(const std::string& path) {
  if (path.empty()) return load_policy_file(path);
  TextFile file = read_text_file(path, kMaxPolicyFileBytes);
  if (!file.error.empty()) {
    PolicyLoad load;
    load.source = path;
    load.unusable = true;
    load.issues.push_back({Issue::Severity::Error, "", file.error, {}});
    return load;
  }
  return load_policy_document_text(file.text, path);
}

}  // namespace gpu_admission::webhook
