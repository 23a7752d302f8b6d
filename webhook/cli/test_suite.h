// Policy test suites (`gpu-admission test`): loading a TestSuite file, running its cases
// through the offline evaluator and comparing the results with the expectations.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "webhook/io/policy_file.h"

namespace gpu_admission::webhook {

struct TestExpectation {
  std::optional<bool> allowed;
  std::optional<std::set<std::string>> denied;
  std::optional<std::set<std::string>> warned;
  std::optional<std::map<std::string, std::string>> labels;
  std::optional<std::map<std::string, std::string>> node_selector;
  std::optional<std::map<std::string, std::map<std::string, std::string>>> resources;  // container -> limits
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

struct CaseResult {
  std::string name;
  bool passed = false;
  std::vector<std::string> failures;  // "denied: expected [privileged], got [privileged, gpu-cap]"
};

struct SuiteResult {
  std::string file;
  std::string policy_source;
  std::vector<CaseResult> cases;
  std::optional<std::string> error;  // the policy could not be loaded: every case fails
};

SuiteResult run_test_suite(const TestSuite& suite);

}  // namespace gpu_admission::webhook
