// A small JUnit XML writer (the schema CI systems read: testsuites > testsuite > testcase, with
// properties, failure, error, skipped and system-out elements), for `check -o junit` and `test -o junit`.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_admission::webhook {

struct JUnitCase {
  std::string name;
  std::string classname;
  bool failed = false;
  bool skipped = false;
  std::string failure_message;  // one line (also the message of <skipped> and <error>)
  std::string failure_text;     // details
  bool errored = false;         // an <error> (could not be run at all) instead of a <failure>
  std::string system_out;       // <system-out>: what passed but deserves a look (warnings)
};

struct JUnitSuite {
  std::string name;
  std::vector<JUnitCase> cases;
  std::vector<std::pair<std::string, std::string>> properties;  // <properties>: name, value
};

std::string xml_escape(std::string_view text);
std::string junit_xml(const std::vector<JUnitSuite>& suites);

}  // namespace gpu_admission::webhook
