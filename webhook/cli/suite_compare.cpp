// Expectations against results (suite_compare.h): the decision's rule sets by label, message
// patterns, the pod template's labels, nodeSelector and limits, and JSON pointers into the
// mutated object (a pointer that does not resolve says what is there instead).
#include "webhook/cli/suite_compare.h"

#include <array>

#include "policy/base/ids.h"
#include "webhook/io/finding_label.h"

namespace gpu_admission::webhook {
namespace {

std::string set_text(const std::set<std::string>& s) {
  std::string out = "[";
  for (const auto& v : s) out += (out.size() > 1 ? ", " : "") + v;
  return out + "]";
}

// The rules that fired with each label, by name.
using FiredRules = std::array<std::set<std::string>, kFindingLabelCount>;

FiredRules fired_rules(const policy::Decision& d) {
  FiredRules out;
  for (const auto& f : d.findings) out[static_cast<size_t>(label_of(f))].insert(std::string(policy::name_of(f.rule)));
  return out;
}

// Which expectation checks which label's rule set.
struct RuleSetExpectation {
  const char* name;
  std::optional<std::set<std::string>> TestExpectation::*expected;
  FindingLabel label;
};
constexpr std::array<RuleSetExpectation, 4> kRuleSetExpectations = {{
    {"denied", &TestExpectation::denied, FindingLabel::Deny},
    {"warned", &TestExpectation::warned, FindingLabel::Warn},
    {"audited", &TestExpectation::audited, FindingLabel::Audit},
    {"excepted", &TestExpectation::excepted, FindingLabel::Excepted},
}};

void compare_messages(const TestExpectation& e, const policy::Decision& d, std::vector<std::string>& failures) {
  for (const auto& pattern : e.messages) {
    bool found = false;
    for (const auto& f : d.findings) found = found || std::regex_search(f.message, pattern.regex);
    if (!found)
      failures.push_back("messages: expected a finding whose message matches /" + pattern.text + "/, got " +
                         (d.findings.empty() ? "no findings" : "none that does (the findings are listed below)"));
  }
}

// Every expected key of a string map (labels, nodeSelector, limits) against the mutated object's.
void compare_map(const std::string& what, const std::map<std::string, std::string>& expected, const Json* actual,
                 std::vector<std::string>& failures) {
  for (const auto& [k, v] : expected) {
    bool present = actual && actual->is_object() && actual->contains(k);
    std::string got = present ? map_value(*actual, k) : "";
    if (!present) failures.push_back(what + "[" + k + "]: expected \"" + v + "\", got nothing");
    else if (got != v) failures.push_back(what + "[" + k + "]: expected \"" + v + "\", got \"" + got + "\"");
  }
}

const Json* pod_of(const Json& object) {
  const Json* cur = &object;
  std::string kind = map_value(object, "kind");
  std::vector<const char*> path;
  if (kind == "CronJob") path = {"spec", "jobTemplate", "spec", "template"};
  else if (kind != "Pod") path = {"spec", "template"};
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
  }
  return cur;
}

const Json* member(const Json* obj, const char* a, const char* b) {
  if (!obj || !obj->is_object() || !obj->contains(a) || !(*obj)[a].is_object() || !(*obj)[a].contains(b)) return nullptr;
  return &(*obj)[a][b];
}

// The pod's container (or init container) of that name; the last one when several share it.
const Json* container_named(const Json* pod, const std::string& name) {
  const Json* found = nullptr;
  for (const char* list : {"initContainers", "containers"}) {
    const Json* items = member(pod, "spec", list);
    if (!items || !items->is_array()) continue;
    for (const auto& c : *items)
      if (map_value(c, "name") == name) found = &c;
  }
  return found;
}

void compare_resources(const TestExpectation& e, const Json* pod, std::vector<std::string>& failures) {
  for (const auto& [container, limits] : *e.resources) {
    const Json* found = container_named(pod, container);
    if (!found) {
      failures.push_back("resources[" + container + "]: no container named \"" + container + "\"");
      continue;
    }
    compare_map("resources[" + container + "].limits", limits, member(found, "resources", "limits"), failures);
  }
}

// Compact JSON, cut to a readable length.
std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

// Scalars compare by their text ("1" and 1, as labels and limits do); objects and lists as JSON
// values, whatever the order of their keys.
bool same_value(const Json& expected, const Json& got) {
  if (expected.is_primitive() && got.is_primitive()) {
    auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    return !expected.is_null() ? !got.is_null() && text(expected) == text(got) : got.is_null();
  }
  return nlohmann::json::parse(expected.dump()) == nlohmann::json::parse(got.dump());
}

std::string unescape_token(std::string token) {
  for (size_t at = token.find('~'); at != std::string::npos; at = token.find('~', at + 1))
    token.replace(at, 2, token[at + 1] == '1' ? "/" : "~");
  return token;
}

// Follows `pointer` (already checked to be a valid JSON pointer) into `root`; on the way, `at`
// is the deepest part that resolved.
const Json* resolve(const Json& root, const std::string& pointer, std::string& at) {
  const Json* cur = &root;
  size_t pos = 0;
  while (pos < pointer.size()) {
    size_t next = pointer.find('/', pos + 1);
    const std::string raw = pointer.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    const std::string token = unescape_token(raw);
    if (cur->is_object() && cur->contains(token)) {
      cur = &(*cur)[token];
    } else if (cur->is_array() && !token.empty() && token.size() < 10 &&
               token.find_first_not_of("0123456789") == std::string::npos && (token == "0" || token[0] != '0') &&
               std::stoul(token) < cur->size()) {
      cur = &(*cur)[std::stoul(token)];
    } else {
      return nullptr;
    }
    at += "/" + raw;
    pos = next == std::string::npos ? pointer.size() : next;
  }
  return cur;
}

void compare_patched(const TestExpectation& e, const Json& mutated, std::vector<std::string>& failures) {
  for (const auto& [pointer, expected] : e.patched) {
    std::string at;
    const Json* got = resolve(mutated, pointer, at);
    const std::string what = "patched[" + pointer + "]: expected " + shown(expected) + ", got ";
    if (!got) {
      std::string ignored;
      const Json* parent = resolve(mutated, at, ignored);  // `at` resolved
      const std::string list = parent->is_array() ? "a list of " + std::to_string(parent->size()) + ": " : "";
      failures.push_back(what + "nothing: " + (at.empty() ? "the object" : at) + " holds " + list + shown(*parent));
    } else if (!same_value(expected, *got)) {
      failures.push_back(what + shown(*got));
    }
  }
}

}  // namespace

