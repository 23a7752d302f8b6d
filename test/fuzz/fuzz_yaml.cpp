// Fuzz target: the YAML/JSON reader and the YAML writer. Nothing may crash or grow without
// bound; what to_yaml writes must read back to the same JSON tree.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "webhook/io/yaml_json.h"

using namespace gpu_admission;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  webhook::YamlParse parsed = webhook::parse_yaml_or_json(text);
  if (parsed.error) return 0;
  for (const auto& doc : parsed.documents) {
    std::string yaml = webhook::to_yaml(doc.value);
    webhook::YamlParse again = webhook::parse_yaml_or_json(yaml);
    // Floats may print differently; compare only documents without them.
    if (webhook::to_json_text(doc.value).find_first_of(".eE") != std::string::npos) continue;
    if (again.error || again.documents.size() != 1 ||
        webhook::to_json_text(again.documents[0].value) != webhook::to_json_text(doc.value)) {
      std::fprintf(stderr, "YAML round trip changed the document:\n%s\n---\n%s\n", webhook::to_json_text(doc.value).c_str(),
                   yaml.c_str());
      std::abort();
    }
  }
  return 0;
}
