// The report CRDs' schemas as the fake API server checks them (policy_report_problems and
// open_report_problems in fake_apiserver.h): wgpolicyk8s.io/v1alpha2's PolicyReport and
// openreports.io/v1alpha1's Report (github.com/openreports/reports-api, config/crd), which share
// their summary and results and differ at the top (OpenReports adds `source` and
// `configuration`). The fields of the report, its summary, results, their timestamps and object
// references, each with its type, whether it is required and the values of an enum; unknown and
// null fields dropped, as the real server prunes them.
#include <algorithm>
#include <string_view>

#include "test/fake_apiserver/fake_apiserver.h"

namespace cluster_test {
namespace {

using Problems = std::vector<std::string>;

enum class FieldType { String, Integer, Boolean, Object, Array, StringMap };

struct FieldRule {
  std::string_view name;
  FieldType type;
  bool required = false;
  std::vector<std::string_view> allowed = {};  // an enum's values
};

const std::vector<FieldRule> kReportFields = {
    {"apiVersion", FieldType::String}, {"kind", FieldType::String},       {"metadata", FieldType::Object},
    {"results", FieldType::Array},     {"scope", FieldType::Object},      {"scopeSelector", FieldType::Object},
    {"summary", FieldType::Object}};
// OpenReports' Report: the same, with the engine named at the top and an optional contract on
// what the report holds.
const std::vector<FieldRule> kOpenReportFields = {
    {"apiVersion", FieldType::String}, {"kind", FieldType::String},       {"metadata", FieldType::Object},
    {"results", FieldType::Array},     {"scope", FieldType::Object},      {"scopeSelector", FieldType::Object},
    {"summary", FieldType::Object},    {"source", FieldType::String},     {"configuration", FieldType::Object}};
const std::vector<FieldRule> kConfigurationFields = {{"limits", FieldType::Object, true}};
const std::vector<FieldRule> kLimitsFields = {{"maxResults", FieldType::Integer}, {"statusFilter", FieldType::Array}};
const std::vector<FieldRule> kSummaryFields = {{"error", FieldType::Integer}, {"fail", FieldType::Integer},
                                               {"pass", FieldType::Integer},  {"skip", FieldType::Integer},
                                               {"warn", FieldType::Integer}};
const std::vector<FieldRule> kResultFields = {
    {"policy", FieldType::String, true},
    {"category", FieldType::String},
    {"message", FieldType::String},
    {"rule", FieldType::String},
    {"source", FieldType::String},
    {"result", FieldType::String, false, {"pass", "fail", "warn", "error", "skip"}},
    {"severity", FieldType::String, false, {"critical", "high", "low", "medium", "info"}},
    {"scored", FieldType::Boolean},
    {"properties", FieldType::StringMap},
    {"resources", FieldType::Array},
    {"resourceSelector", FieldType::Object},
    {"timestamp", FieldType::Object}};
const std::vector<FieldRule> kTimestampFields = {{"seconds", FieldType::Integer, true},
                                                 {"nanos", FieldType::Integer, true}};
const std::vector<FieldRule> kReferenceFields = {
    {"apiVersion", FieldType::String}, {"fieldPath", FieldType::String}, {"kind", FieldType::String},
    {"name", FieldType::String},       {"namespace", FieldType::String}, {"resourceVersion", FieldType::String},
    {"uid", FieldType::String}};

struct TypeRow {
  FieldType type;
  std::string_view name;
  bool (*holds)(const Json&);
};
const TypeRow kTypes[] = {
    {FieldType::String, "string", [](const Json& v) { return v.is_string(); }},
    {FieldType::Integer, "integer", [](const Json& v) { return v.is_number_integer(); }},
    {FieldType::Boolean, "boolean", [](const Json& v) { return v.is_boolean(); }},
    {FieldType::Object, "object", [](const Json& v) { return v.is_object(); }},
    {FieldType::Array, "array", [](const Json& v) { return v.is_array(); }},
    {FieldType::StringMap, "object", [](const Json& v) {
       return v.is_object() && std::all_of(v.begin(), v.end(), [](const Json& item) { return item.is_string(); });
     }}};

const TypeRow& row_of(FieldType type) {
  return *std::find_if(std::begin(kTypes), std::end(kTypes), [&](const TypeRow& row) { return row.type == type; });
}

// The JSON type of a value as the schema's messages name it.
std::string json_type(const Json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return value.type_name();
}

void type_problem(const std::string& field, const Json& value, std::string_view wanted, Problems& problems) {
  problems.push_back(field + ": Invalid value: \"" + json_type(value) + "\": " + field + " in body must be of type " +
                     std::string(wanted) + ": \"" + json_type(value) + "\"");
}

// Checks `object`'s fields against `rules` (`path`: where it is), dropping what they do not name.
void check_fields(Json& object, const std::vector<FieldRule>& rules, const std::string& path, Problems& problems) {
  const auto rule_for = [&](const std::string& name) {
    return std::find_if(rules.begin(), rules.end(), [&](const FieldRule& rule) { return rule.name == name; });
  };
  for (auto it = object.begin(); it != object.end();)
    it = rule_for(it.key()) == rules.end() || it->is_null() ? object.erase(it) : std::next(it);
  for (const FieldRule& rule : rules) {
    const std::string field = (path.empty() ? "" : path + ".") + std::string(rule.name);
    const auto found = object.find(std::string(rule.name));
    if (found == object.end()) {
      if (rule.required) problems.push_back(field + ": Required value");
      continue;
    }
    const TypeRow& type = row_of(rule.type);
    if (!type.holds(*found)) {
      type_problem(field, *found, type.name, problems);
      continue;
    }
    if (rule.allowed.empty() ||
        std::find(rule.allowed.begin(), rule.allowed.end(), found->get<std::string>()) != rule.allowed.end())
      continue;
    std::string supported;
    for (const std::string_view value : rule.allowed)
      supported += (supported.empty() ? "\"" : ", \"") + std::string(value) + "\"";
    problems.push_back(field + ": Unsupported value: " + found->dump() + ": supported values: " + supported);
  }
}

// Each item of the array at object[name] as an object checked against `rules`.
void check_items(Json& object, const char* name, const std::vector<FieldRule>& rules, const std::string& path,
                 Problems& problems, void (*more)(Json&, const std::string&, Problems&) = nullptr) {
  const auto array = object.find(name);
  if (array == object.end() || !array->is_array()) return;
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string item_path = (path.empty() ? "" : path + ".") + name + "[" + std::to_string(i) + "]";
    Json& item = (*array)[i];
    if (!item.is_object()) {
      type_problem(item_path, item, "object", problems);
      continue;
    }
    check_fields(item, rules, item_path, problems);
    if (more != nullptr) more(item, item_path, problems);
  }
}

void check_object(Json& object, const char* name, const std::vector<FieldRule>& rules, const std::string& path,
                  Problems& problems) {
  const auto found = object.find(name);
  if (found != object.end() && found->is_object())
    check_fields(*found, rules, (path.empty() ? "" : path + ".") + name, problems);
}

void check_result(Json& result, const std::string& path, Problems& problems) {
  check_object(result, "timestamp", kTimestampFields, path, problems);
  check_items(result, "resources", kReferenceFields, path, problems);
}

// What both report kinds share below the top.
void check_report_body(Json& report, Problems& problems) {
  check_object(report, "summary", kSummaryFields, "", problems);
  check_object(report, "scope", kReferenceFields, "", problems);
  check_items(report, "results", kResultFields, "", problems, check_result);
}

}  // namespace

std::vector<std::string> policy_report_problems(Json& report) {
  Problems problems;
  check_fields(report, kReportFields, "", problems);
  check_report_body(report, problems);
  return problems;
}

std::vector<std::string> open_report_problems(Json& report) {
  Problems problems;
  check_fields(report, kOpenReportFields, "", problems);
  check_object(report, "configuration", kConfigurationFields, "", problems);
  if (report.contains("configuration") && report["configuration"].is_object())
    check_object(report["configuration"], "limits", kLimitsFields, "configuration", problems);
  check_report_body(report, problems);
  return problems;
}

}  // namespace cluster_test
