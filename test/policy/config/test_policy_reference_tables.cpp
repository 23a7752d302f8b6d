// The field tables of docs/policy-reference.md are generated from the policy schema
// (policy/config/policy_schema.h): each table sits between a marker that names what it lists and
// an end marker. A marker's names are mappings ("spec.pools[]": its fields, each mapping also
// named there printed right after the field that holds it) or single fields ("spec.runtimeClasses",
// which then has its row there and in no mapping's table). The test fails while the file differs
// from what the schema renders, or while a field has no row; GPU_ADMISSION_WRITE_DOCS=1 writes it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "policy/config/policy_loader.h"
#include "policy/config/policy_schema.h"
#include "test_paths.h"

using namespace gpu_admission;
using policy::Field;
using policy::Mapping;

namespace {

namespace fs = std::filesystem;

constexpr const char* kRegenerate = "GPU_ADMISSION_WRITE_DOCS=1 build/test/policy_tests \"[policy-reference]\"";
constexpr std::string_view kBegin = "<!-- fields: ";
constexpr std::string_view kEnd = "<!-- end of fields -->\n";
constexpr std::string_view kHeader =
    "| field | type | default (when left out) | what it does |\n|---|---|---|---|\n";

fs::path reference_path() { return fs::path(test_paths::source_dir()) / "docs" / "policy-reference.md"; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_mode() {
  const char* v = std::getenv("GPU_ADMISSION_WRITE_DOCS");
  return v && *v && std::string_view(v) != "0";
}

std::string full_path(const Mapping& m, const Field& f) {
  return m.path.empty() ? std::string(f.name) : std::string(m.path) + "." + std::string(f.name);
}

// A marker's names: "(document)" is the document's own mapping.
std::vector<std::string> marker_names(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string word; in >> word;) out.push_back(word == "(document)" ? "" : word);
  return out;
}

// A default as the reference spells a literal one: `[a, b]`, `""`, `x`, `{}`.
std::string literal(const Json& v) {
  if (v.is_string()) return v.get<std::string>().empty() ? "`\"\"`" : "`" + v.get<std::string>() + "`";
  if (v.is_array()) {
    std::string items;
    for (const auto& item : v) items += (items.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
    return "`[" + items + "]`";
  }
  return "`" + v.dump() + "`";
}


// What `policy show` prints for the smallest policy: every default of the document and spec.
const Json& shown_defaults() {
  static const Json shown = policy::policy_config_to_json(
      policy::load_policy_config(Json::parse(R"({"apiVersion": "gpu-admission.io/v1alpha1",
                                               "kind": "GpuAdmissionPolicy", "spec": {}})"),
                                 policy::SourceMap{})
          .config);
  return shown;
}

// The value at a mapping's path in `doc` (no list items).
Json mapping_at(const Json& doc, std::string_view path) {
  Json at = doc;
  for (std::string_view rest = path; !rest.empty();) {
    const size_t dot = rest.find('.');
    at = at[std::string(rest.substr(0, dot))];
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  }
  return at;
}

// The default column: the entry's text, or the default `policy show` prints (a field it leaves
// out when empty is empty).
std::string default_of(const Mapping& m, const Field& f) {
  if (!f.doc.default_text.empty()) return std::string(f.doc.default_text);
  const Json at = mapping_at(shown_defaults(), m.path);
  if (at.contains(f.name)) return literal(at[std::string(f.name)]);
  switch (f.kind) {
    case policy::FieldKind::String: return "`\"\"`";
    case policy::FieldKind::StringMap: return "`{}`";
    default: return "`[]`";
  }
}

struct Tables {
  std::set<std::string> single_fields;  // named on their own by some marker
  std::vector<std::string> rows;        // every field path printed, for the coverage check
};

struct TableWriter {
  Tables& tables;
  const std::vector<std::string>& names;
  std::set<std::string> done;  // mappings of this marker already printed
  std::string out;

  bool named(std::string_view path) const { return std::find(names.begin(), names.end(), path) != names.end(); }

  void row(const Mapping& m, const Field& f) {
    const std::string path = full_path(m, f);
    tables.rows.push_back(path);
    out += "| `" + path + "` | " + std::string(f.doc.type) + " | " + default_of(m, f) + " | " +
           std::string(f.doc.description) + " |\n";
    if (f.fields && named(f.fields->path)) mapping(*f.fields);
  }

  void mapping(const Mapping& m) {
    if (!done.insert(std::string(m.path)).second) return;
    for (const auto& f : m.fields)
      if (!f.name.empty() && !tables.single_fields.count(full_path(m, f))) row(m, f);
  }

  void name(const std::string& n) {
    if (const Mapping* m = policy::find_mapping(n)) return mapping(*m);
    for (const Mapping* m : policy::policy_mappings())
      for (const auto& f : m->fields)
        if (!f.name.empty() && full_path(*m, f) == n) return row(*m, f);
    FAIL("marker names \"" << n << "\": neither a mapping nor a field of the policy schema");
  }
};

// The reference with every marked table rendered from the schema.
std::string render(const std::string& text, Tables& tables) {
  std::vector<std::string> all_names;
  for (size_t at = text.find(kBegin); at != std::string::npos; at = text.find(kBegin, at + 1)) {
    const size_t eol = text.find(" -->", at);
    for (auto& n : marker_names(std::string_view(text).substr(at + kBegin.size(), eol - at - kBegin.size())))
      if (!policy::find_mapping(n)) tables.single_fields.insert(n);
  }
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(kBegin); at != std::string::npos; at = text.find(kBegin, from)) {
    const size_t eol = text.find('\n', at);
    const size_t end = text.find(kEnd, eol);
    REQUIRE(eol != std::string::npos);
    REQUIRE(end != std::string::npos);
    const auto names = marker_names(std::string_view(text).substr(at + kBegin.size(), text.find(" -->", at) - at -
                                                                                          kBegin.size()));
    TableWriter w{tables, names, {}, {}};
    for (const auto& n : names) w.name(n);
    out += text.substr(from, eol + 1 - from) + std::string(kHeader) + w.out;
    from = end;
  }
  return out + text.substr(from);
}

// The first line where the file and the rendering differ, for the failure message.
std::string first_difference(const std::string& file, const std::string& rendered) {
  std::istringstream a(file), b(rendered);
  std::string la, lb;
  for (size_t line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b || la != lb)
      return "line " + std::to_string(line) + ":\n  file:     " + (more_a ? la : "(end)") + "\n  rendered: " +
             (more_b ? lb : "(end)");
  }
}

}  // namespace

TEST_CASE("docs/policy-reference.md's field tables are the policy schema's", "[policy-reference]") {
  const std::string text = read_text(reference_path());
  REQUIRE_FALSE(text.empty());
  Tables tables;
  const std::string rendered = render(text, tables);
  // Every field has exactly one row.
  std::multiset<std::string> rows(tables.rows.begin(), tables.rows.end());
  for (const auto& field : policy::accepted_policy_fields()) {
    INFO("add " << field.path() << " (or its mapping) to a \"<!-- fields: ... -->\" marker of docs/policy-reference.md");
    CHECK(rows.count(field.path()) == 1);
  }
  if (write_mode()) {
    std::ofstream(reference_path()) << rendered;
    SUCCEED("wrote docs/policy-reference.md");
    return;
  }
  INFO("docs/policy-reference.md is stale: run " << kRegenerate << "\n" << first_difference(text, rendered));
  CHECK(rendered == text);
}

TEST_CASE("defaults outside list items are rendered from PolicyConfig, not written twice", "[policy-reference]") {
  // A literal default in an entry would be a second declaration of PolicyConfig's default.
  size_t rendered = 0;
  for (const Mapping* m : policy::policy_mappings()) {
    if (m->path.find("[]") != std::string_view::npos) continue;  // list items: no item to render from
    for (const auto& f : m->fields) {
      if (f.name.empty()) continue;
      const std::string_view def = f.doc.default_text;
      INFO(full_path(*m, f) << " has the literal default " << def << ": leave it empty");
      CHECK_FALSE((def.size() >= 2 && def.starts_with('`') && def.ends_with('`')));
      if (def.empty()) {
        ++rendered;
        CHECK(default_of(*m, f).starts_with('`'));
      }
    }
  }
  CHECK(rendered >= 20);
}

TEST_CASE("a rendered default is what policy show prints for a policy that leaves the field out", "[policy-reference]") {
  const Mapping* resources = policy::find_mapping("spec.gpuResources");
  REQUIRE(resources != nullptr);
  for (const auto& f : resources->fields) {
    if (f.name == "full") CHECK(default_of(*resources, f) == "`[nvidia.com/gpu]`");
    if (f.name == "migPrefix") CHECK(default_of(*resources, f) == "`nvidia.com/mig-`");
    if (f.name == "fractional") CHECK(default_of(*resources, f) == "`[]`");  // left out of policy show when empty
  }
  const Mapping* metadata = policy::find_mapping("metadata");
  REQUIRE(metadata != nullptr);
  CHECK(default_of(*metadata, metadata->fields[0]) == "`\"\"`");
}
