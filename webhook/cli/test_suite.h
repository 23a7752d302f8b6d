// Policy test suites (`gpu-admission test`): loading a TestSuite file, running its cases
// through the offline evaluator and comparing the results with the expectations.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "webhook/io/policy_file.h"

namespace gpu_admission::webhook {

// `messages:` entries: the pattern as written (for failure texts) and compiled (ECMAScript).
struct MessagePattern {
  std::string text;
  std::regex regex;
};

struct TestExpectation {
  std::optional<bool> allowed;
  std::optional<std::set<std::string>> denied;
  std::optional<std::set<std::string>> warned;
  std::optional<std::set<std::string>> audited;
  std::optional<std::set<std::string>> excepted;  // rules an exception turned off for the object
  std::vector<MessagePattern> messages;  // each must match (search) some finding's message
  std::optional<std::map<std::string, std::string>> labels;
  std::optional<std::map<std::string, std::string>> node_selector;
  std::optional<std::map<std::string, std::map<std::string, std::string>>> resources;  // container -> limits
  std::vector<std::pair<std::string, Json>> patched;  // JSON pointer into the mutated object -> value
};

struct TestCase {
  std::string name;
  std::string namespace_name;  // empty: the object's, else "default"
  Json object;
  std::string object_source;   // file:line or suite:line (inline)
  std::vector<Json> objects;   // `objects:` claims, templates and namespaces the object refers to
  std::optional<std::vector<std::pair<std::string, std::string>>> namespace_labels;  // `namespaceLabels:`
  TestExpectation expect;
};

struct TestSuite {
  std::string file;
  std::string policy_path;  // resolved; empty = built-in default
  std::vector<TestCase> cases;
};

struct SuiteLoad {
  std::optional<TestSuite> suite;
  std::vector<std::string> errors;  // "suite.yaml:12:5: cases[0].expect.denied[1]: unknown rule \"x\""
};

SuiteLoad load_test_suite(const std::string& path);

// A finding of the case's decision, as a failed case shows it.
struct CaseFinding {
  std::string label;  // deny, warn, audit (webhook/io/finding_label.h)
  std::string rule;
  std::string message;
  std::string field;
};

struct CaseResult {
  std::string name;
  bool passed = false;
  std::vector<std::string> failures;  // "denied: expected [privileged], got [privileged, gpu-cap]"
  std::vector<CaseFinding> findings;  // every finding of the decision (shown when the case fails)
};

struct SuiteResult {
  std::string file;
  std::string policy_source;  // the policy as check names it (check_report.h policy_title)
  std::vector<CaseResult> cases;
  std::optional<std::string> error;  // the policy could not be loaded: every case fails
};

SuiteResult run_test_suite(const TestSuite& suite);

// The suite with only the cases whose name `select` matches (std::regex_search).
TestSuite select_cases(const TestSuite& suite, const std::regex& select);

}  // namespace gpu_admission::webhook
