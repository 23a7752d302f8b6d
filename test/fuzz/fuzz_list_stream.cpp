// Fuzz target: the streaming decoders of `audit FILE` (webhook/io/json_list_stream.h,
// yaml_documents.h), fed in chunks whose size the input's first byte chooses. Nothing may crash
// or grow without bound, and:
// - JSON: when the whole text parses as an object whose "items" is an array (keys unique, as
//   nlohmann reads it), the scanner streams it, and its items, parsed one by one, are that array;
//   whatever it streams, a value it hands out parses on its own exactly when it is JSON.
// - YAML: the documents, List entries and List heads it hands out hold no more bytes than the
//   input (plus the `items: []` of each head), at lines that never go backwards.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "webhook/io/json_list_stream.h"
#include "webhook/io/yaml_documents.h"

using namespace gpu_admission;

namespace {

constexpr size_t kMaxValue = 1u << 20;

[[noreturn]] void fail(const char* what, std::string_view text) {
  std::fprintf(stderr, "%s\n%.*s\n", what, static_cast<int>(std::min<size_t>(text.size(), 2000)), text.data());
  std::abort();
}

struct Collect : webhook::JsonListScanner::Sink {
  std::vector<std::string> items;
  bool item(uint64_t, std::string_view text, std::string&) override {
    items.emplace_back(text);
    return items.size() < 100'000;
  }
  bool member(std::string_view, std::string_view, std::string&) override { return true; }
};

void check_json(std::string_view text, size_t chunk) {
  Collect sink;
  webhook::JsonListScanner scanner(sink, 64, kMaxValue);
  for (size_t at = 0; at < text.size() && scanner.ok(); at += chunk) scanner.feed(text.substr(at, chunk));
  const bool streamed = scanner.ok() && scanner.finish() && scanner.saw_items_array();
  const Json whole = Json::parse(text, nullptr, false);
  if (whole.is_discarded() || !whole.is_object() || !whole.contains("items") || !whole["items"].is_array()) return;
  // A repeated key: nlohmann keeps one of them, the scanner refuses or keeps both; not compared.
  if (text.find("\"items\"") != text.rfind("\"items\"")) return;
  if (text.find("\\") != std::string_view::npos) return;  // escaped keys: "items" spelt otherwise
  // nlohmann ends its input at a NUL byte and ignores what follows; the scanner reads every byte
  // and refuses more after the object (as the API server would): not comparable.
  if (text.find('\0') != std::string_view::npos) return;
  if (!streamed) {
    // Only depth may stop a text nlohmann reads (its bound is higher).
    if (scanner.problem().find("nesting deeper") == std::string::npos && scanner.problem().find("larger than") == std::string::npos)
      fail(("a List nlohmann reads was not streamed: " + scanner.problem()).c_str(), text);
    return;
  }
  const Json& items = whole["items"];
  if (sink.items.size() != items.size()) fail("the streamed items are not the List's", text);
  for (size_t i = 0; i < items.size(); ++i) {
    const Json item = Json::parse(sink.items[i], nullptr, false);
    if (item.is_discarded() || item != items[i]) fail("an item streamed differs from the List's", text);
  }
}

void check_yaml(std::string_view text, size_t chunk) {
  size_t bytes = 0, heads = 0;
  int last_line = 0;
  const auto at_line = [&](int line, std::string_view what) {
    if (line < last_line || line < 1) fail("a line went backwards", what);
    last_line = line;
  };
  webhook::YamlListHandlers list;
  list.item = [&](std::string_view item, int line) {
    at_line(line, item);
    bytes += item.size();
    return true;
  };
  list.list_end = [&](std::string_view head, int first_line, int items_line, int sequence_lines) {
    if (first_line > items_line || sequence_lines < 1) fail("a List head's lines are wrong", head);
    bytes += head.size();
    ++heads;
    last_line = std::max(last_line, first_line);
    return true;
  };
  webhook::YamlDocumentSplitter splitter(
      [&](std::string_view doc, int line) {
        at_line(line, doc);
        bytes += doc.size();
        return true;
      },
      kMaxValue, list);
  bool ok = true;
  for (size_t at = 0; at < text.size() && ok; at += chunk) ok = splitter.feed(text.substr(at, chunk));
  if (ok) splitter.finish();
  if (bytes > text.size() + heads * 10) fail("more bytes handed out than read", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 17;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  check_json(text, chunk);
  check_yaml(text, chunk);
  return 0;
}
