// Which files `gpu-admission test` runs: each argument that is a file is a suite; a directory
// stands for every TestSuite file under it (recursively, *.yaml and *.yml whose kind is
// TestSuite, in path order; other YAML files are left alone), and a directory without any is
// an error.
#pragma once

#include <string>
#include <vector>

namespace gpu_admission::webhook {

struct SuiteFiles {
  std::vector<std::string> files;
  std::vector<std::string> errors;  // "DIR: no TestSuite file under it (...)"
};

SuiteFiles find_suite_files(const std::vector<std::string>& args);

// Whether a file's text is a TestSuite: some YAML document of kind TestSuite, or, for text
// that is not valid YAML, a top-level `kind: TestSuite` line (so that a broken suite is
// reported, not passed over).
bool is_test_suite_text(const std::string& text);

}  // namespace gpu_admission::webhook
