// docs/policy-reference.md against the loader: every field the loader accepts has a row there at its
// full path, the reference documents no field the loader refuses, every rule ID, action and
// mutation name has a row, and its example loads. The convention: a table row whose first cell is
// the name in backquotes, "| `spec.pools[].mig.strategy` |" or "| `gpu-cap` |".
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "policy/base/ids.h"
#include "policy/config/policy_loader.h"
#include "webhook/io/policy_file.h"
#include "test_paths.h"

using namespace gpu_admission;

namespace {

const std::string& reference_text() {
  static const std::string text = [] {
    const auto path = std::filesystem::path(test_paths::source_dir()) / "docs" / "policy-reference.md";
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }();
  return text;
}

// The first cells of the reference's table rows that are one backquoted name: "| `x` |" -> x.
std::set<std::string> row_names(const std::string& text) {
  std::set<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("| `")) continue;
    const size_t end = line.find("` |", 3);
    if (end == std::string::npos) continue;
    const std::string name = line.substr(3, end - 3);
    if (name.find('`') == std::string::npos) names.insert(name);
  }
  return names;
}

// A row name that is a field path of the policy document (not a rule ID, action or mutation).
bool is_policy_path(const std::string& name) {
  return name == "apiVersion" || name == "kind" || name == "metadata" || name.starts_with("metadata.") ||
         name == "spec" || name.starts_with("spec.");
}

// The document that holds `{"zzUnknownField": 1}` in the mapping at `object` ("spec.pools[].mig":
// {"spec": {"pools": [{"mig": {...}}]}}), and the path of that field as the loader reports it.
std::pair<Json, std::string> document_with_unknown_field(std::string_view object) {
  std::vector<std::pair<std::string, bool>> steps;  // (key, its value is a list)
  std::string concrete;
  while (!object.empty()) {
    const size_t dot = object.find('.');
    std::string key(object.substr(0, dot));
    object = dot == std::string_view::npos ? std::string_view{} : object.substr(dot + 1);
    const bool list = key.ends_with("[]");
    if (list) key.resize(key.size() - 2);
    concrete += (concrete.empty() ? "" : ".") + key + (list ? "[0]" : "");
    steps.emplace_back(std::move(key), list);
  }
  Json value = Json::object({{"zzUnknownField", 1}});
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (it->second) value = Json::array({value});
    value = Json::object({{it->first, value}});
  }
  return {value, concrete + (concrete.empty() ? "" : ".") + "zzUnknownField"};
}

}  // namespace

TEST_CASE("every field the policy loader accepts has a row in docs/policy-reference.md", "[reference]") {
  REQUIRE_FALSE(reference_text().empty());
  const std::set<std::string> rows = row_names(reference_text());
  const auto fields = policy::accepted_policy_fields();
  REQUIRE(fields.size() >= 40);
  for (const auto& field : fields) {
    INFO("add a row \"| `" << field.path() << "` | type | default | what it does |\" to docs/policy-reference.md");
    CHECK(rows.count(field.path()) == 1);
  }
}

TEST_CASE("docs/policy-reference.md documents no field the policy loader refuses", "[reference]") {
  std::set<std::string> accepted;
  for (const auto& field : policy::accepted_policy_fields()) accepted.insert(field.path());
  size_t documented = 0;
  for (const auto& name : row_names(reference_text())) {
    if (!is_policy_path(name)) continue;
    ++documented;
    INFO(name << " is documented but the loader does not accept it (list it under \"Not yet supported\" instead)");
    CHECK(accepted.count(name) == 1);
  }
  CHECK(documented == accepted.size());
}

TEST_CASE("every rule ID, action and mutation name has a row in docs/policy-reference.md", "[reference]") {
  const std::set<std::string> rows = row_names(reference_text());
  for (auto id : policy::kRuleNames) {
    INFO("rule " << id);
    CHECK(rows.count(std::string(id)) == 1);
  }
  for (auto action : policy::kActionNames) {
    INFO("action " << action);
    CHECK(rows.count(std::string(action)) == 1);
  }
  for (auto name : policy::kMutationNames) {
    INFO("mutation " << name);
    CHECK(rows.count(std::string(name)) == 1);
  }
}

TEST_CASE("accepted_policy_fields lists the fields the loader checks, at the paths it checks them", "[reference]") {
  // For each mapping, an unknown field there must be refused with exactly the listed fields.
  std::vector<std::pair<std::string_view, std::string>> mappings;  // object path -> "a, b, c"
  for (const auto& field : policy::accepted_policy_fields()) {
    if (mappings.empty() || mappings.back().first != field.object) mappings.emplace_back(field.object, "");
    auto& list = mappings.back().second;
    list += (list.empty() ? "" : ", ") + std::string(field.name);
  }
  REQUIRE(mappings.size() >= 10);
  for (const auto& [object, expected] : mappings) {
    const auto [document, unknown_path] = document_with_unknown_field(object);
    INFO("mapping \"" << object << "\": " << document.dump());
    const auto load = policy::load_policy_config(document, policy::SourceMap{});
    bool found = false;
    for (const auto& issue : load.issues) {
      if (issue.path != unknown_path) continue;
      found = true;
      CHECK(issue.message == "unknown field \"zzUnknownField\" (expected one of: " + expected + ")");
    }
    CHECK(found);
  }
}

TEST_CASE("the example in docs/policy-reference.md loads without errors", "[reference]") {
  const std::string& text = reference_text();
  const size_t section = text.find("\n## Example");
  REQUIRE(section != std::string::npos);
  const size_t begin = text.find("```yaml\n", section);
  REQUIRE(begin != std::string::npos);
  const size_t end = text.find("\n```", begin + 8);
  REQUIRE(end != std::string::npos);
  const auto load = webhook::load_policy_text(text.substr(begin + 8, end - begin - 8 + 1), "policy-reference.md");
  INFO(load.report());
  CHECK(load.ok());
}
