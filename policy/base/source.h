// Problems found in input (policy files, manifests) as data: each names a field path such as
// `spec.tenants[2].pools[0]` and, when known, the line and column it came from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/base/string_map.h"

namespace gpu_admission::policy {

struct SourceMark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

// Field path -> where that field's value starts in the source text. Built by the YAML/JSON
// reader (webhook/), consulted when an issue is reported.
class SourceMap {
 public:
  void set(std::string path, SourceMark mark) { marks_.insert_or_assign(std::move(path), mark); }
  // The mark of `path`, or of its nearest ancestor that has one.
  SourceMark find(std::string_view path) const;
  bool empty() const { return marks_.empty(); }

 private:
  StringMap<SourceMark> marks_;
};

struct Issue {
  // Note: a fact `policy lint` prints about how the policy meets the cluster (lint_notes): never
  // among a load's issues, never counted as a warning.
  enum class Severity { Error, Warning, Note };
  Severity severity = Severity::Error;
  std::string path;     // field path, e.g. spec.tenants[2].pools[0]
  std::string message;  // e.g. unknown pool "a100-sec"
  SourceMark mark;
};

using Issues = std::vector<Issue>;

bool has_errors(const Issues& issues);

// "FILE:LINE:COL: error: PATH: MESSAGE" (line/column left out when unknown; "warning", "note").
std::string format_issue(const Issue& issue, std::string_view file);

// Path building shared by every reader so that paths and source maps agree.
// Identifier-like keys are joined with '.', others quoted: a.b, a["gpu.example.com/pool"].
std::string child_path(std::string_view parent, std::string_view key);
std::string index_path(std::string_view parent, size_t index);

}  // namespace gpu_admission::policy
