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

std::string junit_xml(const std::vector<JUnitSuite>& suites) {
  size_t tests = 0, failures = 0, skipped = 0;
  for (const auto& s : suites)
    for (const auto& c : s.cases) {
      ++tests;
      failures += c.failed;
      skipped += c.skipped;
    }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"gpu-admission\" tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(failures) + "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\">\n";
  for (const auto& s : suites) {
    size_t sf = 0, ss = 0;
    for (const auto& c : s.cases) {
      sf += c.failed;
      ss += c.skipped;
    }
    out += "  <testsuite name=\"" + xml_escape(s.name) + "\" tests=\"" + std::to_string(s.cases.size()) +
           "\" failures=\"" + std::to_string(sf) + "\" errors=\"0\" skipped=\"" + std::to_string(ss) + "\">\n";
    for (const auto& c : s.cases) {
      out += "    <testcase name=\"" + xml_escape(c.name) + "\" classname=\"" + xml_escape(c.classname) + "\"";
      if (!c.failed && !c.skipped) {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (c.skipped) out += "      <skipped message=\"" + xml_escape(c.failure_message) + "\"/>\n";
      if (c.failed)
        out += "      <failure message=\"" + xml_escape(c.failure_message) + "\" type=\"failure\">" +
               xml_escape(c.failure_text) + "</failure>\n";
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace gpu_admission::webhook
