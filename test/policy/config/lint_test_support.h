// Shared by the lint tests: a policy text loaded and its warnings (a warning never blocks
// loading, and is one line), and the warnings at one field path.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "webhook/io/policy_file.h"

namespace lint_test {

using namespace gpu_admission;

struct Linted {
  webhook::PolicyLoad load;
  std::vector<policy::Issue> warnings;
};

inline Linted lint_text(const std::string& text) {
  Linted out{webhook::load_policy_text(text, "lint.yaml"), {}};
  INFO(out.load.report());
  REQUIRE(out.load.ok());  // warnings never block
  for (const auto& issue : out.load.issues) {
    CHECK(issue.severity == policy::Issue::Severity::Warning);
    CHECK(issue.message.find('\n') == std::string::npos);  // one line
    out.warnings.push_back(issue);
  }
  return out;
}

// The warnings at `path`.
inline std::vector<std::string> at(const Linted& l, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& w : l.warnings)
    if (w.path == path) out.push_back(w.message);
  return out;
}

inline bool has(const Linted& l, const std::string& path, const std::string& needle) {
  auto messages = at(l, path);
  return std::any_of(messages.begin(), messages.end(),
                     [&](const std::string& m) { return m.find(needle) != std::string::npos; });
}

}  // namespace lint_test
