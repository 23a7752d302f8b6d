// Reading a JSON List as a stream of items (json_list_stream.h) and a YAML stream as documents
// (yaml_documents.h): the same items and documents whatever the chunk size, strings that hold
// brackets, quotes and escapes, scalars among the items, a byte order mark, and the texts that
// cannot be streamed (said, so that the caller reads them whole).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "webhook/io/json_list_stream.h"
#include "webhook/io/yaml_documents.h"

using namespace gpu_admission::webhook;

namespace {

struct Collected : JsonListScanner::Sink {
  std::vector<std::pair<uint64_t, std::string>> items;
  std::vector<std::pair<std::string, std::string>> members;
  bool item(uint64_t offset, std::string_view text, std::string&) override {
    items.emplace_back(offset, std::string(text));
    return true;
  }
  bool member(std::string_view key, std::string_view value, std::string&) override {
    members.emplace_back(std::string(key), std::string(value));
    return true;
  }
};

struct Scan {
  Collected got;
  bool ok = false;
  std::string problem;
  bool items_array = false;
};

// The text fed `chunk` bytes at a time.
Scan scan(const std::string& text, size_t chunk, int max_depth = 100) {
  Scan s;
  JsonListScanner scanner(s.got, max_depth, 1u << 20);
  for (size_t at = 0; at < text.size(); at += chunk) scanner.feed(std::string_view(text).substr(at, chunk));
  s.ok = scanner.finish();
  s.problem = scanner.problem();
  s.items_array = scanner.saw_items_array();
  return s;
}

}  // namespace

TEST_CASE("json list stream: items and members come out whole at every chunk size", "[io][audit]") {
  const std::string text =
      "\xEF\xBB\xBF {\"apiVersion\": \"v1\", \"items\": [ {\"a\": \"}]\\\"{[\", \"b\": [1, {\"c\": null}]},\n"
      "  \"just a string, with ] and }\", 42, -1.5e3 , true,null,[[]], {}\n ],\r\n\t\"kind\": \"List\","
      " \"metadata\": {\"resourceVersion\": \"7\"} }\n\n";
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, text.size()}) {
    INFO("chunk " << chunk);
    const Scan s = scan(text, chunk);
    REQUIRE(s.ok);
    CHECK(s.items_array);
    const std::vector<std::string> want = {R"({"a": "}]\"{[", "b": [1, {"c": null}]})",
                                           R"("just a string, with ] and }")", "42", "-1.5e3", "true", "null", "[[]]", "{}"};
    REQUIRE(s.got.items.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(s.got.items[i].second == want[i]);
      // The offset is where the item's bytes lie in the text.
      CHECK(text.substr(s.got.items[i].first, want[i].size()) == want[i]);
    }
    REQUIRE(s.got.members.size() == 3);
    CHECK(s.got.members[0] == std::pair<std::string, std::string>{"\"apiVersion\"", "\"v1\""});
    CHECK(s.got.members[1] == std::pair<std::string, std::string>{"\"kind\"", "\"List\""});
    CHECK(s.got.members[2].second == R"({"resourceVersion": "7"})");
  }
}

TEST_CASE("json list stream: keys with escapes, an empty items array, an empty object", "[io][audit]") {
  Scan s = scan(R"({"k\"ey": 1, "items": [], "kind": "PodList"})", 1);
  REQUIRE(s.ok);
  CHECK(s.items_array);
  CHECK(s.got.items.empty());
  REQUIRE(s.got.members.size() == 2);
  CHECK(s.got.members[0].first == R"("k\"ey")");
  s = scan("{}", 1);
  CHECK(s.ok);
  CHECK(!s.items_array);
  // "items" that is not an array is an ordinary member (the caller reads such a text whole).
  s = scan(R"({"items": {"a": 1}})", 4);
  CHECK(s.ok);
  CHECK(!s.items_array);
  REQUIRE(s.got.members.size() == 1);
  CHECK(s.got.members[0].second == R"({"a": 1})");
}

TEST_CASE("json list stream: texts it cannot stream say why", "[io][audit]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([{"kind": "Pod"}])", "not a JSON object"},
      {R"({"items": [1, 2] "kind": "List"})", "no comma between members"},
      {R"({"items": [1 2]})", "no comma between items"},
      {R"({"items": [1,]})", ""},  // the empty value after the comma: the parser refuses "]"
      {R"({items: []})", "a key that is not a string"},
      {R"({"items" []})", "no colon after a key"},
      {R"({"items": [], "items": []})", "two \"items\" members"},
      {R"({"items": []} {"items": []})", "more after the object"},
      {R"({"items": [{"a": 1})", "the text ends inside its object"},
      {"\xEF\xBB{}", "not JSON"},
  };
  for (const auto& [text, says] : cases) {
    for (size_t chunk : {size_t{1}, text.size()}) {
      INFO(text << " in chunks of " << chunk);
      const Scan s = scan(text, chunk);
      if (says.empty()) {
        // Handed out for the caller's parser to refuse.
        bool odd = false;
        for (const auto& item : s.got.items) odd = odd || item.second == "]" || item.second.empty();
        CHECK((odd || !s.ok));
        continue;
      }
      CHECK(!s.ok);
      CHECK(s.problem == says);
    }
  }
}

TEST_CASE("json list stream: depth is counted from the document's top, as the whole-text parse counts it",
          "[io][audit]") {
  // The List is level 1, items level 2, an item's object level 3.
  const auto nested = [](int levels) {
    return R"({"items": [)" + std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']') +
           R"(], "kind": "List"})";
  };
  CHECK(scan(nested(8), 3, 10).ok);
  const Scan deep = scan(nested(9), 3, 10);
  CHECK(!deep.ok);
  CHECK(deep.problem == "nesting deeper than 10 levels");
  // A member's value counts from level 1.
  CHECK(scan(R"({"metadata": [[[[[[[[[]]]]]]]]], "items": []})", 5, 10).ok);
  CHECK(!scan(R"({"metadata": [[[[[[[[[[]]]]]]]]]], "items": []})", 5, 10).ok);
}

