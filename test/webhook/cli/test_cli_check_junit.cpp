// End-to-end tests of `gpu-admission check -o junit`: the document read back with a small XML
// well-formedness check, one testcase per object and a failure per denial.
#include <catch2/catch.hpp>

#include "webhook/cli/check_test_support.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace {

// ------------------------------------------------------------------ a small XML well-formedness check

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
};

bool valid_char_data(std::string_view t) {
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '<') return false;
    if (t[k] != '&') continue;
    size_t semi = t.find(';', k);
    if (semi == std::string_view::npos) return false;
    std::string_view ent = t.substr(k + 1, semi - k - 1);
    if (!(ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" ||
          (ent.size() > 1 && ent[0] == '#')))
      return false;
    k = semi;
  }
  return true;
}

bool xml_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
}

// Reads the attributes of a start tag from `i` to just past its end (`>`, or `/>` when
// `self_closing`), checking quoting and escaping; false with `why` set, `i` where it went wrong.
bool read_attributes(const std::string& s, size_t& i, XmlElement& el, bool& self_closing, std::string& why) {
  auto fail = [&](const char* m) {
    why = m;
    return false;
  };
  for (;;) {
    size_t ws = i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) return fail("unterminated start tag");
    if (s[i] == '>') {
      ++i;
      return true;
    }
    if (s.compare(i, 2, "/>") == 0) {
      i += 2;
      self_closing = true;
      return true;
    }
    if (ws == i) return fail("attributes must be separated by whitespace");
    size_t a0 = i;
    while (i < s.size() && xml_name_char(s[i])) ++i;
    if (i == a0 || i >= s.size() || s[i] != '=') return fail("bad attribute");
    std::string attr = s.substr(a0, i - a0);
    ++i;
    if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return fail("unquoted attribute value");
    char q = s[i++];
    size_t e = s.find(q, i);
    if (e == std::string::npos) return fail("unterminated attribute value");
    std::string value = s.substr(i, e - i);
    if (!valid_char_data(value) || el.attrs.count(attr)) return fail("bad attribute value");
    el.attrs[attr] = value;
    i = e + 1;
  }
}

// Checks tag balance, quoting and escaping; returns the elements in document order, or an error.
bool parse_xml(const std::string& s, std::vector<XmlElement>& elements, std::string& error) {
  std::vector<std::string> stack;
  bool seen_root = false;
  size_t i = 0;
  auto fail = [&](const std::string& m) {
    error = m + " at offset " + std::to_string(i);
    return false;
  };
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    std::string_view text(s.data() + i, (lt == std::string::npos ? s.size() : lt) - i);
    if (stack.empty() ? text.find_first_not_of(" \t\r\n") != std::string_view::npos : !valid_char_data(text))
      return fail("bad text");
    if (lt == std::string::npos) break;
    i = lt;
    if (s.compare(i, 5, "<?xml") == 0) {
      if (i != 0) return fail("XML declaration not at the start");
      size_t e = s.find("?>", i);
      if (e == std::string::npos) return fail("unterminated declaration");
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
      size_t e = s.find("]]>", i);
      if (stack.empty() || e == std::string::npos) return fail("bad CDATA");
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "</") == 0) {
      size_t e = s.find('>', i);
      if (e == std::string::npos) return fail("unterminated end tag");
      if (stack.empty() || stack.back() != s.substr(i + 2, e - i - 2)) return fail("mismatched end tag");
      stack.pop_back();
      i = e + 1;
      continue;
    }
    ++i;
    size_t n0 = i;
    while (i < s.size() && xml_name_char(s[i])) ++i;
    if (i == n0) return fail("bad tag name");
    if (stack.empty() && seen_root) return fail("a second root element");
    seen_root = true;
    XmlElement el{s.substr(n0, i - n0), {}};
    bool self_closing = false;
    if (std::string why; !read_attributes(s, i, el, self_closing, why)) return fail(why);
    if (!self_closing) stack.push_back(el.name);
    elements.push_back(std::move(el));
  }
  if (!stack.empty()) return fail("unclosed element <" + stack.back() + ">");
  if (!seen_root) return fail("no root element");
  return true;
}

size_t count_named(const std::vector<XmlElement>& els, const std::string& name) {
  return static_cast<size_t>(std::count_if(els.begin(), els.end(), [&](const XmlElement& e) { return e.name == name; }));
}

}  // namespace

TEST_CASE("check: -o junit, one testcase per object, failures for denials", "[cli][check]") {
  const auto files = example_files();
  std::vector<std::string> args = {"check", "--policy", kPolicy, "-o", "junit"};
  args.insert(args.end(), files.begin(), files.end());
  args.push_back(kData + "/multi.yaml");  // two objects and a skipped Service
  CliRun r = run_cli(args);
  INFO(describe(r));
  CHECK(r.code == 1);
  REQUIRE(r.out.rfind("<?xml", 0) == 0);
  std::vector<XmlElement> els;
  std::string error;
  INFO(error);
  REQUIRE(parse_xml(r.out, els, error));
  REQUIRE(!els.empty());
  CHECK(els.front().name == "testsuites");

  std::vector<std::string> jfiles = files;
  jfiles.push_back(kData + "/multi.yaml");
  json doc = check_json(jfiles, 1);
  size_t denied = 0;
  for (const auto& res : doc["results"]) denied += !res["allowed"].get<bool>();
  CHECK(denied == 9);  // 8 examples and the privileged pod of multi.yaml
  const size_t evaluated = doc["results"].size();
  const size_t cases = count_named(els, "testcase");
  // One testcase per evaluated object; a skipped object may be listed as a skipped testcase.
  CHECK((cases == evaluated || cases == evaluated + 1));
  CHECK(count_named(els, "failure") == denied);
  CHECK(els.front().attrs.at("tests") == std::to_string(cases));
  CHECK(els.front().attrs.at("failures") == std::to_string(denied));
  for (const auto& e : els)
    if (e.name == "testsuite") CHECK(e.attrs.at("failures") == std::to_string(denied));
  // Failures name the rules.
  CHECK(r.out.find("mps-adversarial") != std::string::npos);
  CHECK(r.out.find("tenant-pool") != std::string::npos);
}
