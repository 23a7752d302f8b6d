#include "webhook/cli/cli_args.h"

namespace gpu_admission::webhook {

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-" || arg.empty() || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.starts_with("--")) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const FlagSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name || (!s.alias.empty() && s.alias == name)) spec = &s;
    if (!spec) {
      out.error = "unknown flag " + name;
      return out;
    }
    if (!spec->takes_value) {
      if (inline_value) {
        out.error = spec->name + " takes no value";
        return out;
      }
      out.values[spec->name] = "true";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        out.error = spec->name + " needs a value";
        return out;
      }
      value = args[++i];
    }
    out.values[spec->name] = value;
  }
  return out;
}

std::optional<long long> parse_duration_ms(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    long long ms;
  };
  constexpr Unit kUnits[] = {{"ms", 1}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}};
  long long total = 0;
  if (text.empty()) return std::nullopt;
  while (!text.empty()) {
    long long number = 0;
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9' && digits < 9)
      number = number * 10 + (text[digits++] - '0');
    if (digits == 0) return std::nullopt;
    text.remove_prefix(digits);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits)
      if (text.substr(0, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    if (!unit) return std::nullopt;
    text.remove_prefix(unit->suffix.size());
    total += number * unit->ms;
    if (total > 366LL * 86'400'000) return std::nullopt;
  }
  return total > 0 ? std::optional<long long>(total) : std::nullopt;
}

}  // namespace gpu_admission::webhook