std::string map_value(const Json& obj, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key)) return {};
  const Json& v = obj[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void compare_decision(const TestExpectation& e, const policy::Decision& d, std::vector<std::string>& failures) {
  const FiredRules fired = fired_rules(d);
  const auto& denied = fired[static_cast<size_t>(FindingLabel::Deny)];
  if (e.allowed && *e.allowed != d.allowed) {
    std::string got = d.allowed ? "allowed" : "denied by " + set_text(denied);
    failures.push_back(std::string("allowed: expected ") + (*e.allowed ? "true" : "false") + ", got " +
                       (d.allowed ? "true" : "false") + " (" + got + ")");
  }
  for (const auto& row : kRuleSetExpectations) {
    const auto& expected = e.*row.expected;
    const auto& got = fired[static_cast<size_t>(row.label)];
    if (expected && *expected != got)
      failures.push_back(std::string(row.name) + ": expected " + set_text(*expected) + ", got " + set_text(got));
  }
  compare_messages(e, d, failures);
}

void compare_mutated(const TestExpectation& e, const Json& mutated, std::vector<std::string>& failures) {
  const Json* pod = pod_of(mutated);
  if (e.labels) compare_map("labels", *e.labels, member(pod, "metadata", "labels"), failures);
  if (e.node_selector) compare_map("nodeSelector", *e.node_selector, member(pod, "spec", "nodeSelector"), failures);
  if (e.resources) compare_resources(e, pod, failures);
  compare_patched(e, mutated, failures);
}

std::vector<CaseFinding> case_findings(const policy::Decision& d) {
  std::vector<CaseFinding> out;
  for (const auto& f : d.findings)
    out.push_back({std::string(name_of(label_of(f))), std::string(policy::name_of(f.rule)), f.message, f.field});
  return out;
}

}  // namespace gpu_admission::webhook
