// spec.rules and tenants[].rules, and the times of spec.exceptions; see rollout_fields.h.
#include "policy/config/rollout_fields.h"

#include <cctype>

#include "policy/base/source.h"

namespace gpu_admission::policy {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool digits(std::string_view text, size_t at, size_t n, int& out) {
  if (at + n > text.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(int y, int m) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

}  // namespace

void read_rule_actions(FieldReader& r, const Json& v, const std::string& path,
                       std::vector<std::pair<RuleId, Action>>& out) {
  out.clear();
  if (v.is_null() || !r.expect_object(v, path)) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string rp = child_path(path, it.key());
    auto id = enum_from_name<RuleId>(kRuleNames, it.key());
    if (!id) {
      r.error(rp, "unknown rule \"" + it.key() + "\" (expected one of: " + names_list(kRuleNames) + ")");
      continue;
    }
    Action action = Action::Deny;
    if (r.read_enum(it.value(), rp, kActionNames, action)) out.emplace_back(*id, action);
  }
}

std::optional<int64_t> parse_rfc3339(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int year, month, day, hour, minute, second;
  if (t.size() < 20 || !digits(t, 0, 4, year) || t[4] != '-' || !digits(t, 5, 2, month) || t[7] != '-' ||
      !digits(t, 8, 2, day) || (t[10] != 'T' && t[10] != 't') || !digits(t, 11, 2, hour) || t[13] != ':' ||
      !digits(t, 14, 2, minute) || t[16] != ':' || !digits(t, 17, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 59)
    return std::nullopt;
  size_t at = 19;
  if (at < t.size() && t[at] == '.') {
    const size_t start = ++at;
    while (at < t.size() && std::isdigit(static_cast<unsigned char>(t[at]))) ++at;
    if (at == start) return std::nullopt;
  }
  int offset = 0;
  if (at + 1 == t.size() && (t[at] == 'Z' || t[at] == 'z')) {
    at += 1;
  } else if (at + 6 == t.size() && (t[at] == '+' || t[at] == '-') && t[at + 3] == ':') {
    int oh, om;
    if (!digits(t, at + 1, 2, oh) || !digits(t, at + 4, 2, om) || oh > 23 || om > 59) return std::nullopt;
    offset = (oh * 60 + om) * 60 * (t[at] == '-' ? -1 : 1);
    at += 6;
  }
  if (at != t.size()) return std::nullopt;
  return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + hour * 3600 +
         minute * 60 + second - offset;
}

Json rule_actions_to_json(const std::vector<std::pair<RuleId, Action>>& actions) {
  Json out = Json::object();
  for (const auto& [rule, action] : actions) out[std::string(name_of(rule))] = std::string(name_of(action));
  return out;
}

}  // namespace gpu_admission::policy
