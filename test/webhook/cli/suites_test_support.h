// What the `gpu-admission test` tests share: a temporary folder holding a copy of examples/,
// so that suites written beside it use the same relative paths as examples/suite.yaml.
#pragma once

#include <catch2/catch.hpp>

#include "webhook/cli/cli_test_support.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

const std::string kSource = test_paths::source_dir();
const std::string kExamples = kSource + "/examples";

// ------------------------------------------------------------------ running the binary

using cli_test::CliRun;
using cli_test::describe;
using cli_test::run_cli;
using cli_test::slurp;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "gpa-suites-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

// A copy of examples/ (policy, manifests, suite) in a temp dir, so suites written beside it can use
// the same relative paths as examples/suite.yaml.
void copy_examples(const TempDir& dir) {
  fs::copy(kExamples, dir.path / "examples", fs::copy_options::recursive);
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace
