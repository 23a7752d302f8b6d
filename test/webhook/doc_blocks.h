// The repository's documents as test input, so that what they show is what the product does: a
// fenced code block is named by the marker `<!-- doc-test: NAME -->` on the line before its
// opening fence (Markdown renders the comment as nothing). Tests read the policies, pods and
// quoted outputs from those blocks instead of keeping copies that could drift.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace doc_test {

// A file of the checkout, by its path from the repository root ("docs/deployment.md").
inline std::string read_doc(const std::string& relative) {
  const std::filesystem::path path = std::filesystem::path(test_paths::source_dir()) / relative;
  std::ifstream in(path, std::ios::binary);
  INFO(path.string());
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text inside the fenced block after `<!-- doc-test: NAME -->` (its lines, each ending in a
// newline, without the fences). Fails the test when the marker or the fences are missing, or
// when the marker is used twice.
inline std::string marked_block(const std::string& doc, const std::string& name) {
  const std::string marker = "<!-- doc-test: " + name + " -->\n";
  const size_t at = doc.find(marker);
  INFO("marker " << marker);
  REQUIRE(at != std::string::npos);
  REQUIRE(doc.find(marker, at + 1) == std::string::npos);
  const size_t fence = at + marker.size();
  REQUIRE(doc.compare(fence, 3, "```") == 0);
  const size_t begin = doc.find('\n', fence);
  REQUIRE(begin != std::string::npos);
  const size_t end = doc.find("\n```", begin);
  REQUIRE(end != std::string::npos);
  return doc.substr(begin + 1, end - begin);
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether `actual` is what `quoted` shows, line for line, where a quoted line that is `...` after
// its indentation stands for any number of actual lines (the documents shorten long outputs).
inline bool matches_quote(const std::vector<std::string>& quoted, const std::vector<std::string>& actual) {
  size_t a = 0;
  for (size_t q = 0; q < quoted.size(); ++q) {
    const std::string& line = quoted[q];
    if (line.find_first_not_of(' ') != std::string::npos && line.substr(line.find_first_not_of(' ')) == "...") {
      if (q + 1 == quoted.size()) return true;
      while (a < actual.size() && actual[a] != quoted[q + 1]) ++a;
      continue;
    }
    if (a >= actual.size() || actual[a] != line) return false;
    ++a;
  }
  return a == actual.size();
}

}  // namespace doc_test
