// A small XML well-formedness check for the tests that read JUnit back: tag balance, quoting and
// escaping, the elements in document order, and a JUnit document's counts checked against its
// <testsuite> and <testcase> elements.
#pragma once

#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

// ------------------------------------------------------------------ a small XML well-formedness check

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  size_t depth = 0;
  std::string text;  // character data directly inside (unescaped), for leaf elements
};

struct XmlDoc {
  bool ok = false;
  std::string error;
  std::vector<XmlElement> elements;  // document order
};

bool valid_char_data(std::string_view t) {
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '<') return false;
    if (t[k] != '&') continue;
    size_t semi = t.find(';', k);
    if (semi == std::string_view::npos) return false;
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    bool known = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
                 (ent.size() > 1 && ent[0] == '#');
    if (!known) return false;
    k = semi;
  }
  return true;
}

std::string unescape(std::string_view t) {
  std::string out;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] != '&') {
      out += t[k];
      continue;
    }
    size_t semi = t.find(';', k);
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else out += '?';
    k = semi;
  }
  return out;
}

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'; }

// Reads a start tag's attributes, from after its name through its '>' or "/>", into `el`;
// `i` ends after the tag. Returns an error, or empty.
std::string parse_attributes(const std::string& s, size_t& i, XmlElement& el, bool& self_closing) {
  while (i < s.size()) {
    size_t ws = i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (s[i] == '>') {
      ++i;
      return "";
    }
    if (s.compare(i, 2, "/>") == 0) {
      i += 2;
      self_closing = true;
      return "";
    }
    if (ws == i) return "attributes must be separated by whitespace";
    if (!name_start(s[i])) return "bad attribute name";
    size_t a0 = i;
    while (i < s.size() && name_char(s[i])) ++i;
    std::string attr = s.substr(a0, i - a0);
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] != '=') return "attribute without a value";
    ++i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return "unquoted attribute value";
    char q = s[i++];
    size_t e = s.find(q, i);
    if (e == std::string::npos) return "unterminated attribute value";
    std::string_view value(s.data() + i, e - i);
    if (!valid_char_data(value)) return "invalid attribute value";
    if (el.attrs.count(attr)) return "duplicate attribute " + attr;
    el.attrs[attr] = unescape(value);
    i = e + 1;
  }
  return "unterminated start tag";
}

XmlDoc parse_xml(const std::string& s) {
  XmlDoc doc;
  std::vector<size_t> stack;  // indexes into doc.elements
  bool seen_root = false;
  size_t i = 0;
  auto fail = [&](const std::string& m) {
    doc.error = m + " at offset " + std::to_string(i);
    doc.ok = false;
    return doc;
  };
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    std::string_view text(s.data() + i, (lt == std::string::npos ? s.size() : lt) - i);
    if (stack.empty()) {
      if (text.find_first_not_of(" \t\r\n") != std::string_view::npos) return fail("text outside the root element");
    } else {
      if (!valid_char_data(text)) return fail("invalid character data");
      doc.elements[stack.back()].text += unescape(text);
    }
    if (lt == std::string::npos) break;
    i = lt;
    if (s.compare(i, 5, "<?xml") == 0) {
      if (i != 0) return fail("XML declaration not at the start");
      size_t e = s.find("?>", i);
      if (e == std::string::npos) return fail("unterminated XML declaration");
      i = e + 2;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i);
      if (e == std::string::npos) return fail("unterminated comment");
      i = e + 3;
      continue;
    }
    if (s.compare(i, 9, "<![CDATA[") == 0) {
      if (stack.empty()) return fail("CDATA outside the root element");
      size_t e = s.find("]]>", i);
      if (e == std::string::npos) return fail("unterminated CDATA");
      doc.elements[stack.back()].text += s.substr(i + 9, e - i - 9);
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      size_t e = s.find('>', i);
      if (e == std::string::npos) return fail("unterminated end tag");
      std::string name = s.substr(i + 2, e - i - 2);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
      if (stack.empty() || doc.elements[stack.back()].name != name) return fail("mismatched end tag </" + name + ">");
      stack.pop_back();
      i = e + 1;
      continue;
    }
    // A start tag.
    ++i;
    if (i >= s.size() || !name_start(s[i])) return fail("bad tag name");
    size_t n0 = i;
    while (i < s.size() && name_char(s[i])) ++i;
    if (stack.empty() && seen_root) return fail("a second root element");
    seen_root = true;
    XmlElement el;
    el.name = s.substr(n0, i - n0);
    el.depth = stack.size();
    bool self_closing = false;
    if (std::string error = parse_attributes(s, i, el, self_closing); !error.empty()) return fail(error);
    doc.elements.push_back(std::move(el));
    if (!self_closing) stack.push_back(doc.elements.size() - 1);
  }
  if (!stack.empty()) return fail("unclosed element <" + doc.elements[stack.back()].name + ">");
  if (!seen_root) return fail("no root element");
  doc.ok = true;
  return doc;
}

std::vector<const XmlElement*> elements_named(const XmlDoc& doc, const std::string& name) {
  std::vector<const XmlElement*> out;
  for (const auto& e : doc.elements)
    if (e.name == name) out.push_back(&e);
  return out;
}

// For each <testsuite>: its <testcase> children and how many of them hold a <failure>.
struct JUnitSuiteCount {
  std::string name;
  std::map<std::string, std::string> attrs;
  size_t testcases = 0;
  size_t failures = 0;
  std::vector<std::string> failure_texts;
};

std::vector<JUnitSuiteCount> junit_suites(const XmlDoc& doc) {
  std::vector<JUnitSuiteCount> out;
  for (const auto& e : doc.elements) {
    if (e.name == "testsuite") out.push_back({e.attrs.count("name") ? e.attrs.at("name") : "", e.attrs, 0, 0, {}});
    else if (e.name == "testcase" && !out.empty()) ++out.back().testcases;
    else if (e.name == "failure" && !out.empty()) {
      ++out.back().failures;
      out.back().failure_texts.push_back((e.attrs.count("message") ? e.attrs.at("message") : "") + "\n" + e.text);
    }
  }
  return out;
}

// Checks that stdout is one JUnit document and nothing else, and that its counts agree with
// `tests` / `failures`.
void check_junit(const std::string& out, size_t tests, size_t failures, size_t suites) {
  INFO(out);
  REQUIRE(out.rfind("<?xml", 0) == 0);  // nothing before the document
  XmlDoc doc = parse_xml(out);
  INFO(doc.error);
  REQUIRE(doc.ok);
  REQUIRE(!doc.elements.empty());
  const XmlElement& root = doc.elements.front();
  CHECK(root.name == "testsuites");
  CHECK(elements_named(doc, "testcase").size() == tests);
  CHECK(elements_named(doc, "failure").size() == failures);
  CHECK(elements_named(doc, "testsuite").size() == suites);
  if (root.name == "testsuites") {
    CHECK(root.attrs.at("tests") == std::to_string(tests));
    CHECK(root.attrs.at("failures") == std::to_string(failures));
  }
  for (const auto& s : junit_suites(doc)) {
    INFO("testsuite " << s.name);
    CHECK(s.attrs.at("tests") == std::to_string(s.testcases));
    CHECK(s.attrs.at("failures") == std::to_string(s.failures));
  }
}

}  // namespace
