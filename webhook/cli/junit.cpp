#include "webhook/cli/junit.h"

namespace gpu_admission::webhook {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') out += '?';
        else out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(const JUnitCase& c) {
    ++tests;
    failures += c.failed && !c.errored;
    errors += c.errored;
    skipped += c.skipped;
  }
  std::string attributes() const {
    return "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
           std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) + "\"";
  }
};

void write_case(const JUnitCase& c, std::string& out) {
  out += "    <testcase name=\"" + xml_escape(c.name) + "\" classname=\"" + xml_escape(c.classname) + "\"";
  if (!c.failed && !c.skipped && !c.errored && c.system_out.empty()) {
    out += "/>\n";
    return;
  }
  out += ">\n";
  if (c.skipped) out += "      <skipped message=\"" + xml_escape(c.failure_message) + "\"/>\n";
  if (c.errored)
    out += "      <error message=\"" + xml_escape(c.failure_message) + "\" type=\"error\">" + xml_escape(c.failure_text) +
           "</error>\n";
  else if (c.failed)
    out += "      <failure message=\"" + xml_escape(c.failure_message) + "\" type=\"failure\">" +
           xml_escape(c.failure_text) + "</failure>\n";
  if (!c.system_out.empty()) out += "      <system-out>" + xml_escape(c.system_out) + "</system-out>\n";
  out += "    </testcase>\n";
}

}  // namespace

std::string junit_xml(const std::vector<JUnitSuite>& suites) {
  Counts all;
  for (const auto& s : suites)
    for (const auto& c : s.cases) all.add(c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"gpu-admission\" " + all.attributes() + ">\n";
  for (const auto& s : suites) {
    Counts counts;
    for (const auto& c : s.cases) counts.add(c);
    out += "  <testsuite name=\"" + xml_escape(s.name) + "\" " + counts.attributes() + ">\n";
    if (!s.properties.empty()) {
      out += "    <properties>\n";
      for (const auto& [name, value] : s.properties)
        out += "      <property name=\"" + xml_escape(name) + "\" value=\"" + xml_escape(value) + "\"/>\n";
      out += "    </properties>\n";
    }
    for (const auto& c : s.cases) write_case(c, out);
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace gpu_admission::webhook