TEST_CASE("json value splitter: reads back runs of items in any chunks", "[io][audit]") {
  const std::string run = R"({"a": "x,}"} ,
   [1, 2],"s\"]" , 7,{"b": {}})";
  for (size_t chunk : {size_t{1}, size_t{5}, run.size()}) {
    JsonValueSplitter splitter;
    std::vector<std::string> got;
    const auto take = [&](std::string_view value) { got.emplace_back(value); };
    for (size_t at = 0; at < run.size(); at += chunk) splitter.feed(std::string_view(run).substr(at, chunk), take);
    splitter.finish(take);
    CHECK(got == std::vector<std::string>{R"({"a": "x,}"})", "[1, 2]", R"("s\"]")", "7", R"({"b": {}})"});
  }
}

TEST_CASE("yaml documents: split at --- and after ..., with the lines they start at", "[io][audit]") {
  const std::string text =
      "# a comment before anything\n"
      "%YAML 1.2\n"
      "---\n"
      "a: 1\n"
      "text: |\n"
      "  --- not a marker: indented\n"
      "  ...\n"
      "---   # a new document\n"
      "b: 2\n"
      "...\n"
      "# trailing comment\n"
      "--- {c: 3}\r\n"
      "---\n"
      "----\n"
      "d: 4";
  for (size_t chunk : {size_t{1}, size_t{4}, text.size()}) {
    INFO("chunk " << chunk);
    std::vector<std::pair<std::string, int>> docs;
    YamlDocumentSplitter splitter(
        [&](std::string_view doc, int line) {
          docs.emplace_back(std::string(doc), line);
          return true;
        },
        1u << 20);
    for (size_t at = 0; at < text.size(); at += chunk) REQUIRE(splitter.feed(std::string_view(text).substr(at, chunk)));
    REQUIRE(splitter.finish());
    REQUIRE(docs.size() == 4);
    CHECK(docs[0].second == 1);
    CHECK(docs[0].first == "# a comment before anything\n%YAML 1.2\n---\na: 1\ntext: |\n  --- not a marker: indented\n  ...\n");
    CHECK(docs[1] == std::pair<std::string, int>{"---   # a new document\nb: 2\n...\n", 8});
    CHECK(docs[2] == std::pair<std::string, int>{"# trailing comment\n--- {c: 3}\r\n", 11});
    CHECK(docs[3] == std::pair<std::string, int>{"---\n----\nd: 4", 13});  // "----" is no marker
  }
}

TEST_CASE("yaml documents: a document past the bound stops the split", "[io][audit]") {
  YamlDocumentSplitter splitter([](std::string_view, int) { return true; }, 16);
  CHECK(splitter.feed("a: 1\n"));
  CHECK(!splitter.feed("b: 12345678901234\n"));
  CHECK(splitter.problem().find("a document larger than") == 0);
  // A stop asked for by the caller.
  int calls = 0;
  YamlDocumentSplitter stopping([&](std::string_view, int) { return ++calls < 1; }, 1024);
  CHECK(!stopping.feed("a: 1\n---\nb: 2\n---\nc: 3\n"));
  CHECK(calls == 1);
}

TEST_CASE("yaml documents: a List is split into its entries, each at its lines and columns", "[io][audit]") {
  const std::string text =
      "apiVersion: v1\n"
      "items:   # the pods\n"
      "- kind: Pod\n"
      "  metadata: {name: a}\n"
      "\n"
      "-\n"
      "  kind: Pod\n"
      "- text: |\n"
      "    - not an entry\n"
      "kind: List\n"
      "---\n"
      "kind: List\n"
      "note: \"two\n"
      "  lines\"\n"
      "items:\n"
      "- x\n";
  for (size_t chunk : {size_t{1}, size_t{5}, text.size()}) {
    INFO("chunk " << chunk);
    std::vector<std::pair<std::string, int>> docs, items;
    std::vector<std::string> heads;
    YamlListHandlers list;
    list.item = [&](std::string_view item, int line) {
      items.emplace_back(std::string(item), line);
      return true;
    };
    list.list_end = [&](std::string_view head, int first_line, int items_line, int sequence_lines) {
      heads.push_back(std::string(head) + "@" + std::to_string(first_line) + "," + std::to_string(items_line) + "," +
                      std::to_string(sequence_lines));
      return true;
    };
    YamlDocumentSplitter splitter(
        [&](std::string_view doc, int line) {
          docs.emplace_back(std::string(doc), line);
          return true;
        },
        1u << 20, list);
    for (size_t at = 0; at < text.size(); at += chunk) REQUIRE(splitter.feed(std::string_view(text).substr(at, chunk)));
    REQUIRE(splitter.finish());
    REQUIRE(items.size() == 3);
    CHECK(items[0] == std::pair<std::string, int>{"  kind: Pod\n  metadata: {name: a}\n\n", 3});
    CHECK(items[1] == std::pair<std::string, int>{" \n  kind: Pod\n", 6});
    CHECK(items[2] == std::pair<std::string, int>{"  text: |\n    - not an entry\n", 8});
    CHECK(heads == std::vector<std::string>{"apiVersion: v1\nitems: []\nkind: List\n@1,2,8"});
    // A quoted scalar over two lines before `items:`: the document is handed out whole.
    REQUIRE(docs.size() == 1);
    CHECK(docs[0] == std::pair<std::string, int>{"---\nkind: List\nnote: \"two\n  lines\"\nitems:\n- x\n", 11});
  }
}
