// The repository's docs stand alone and name what exists: every relative link in README.md,
// docs/*.md and the folders' READMEs points at a file or folder of the checkout (never outside
// it), and every path they quote in backticks under one of the checkout's top folders exists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = test_paths::source_dir();

std::vector<fs::path> docs() {
  std::vector<fs::path> out = {kRoot / "README.md"};
  for (const auto& e : fs::directory_iterator(kRoot / "docs"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  for (const char* dir : {"policy", "webhook", "certs", "test", "bench", "examples", "charts", "deploy"}) {
    if (!fs::is_directory(kRoot / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
      if (e.path().filename() != "README.md") continue;
      const std::string rel = fs::relative(e.path(), kRoot).generic_string();
      if (rel.find("node_modules") == std::string::npos) out.push_back(e.path());
    }
  }
  return out;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A quoted path of the checkout: under one of its top folders, with no placeholder in it.
bool checkout_path(const std::string& token) {
  static const std::regex path(R"(^(\.ci|bench|certs|charts|cmake|deploy|docs|examples|policy|scripts|test|webhook)/[A-Za-z0-9_./+-]*$)");
  return std::regex_match(token, path) && token.find("..") == std::string::npos;
}

}  // namespace

TEST_CASE("docs: relative links point inside the checkout, at what exists", "[docs]") {
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  size_t checked = 0;
  for (const fs::path& doc : docs()) {
    const std::string text = read(doc);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      std::string target = (*it)[1].str();
      if (target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") ||
          target.starts_with("#"))
        continue;
      target = target.substr(0, target.find('#'));
      const fs::path resolved = fs::weakly_canonical(doc.parent_path() / target);
      INFO(fs::relative(doc, kRoot).string() << ": link " << (*it)[1].str());
      const std::string rel = fs::relative(resolved, fs::weakly_canonical(kRoot)).generic_string();
      CHECK_FALSE(rel.starts_with(".."));  // a user of a clone has nothing beside it
      CHECK(fs::exists(resolved));
      ++checked;
    }
  }
  CHECK(checked > 30);
}

TEST_CASE("docs: every path they quote under a top folder of the checkout exists", "[docs]") {
  static const std::regex quoted("`([^`\\s]+)`");
  size_t checked = 0;
  for (const fs::path& doc : docs()) {
    const std::string text = read(doc);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted); it != std::sregex_iterator(); ++it) {
      std::string token = (*it)[1].str();
      // A file and a line or symbol: `policy/config/lint.cpp:42`, `kube_config.h`'s function.
      token = token.substr(0, token.find(':'));
      if (!checkout_path(token)) continue;
      INFO(fs::relative(doc, kRoot).string() << ": `" << (*it)[1].str() << "`");
      CHECK(fs::exists(kRoot / token));
      ++checked;
    }
  }
  CHECK(checked > 100);
}
