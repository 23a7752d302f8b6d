// YAML -> JSON for tests, independently of the product's own reader (yaml-cpp's tree, YAML 1.2
// core schema scalars): to read back what the CLI prints as YAML.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

namespace cli_test {

inline nlohmann::json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted: always a string
      if (s == "null" || s == "~" || s.empty()) return nullptr;
      if (s == "true" || s == "false") return s == "true";
      static const std::regex kInt(R"([-+]?[0-9]+)");
      static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
      if (std::regex_match(s, kInt)) return std::stoll(s);
      if (std::regex_match(s, kFloat)) return std::stod(s);
      return s;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : n) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : n) out[kv.first.Scalar()] = yaml_to_json(kv.second);
      return out;
    }
  }
  return nullptr;
}

inline std::vector<nlohmann::json> load_yaml_docs(const std::string& text) {
  std::vector<nlohmann::json> out;
  for (const auto& doc : YAML::LoadAll(text))
    if (!doc.IsNull()) out.push_back(yaml_to_json(doc));
  return out;
}

}  // namespace cli_test
