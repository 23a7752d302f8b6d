// The policy engine's tests stand on policy/ alone, plus the YAML reading of webhook/io/ (policy
// files and manifests: their fixtures): no file of test/policy includes another webhook/ header,
// and policy_tests links no webhook library but gpu_webhook_io (test/CMakeLists.txt, which also
// refuses it at configure time). What needs the webhook's own paths (check, AdmissionReviews)
// is tested in test/webhook.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

// The webhook/ headers `text` includes that are not webhook/io/'s.
std::vector<std::string> webhook_includes(const std::string& text) {
  // Directives start their line (the examples quoted in this file's tests do not).
  static const std::regex include(R"re((?:^|\n)[ \t]*#[ \t]*include[ \t]+[<"](webhook/[^">]+)[">])re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it)
    if ((*it)[1].str().rfind("webhook/io/", 0) != 0) out.push_back((*it)[1].str());
  return out;
}

// The libraries `cmake` gives policy_tests (gpu_admission_test(policy_tests policy LIBS...)), one a
// word; empty when the call is not found.
std::vector<std::string> policy_test_libraries(const std::string& cmake) {
  static const std::regex call(R"re(gpu_admission_test\(\s*policy_tests\s+policy\s+([^)]*)\))re");
  std::smatch m;
  if (!std::regex_search(cmake, m, call)) return {};
  std::istringstream words(m[1].str());
  std::vector<std::string> out;
  for (std::string w; words >> w;) out.push_back(w);
  return out;
}

bool allowed_library(const std::string& lib) { return lib == "gpu_policy" || lib == "gpu_webhook_io"; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const fs::path kSource = fs::path(test_paths::source_dir());

}  // namespace

TEST_CASE("the include check sees webhook/ headers other than webhook/io/'s", "[layers]") {
  CHECK(webhook_includes("#include \"webhook/io/policy_file.h\"\n#include \"policy/base/ids.h\"\n").empty());
  CHECK(webhook_includes("#include \"webhook/cli/offline.h\"\n") == std::vector<std::string>{"webhook/cli/offline.h"});
  CHECK(webhook_includes("#  include <webhook/admission/review_decision.h>\n") ==
        std::vector<std::string>{"webhook/admission/review_decision.h"});
  CHECK(webhook_includes("#include \"webhook/iox/x.h\"\n") == std::vector<std::string>{"webhook/iox/x.h"});
  CHECK(webhook_includes("int x;\n  #include \"webhook/server/https_server.h\"\n") ==
        std::vector<std::string>{"webhook/server/https_server.h"});
  CHECK(webhook_includes("f(\"#include <webhook/cli/offline.h>\");\n").empty());
}

TEST_CASE("the link check reads policy_tests' libraries", "[layers]") {
  CHECK(policy_test_libraries("gpu_admission_test(policy_tests policy gpu_policy gpu_webhook_io)\n") ==
        std::vector<std::string>{"gpu_policy", "gpu_webhook_io"});
  CHECK(policy_test_libraries("gpu_admission_test(policy_tests policy gpu_policy\n  gpu_webhook)") ==
        std::vector<std::string>{"gpu_policy", "gpu_webhook"});
  CHECK(policy_test_libraries("gpu_admission_test(webhook_tests webhook gpu_webhook)").empty());
  CHECK_FALSE(allowed_library("gpu_webhook"));
  CHECK_FALSE(allowed_library("gpu_webhook_cli"));
  CHECK(allowed_library("gpu_webhook_io"));
}

TEST_CASE("test/policy includes no webhook/ header but webhook/io/'s", "[layers]") {
  const fs::path dir = kSource / "test" / "policy";
  REQUIRE(fs::is_directory(dir));
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".h" && path.extension() != ".cpp")) continue;
    ++files;
    INFO(fs::relative(path, kSource).string());
    CHECK(webhook_includes(read_text(path)).empty());
  }
  CHECK(files > 40);
}

TEST_CASE("policy_tests links no webhook library but gpu_webhook_io", "[layers]") {
  const std::vector<std::string> libs = policy_test_libraries(read_text(kSource / "test" / "CMakeLists.txt"));
  REQUIRE_FALSE(libs.empty());
  for (const auto& lib : libs) {
    INFO(lib);
    CHECK(allowed_library(lib));
  }
}
