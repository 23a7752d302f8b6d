// Reading a JSON `kind: List` (`kubectl get -A -o json`) as a stream of its items, never as one
// document. JsonListScanner is fed the text in chunks of any size and hands out each element of
// the top-level object's "items" array, and each other top-level member, as the bytes of one JSON
// value with its offset in the text; only the value being read is held. JsonValueSplitter reads
// back a run of items the scanner handed out (values separated by commas and whitespace).
//
// Neither parses the values it hands out: the caller does (simdjson), and gives up when one is
// not JSON. The scanner checks the top level itself (one object; string keys; colons and commas
// in their places; nothing but whitespace after it; no level deeper than kMaxObjectDepth, counted
// as the whole-document parse counts it) and, when the text is not an object it can stream, says
// why, so that the caller reads the text whole instead and reports what that parse reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

// Where one JSON value ends, found across chunks without parsing it: strings (with their
// escapes) and the depth of objects and arrays are followed; a scalar ends at the first byte that
// cannot continue it (whitespace, a comma, a bracket). Bracket kinds are not matched ("{]" is the
// parser's to refuse).
class JsonValueEnd {
 public:
  // A new value, nested `base_depth` levels inside the document (its own brackets count on top).
  void start(int base_depth) { *this = JsonValueEnd{}, base_depth_ = base_depth; }
  // Reads `bytes`, which go on from where the last call stopped (the first call starts at the
  // value's first byte); returns how many of them belong to the value. When it ended in them,
  // done() is true (a scalar's terminating byte is not counted).
  size_t scan(std::string_view bytes);
  // The text ended: a scalar ends with it.
  void end_of_text() {
    if (mode_ == Mode::Scalar) done_ = true;
  }
  bool done() const { return done_; }
  // The deepest level seen, counted from the document's top (base_depth plus the value's own).
  int max_depth() const { return max_depth_; }

 private:
  enum class Mode : uint8_t { First, Container, String, Scalar };
  Mode mode_ = Mode::First;
  bool in_string_ = false, escaped_ = false, done_ = false;
  int depth_ = 0, base_depth_ = 0, max_depth_ = 0;
};

class JsonListScanner {
 public:
  // What the scanner hands out; each view is valid during the call only. Returning false stops
  // the scan (ok() is then false, with the reason the sink gave).
  class Sink {
   public:
    virtual ~Sink() = default;
    // An element of the top-level "items" array, at byte `offset` of the text.
    virtual bool item(uint64_t offset, std::string_view text, std::string& problem) = 0;
    // Another member of the top-level object: its key as the JSON string token (with quotes and
    // escapes as written) and its value's text.
    virtual bool member(std::string_view key_token, std::string_view value, std::string& problem) = 0;
  };

  // `max_value_bytes`: the largest item or member held (a larger one stops the scan).
  JsonListScanner(Sink& sink, int max_depth, size_t max_value_bytes)
      : sink_(sink), max_depth_(max_depth), max_value_bytes_(max_value_bytes) {}

  // The next bytes of the text. False once the text cannot be streamed (see problem()).
  bool feed(std::string_view chunk);
  // The text ended: true when it was one complete object (and every value was handed out).
  bool finish();

  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }
  // Whether the top-level object has a member "items" whose value is an array (its elements
  // went to item(); any other "items" went to member()).
  bool saw_items_array() const { return saw_items_array_; }
  // Where the last value handed out (or being read) starts: its 1-based line, and how many items
  // were started up to it (the item's number when it is one). For errors in texts too large to
  // be read again whole.
  uint64_t value_line() const { return value_line_; }
  uint64_t items_started() const { return items_started_; }
  bool value_is_item() const { return value_is_item_; }

 private:
  enum class State : uint8_t {
    Start, FirstKey, NextKey, Key, Colon, Value, Member, AfterMember, ItemsFirst, Item, AfterItem, NextItem, Done
  };
  bool step(std::string_view chunk, size_t& i);
  bool take_key(std::string_view chunk, size_t& i);
  void start_value(State next, int base_depth, std::string_view chunk, size_t i);
  bool take_value(std::string_view chunk, size_t& i);
  bool fail(std::string why);

  Sink& sink_;
  int max_depth_;
  size_t max_value_bytes_;
  State state_ = State::Start;
  uint64_t offset_ = 0;      // of the chunk being read
  uint64_t value_offset_ = 0;
  uint64_t line_ = 1;         // at chunk byte counted_
  size_t counted_ = 0;
  uint64_t value_line_ = 0, items_started_ = 0;
  bool value_is_item_ = false;
  size_t bom_seen_ = 0;      // bytes of a UTF-8 byte order mark at the very start
  bool started_ = false;     // a byte other than the mark was read
  bool saw_items_array_ = false;
  bool key_escaped_ = false;
  std::string key_;          // the current member's key token
  std::string value_;        // the value being read
  JsonValueEnd end_;
  std::string problem_;
};

// Splits a run of JSON values (items as the scanner handed them out, with the commas and
// whitespace between them) fed in chunks; on_value(text) gets each one whole. Lenient: it only
// finds the values, the caller parses them.
class JsonValueSplitter {
 public:
  template <typename OnValue>
  void feed(std::string_view chunk, OnValue&& on_value) {
    size_t i = 0;
    while (i < chunk.size()) {
      if (!in_value_) {
        const char c = chunk[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',') {
          ++i;
          continue;
        }
        in_value_ = true;
        value_.clear();
        end_.start(0);
      }
      const size_t used = end_.scan(chunk.substr(i));
      value_.append(chunk.data() + i, used);
      i += used;
      if (end_.done()) emit(on_value);
    }
  }
  template <typename OnValue>
  void finish(OnValue&& on_value) {
    if (!in_value_) return;
    end_.end_of_text();
    emit(on_value);  // an unfinished value is handed out as it is: the parser refuses it
  }

 private:
  template <typename OnValue>
  void emit(OnValue& on_value) {
    in_value_ = false;
    on_value(std::string_view(value_));
  }
  bool in_value_ = false;
  std::string value_;
  JsonValueEnd end_;
};

}  // namespace gpu_admission::webhook
