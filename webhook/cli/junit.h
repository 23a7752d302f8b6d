// A small JUnit XML writer (the schema CI systems read: testsuites > testsuite > testcase, with
// failure elements), for `check -o junit` and `test -o junit`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::webhook {

struct JUnitCase {
  std::string name;
  std::string classname;
  bool failed = false;
  bool skipped = false;
  std::string failure_message;  // one line
  std::string failure_text;     // details
};

struct JUnitSuite {
  std::string name;
  std::vector<JUnitCase> cases;
};

std::string xml_escape(std::string_view text);
std::string junit_xml(const std::vector<JUnitSuite>& suites);

}  // namespace gpu_admission::webhook
