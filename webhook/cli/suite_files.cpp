// Finding TestSuite files (suite_files.h).
#include "webhook/cli/suite_files.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

namespace fs = std::filesystem;

bool has_kind_line(const std::string& text) {
  static const std::regex kKindLine(R"(kind:[ \t]*(TestSuite|"TestSuite"|'TestSuite')[ \t]*(#.*)?\r?)");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (std::regex_match(text.begin() + static_cast<long>(start), text.begin() + static_cast<long>(end), kKindLine))
      return true;
    start = end + 1;
  }
  return false;
}

bool is_suite_file(const fs::path& path) {
  TextFile file = read_text_file(path.string(), kMaxManifestBytes);
  return file.error.empty() ? is_test_suite_text(file.text) : true;  // unreadable: say so when it is loaded
}

std::vector<std::string> suites_under(const std::string& dir, std::error_code& ec) {
  std::vector<std::string> found;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string ext = it->path().extension().string();
    if ((ext == ".yaml" || ext == ".yml") && is_suite_file(it->path())) found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

bool is_test_suite_text(const std::string& text) {
  YamlLimits limits;
  limits.record_marks = false;
  YamlParse parsed = parse_yaml_or_json(text, limits);
  if (parsed.error) return has_kind_line(text);
  for (const auto& doc : parsed.documents)
    if (doc.value.is_object() && doc.value.contains("kind") && doc.value["kind"] == "TestSuite") return true;
  return false;
}

SuiteFiles find_suite_files(const std::vector<std::string>& args) {
  SuiteFiles out;
  for (const auto& arg : args) {
    std::error_code ec;
    if (arg == "-" || !fs::is_directory(arg, ec)) {
      out.files.push_back(arg);
      continue;
    }
    std::vector<std::string> found = suites_under(arg, ec);
    if (ec) out.errors.push_back(arg + ": cannot read the directory: " + ec.message());
    else if (found.empty())
      out.errors.push_back(arg + ": no TestSuite file under it (looked for *.yaml and *.yml files with kind: TestSuite)");
    out.files.insert(out.files.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace gpu_admission::webhook
