// The wire formats of list and watch, decoded with simdjson: a list page
// ({"metadata":{"resourceVersion","continue"},"items":[...]}), a watch event line
// ({"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}, one JSON object per line of
// a chunked response), and the splitting of a byte stream into bounded lines. Nothing here does
// I/O; the fuzz target fuzz_watch_event drives it with arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace gpu_admission::webhook::cluster {

// A watch line may be this long at most (a longer one is an error, followed by a fresh list).
// The API server stores objects of at most about 1.5 MiB (etcd's request limit; a request body
// may be 3 MiB), so an event is ten times smaller than this.
inline constexpr size_t kMaxWatchLineBytes = 16u << 20;

// The deepest object the API server stores: its JSON decoding refuses documents nested deeper
// than 10,000 levels. Anything it stores, and so anything a watch or a list sends, must be read.
inline constexpr size_t kMaxStoredObjectDepth = 10'000;
// The depth the parsers of list pages, watch events and single objects allow: such an object
// inside its envelope (a list page's object and items array, a watch event's object), with
// room to spare. Reading an object never recurses per level (simdjson's DOM is built and walked
// with loops), so the depth costs only the parser's per-level stacks (about 9 bytes a level).
inline constexpr size_t kMaxDocumentDepth = kMaxStoredObjectDepth + 64;

// Gives `parser` kMaxDocumentDepth (simdjson's default is 1,024); a parser keeps its depth when
// it grows for a larger document. decode_watch_event and decode_list_page call it; call it on
// any other parser that reads objects of the API server. SUCCESS or MEMALLOC.
simdjson::error_code allow_stored_depth(simdjson::dom::parser& parser);

enum class EventType : uint8_t { Added, Modified, Deleted, Bookmark, Error };

struct ObjectMeta {
  std::string_view name;
  std::string_view namespace_name;
  std::string_view resource_version;
};

struct WatchEvent {
  EventType type = EventType::Added;
  simdjson::dom::element object;     // valid until the parser parses again
  ObjectMeta meta;                   // of the object (Added, Modified, Deleted, Bookmark)
  int64_t error_code = 0;            // Error: object.code (410: the resourceVersion expired)
  std::string_view error_message;    // Error: object.message
  // Added, Modified, Deleted: why the object cannot be used ("" when it can): it is not a JSON
  // object, or has no metadata.name. Such an event is skipped (and counted), the watch goes on;
  // `object` is then not to be read.
  std::string_view problem;
};

// Decodes one watch line into `out`. Returns an error message (nullopt on success) when the
// line is not a watch event (not JSON, no known type, an ERROR or BOOKMARK event without its
// object or resourceVersion); an event whose object alone is unusable decodes, with `problem`.
std::optional<std::string> decode_watch_event(simdjson::dom::parser& parser, std::string_view line, WatchEvent& out);

struct ListPage {
  simdjson::dom::array items;        // valid until the parser parses again
  std::string_view resource_version; // metadata.resourceVersion
  std::string_view continue_token;   // metadata.continue ("" on the last page)
};

// Decodes a list response body. Returns an error message (nullopt on success).
std::optional<std::string> decode_list_page(simdjson::dom::parser& parser, std::string_view body, ListPage& out);

// metadata.name, .namespace and .resourceVersion of an object; false when it is not an object
// or has no name.
bool read_object_meta(simdjson::dom::element object, ObjectMeta& out);

// Why read_object_meta failed on `object`: "not a JSON object", "no metadata" or
// "no metadata.name" ("" when it would not).
std::string_view object_meta_problem(simdjson::dom::element object);

// Splits a byte stream into lines ('\n'-terminated; a trailing '\r' is dropped, empty lines are
// skipped). A line longer than `max_line` makes feed() return false; the splitter must then be
// reset (the stream is abandoned).
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = kMaxWatchLineBytes) : max_line_(max_line) {}

  template <typename OnLine>
  bool feed(const char* data, size_t size, OnLine&& on_line) {
    std::string_view rest(data, size);
    while (!rest.empty()) {
      const size_t newline = rest.find('\n');
      const std::string_view piece = rest.substr(0, newline);
      if (pending_.size() + piece.size() > max_line_) return false;
      if (newline == std::string_view::npos) {
        pending_.append(piece);
        return true;
      }
      rest.remove_prefix(newline + 1);
      std::string_view line = piece;
      if (!pending_.empty()) {
        pending_.append(piece);
        line = pending_;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const bool go_on = line.empty() || on_line(line);
      pending_.clear();
      if (!go_on) return true;
    }
    return true;
  }
  // Bytes of an unfinished line.
  size_t pending() const { return pending_.size(); }
  void reset() {
    pending_.clear();
    pending_.shrink_to_fit();
  }

 private:
  size_t max_line_;
  std::string pending_;
};

}  // namespace gpu_admission::webhook::cluster
