#include "policy/decoding/json_reader.h"

#include <algorithm>

#include "policy/base/quoted_value.h"

namespace gpu_admission::policy {

DecodeError invalid_json(std::string_view what, std::string field) {
  return DecodeError{std::move(field), "invalid JSON: " + std::string(what), true};
}

DecodeError invalid_json(simdjson::error_code code, std::string field) {
  return invalid_json(simdjson::error_message(code), std::move(field));
}

namespace json {

std::optional<std::string_view> first_repeated(std::span<std::string_view> names) {
  std::sort(names.begin(), names.end());
  const auto repeated = std::adjacent_find(names.begin(), names.end());
  if (repeated == names.end()) return std::nullopt;
  return *repeated;
}

bool Reader::fail(const Loc& at, std::string_view message) {
  if (!error) {
    std::string field;
    at.render(field);
    error = DecodeError{std::move(field), std::string(message)};
  }
  return false;
}

bool Reader::fail_invalid(const Loc& at, std::string_view what) {
  if (!error) {
    std::string field;
    at.render(field);
    error = invalid_json(what, std::move(field));
  }
  return false;
}

bool Reader::fail(const Loc& at, simdjson::error_code code) { return fail_invalid(at, simdjson::error_message(code)); }

bool Reader::duplicate(const Loc& at, std::string_view key) {
  return fail(at, "duplicate key " + quoted(key) + " (ambiguous JSON is refused)");
}

bool Reader::string_map(od::value& v, StringViewPairs& out, const Loc& at, bool (*decode_value)(std::string_view)) {
  const size_t first = out.size();
  const bool read = map_fields(v, at, [&](std::string_view key, od::value& value, const Loc& value_at) {
    std::string_view text;
    const bool decode = !decode_value || decode_value(key);
    if (!(decode ? as_string(value, text, value_at) : undecoded_string(value, text, value_at))) return false;
    out.emplace_back(key, text);
    return true;
  });
  if (!read) return false;
  return unique_keys(out.data() + first, out.size() - first, [](const auto& pair) { return pair.first; }, at);
}

simdjson::simdjson_result<od::document> iterate(od::parser& parser, std::string_view json, bool padded,
                                                std::string& copy) {
  if (padded) return parser.iterate(json.data(), json.size(), json.size() + simdjson::SIMDJSON_PADDING);
  copy.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  copy.assign(json);
  return parser.iterate(copy.data(), copy.size(), copy.capacity());
}

}  // namespace json
}  // namespace gpu_admission::policy
