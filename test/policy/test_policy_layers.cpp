// The folder picture of policy/ holds: every source file lives in one of the pipeline's folders,
// each folder has a README.md saying what lives there, and no file includes from a folder later
// in the pipeline than its own (policy/CMakeLists.txt lists the order); and the engine keeps no
// per-thread state.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 6> kLayers = {"base", "views", "decoding", "config", "dra", "evaluation"};

int layer_of(std::string_view folder) {
  for (size_t i = 0; i < kLayers.size(); ++i)
    if (kLayers[i] == folder) return static_cast<int>(i);
  return -1;
}

// The `#include "policy/<folder>/..."` lines of `text` whose folder is later than `own`, or unknown.
std::vector<std::string> upward_includes(const std::string& text, std::string_view own) {
  static const std::regex include(R"re(#include\s+"policy/([^/"]+)/)re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it) {
    const std::string folder = (*it)[1].str();
    const int layer = layer_of(folder);
    if (layer < 0 || layer > layer_of(own)) out.push_back(folder);
  }
  return out;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const fs::path kPolicyDir = fs::path(test_paths::source_dir()) / "policy";

}  // namespace

TEST_CASE("the layer check sees an include from a later folder", "[layers]") {
  CHECK(upward_includes("#include \"policy/base/ids.h\"\n#include \"policy/views/pod_view.h\"\n", "decoding").empty());
  CHECK(upward_includes("#include \"policy/evaluation/evaluator.h\"\n", "dra") == std::vector<std::string>{"evaluation"});
  CHECK(upward_includes("#include  \"policy/elsewhere/x.h\"\n", "evaluation") == std::vector<std::string>{"elsewhere"});
  CHECK(upward_includes("#include \"policy/dra/claim_view.h\"\n", "dra").empty());
}

TEST_CASE("policy/ sources sit in the pipeline's folders and include only from earlier ones", "[layers]") {
  REQUIRE(fs::is_directory(kPolicyDir));
  size_t sources = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kPolicyDir)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".h" && path.extension() != ".cpp")) continue;
    ++sources;
    const fs::path relative = fs::relative(path, kPolicyDir);
    const std::string folder = relative.begin()->string();
    INFO(relative.string());
    REQUIRE(layer_of(folder) >= 0);
    CHECK(upward_includes(read_text(path), folder).empty());
  }
  CHECK(sources > 50);
}

TEST_CASE("every policy/ folder says what lives there", "[layers]") {
  for (std::string_view layer : kLayers) {
    const fs::path readme = kPolicyDir / layer / "README.md";
    INFO(readme.string());
    CHECK(read_text(readme).size() > 100);
  }
}

TEST_CASE("policy/ keeps no per-thread state: scratch memory comes from the caller's arena", "[layers]") {
  // The engine is a pure function of its inputs; per-thread buffers hide state between requests
  // (and one returned by reference outlives the call that filled it).
  for (const auto& entry : fs::recursive_directory_iterator(kPolicyDir)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".h" && path.extension() != ".cpp")) continue;
    INFO(fs::relative(path, kPolicyDir).string());
    CHECK(read_text(path).find("thread_local") == std::string::npos);
  }
}
