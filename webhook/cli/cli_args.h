// Minimal flag parsing shared by the subcommands: `--flag value`, `--flag=value`, short aliases,
// boolean switches and positional arguments. Unknown flags are errors naming the flag.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::webhook {

struct FlagSpec {
  std::string name;        // "--output"
  std::string alias;       // "-o" (optional)
  bool takes_value = true;
};

struct ParsedArgs {
  std::map<std::string, std::string> values;  // by long name
  std::vector<std::string> positional;
  std::optional<std::string> error;

  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
};

// "90s", "10m", "1h30m", "500ms" -> milliseconds; nullopt when malformed or not positive.
std::optional<long long> parse_duration_ms(std::string_view text);

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs);

}  // namespace gpu_admission::webhook
