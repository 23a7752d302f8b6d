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

}  // namespace gpu_admission::webhook
