// JsonValueEnd and JsonListScanner (json_list_stream.h): a byte-level state machine over the top
// level of one JSON object; the values inside it are found by JsonValueEnd and handed out whole.
#include "webhook/io/json_list_stream.h"

namespace gpu_admission::webhook {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool ends_scalar(char c) {
  switch (c) {
    case ' ': case '\n': case '\r': case '\t': case ',': case ']': case '}': case '[': case '{': case '"': case ':':
      return true;
    default:
      return false;
  }
}

}  // namespace

size_t JsonValueEnd::scan(std::string_view bytes) {
  const char* p = bytes.data();
  const size_t n = bytes.size();
  size_t i = 0;
  if (done_ || n == 0) return 0;
  if (mode_ == Mode::First) {
    const char c = p[i++];
    max_depth_ = base_depth_;
    if (c == '{' || c == '[') {
      mode_ = Mode::Container;
      depth_ = 1;
      max_depth_ = base_depth_ + 1;
    } else if (c == '"') {
      mode_ = Mode::String;
      in_string_ = true;
    } else {
      mode_ = Mode::Scalar;
    }
  }
  if (mode_ == Mode::Scalar) {
    for (; i < n; ++i)
      if (ends_scalar(p[i])) {
        done_ = true;
        return i;
      }
    return n;
  }
  while (i < n) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
        ++i;
        continue;
      }
      while (i < n && p[i] != '"' && p[i] != '\\') ++i;  // the string's plain bytes
      if (i == n) break;
      if (p[i++] == '\\') {
        escaped_ = true;
        continue;
      }
      in_string_ = false;
      if (mode_ == Mode::String) {
        done_ = true;
        return i;
      }
      continue;
    }
    switch (p[i++]) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        if (base_depth_ + ++depth_ > max_depth_) max_depth_ = base_depth_ + depth_;
        break;
      case '}':
      case ']':
        if (--depth_ == 0) {
          done_ = true;
          return i;
        }
        break;
      default:
        break;
    }
  }
  return i;
}

bool JsonListScanner::fail(std::string why) {
  if (problem_.empty()) problem_ = std::move(why);
  return false;
}

// Reads bytes of the value being taken (an item or a member) from chunk[i...]; hands it out
// when it ends.
bool JsonListScanner::take_value(std::string_view chunk, size_t& i) {
  const size_t used = end_.scan(chunk.substr(i));
  if (value_.size() + used > max_value_bytes_)
    return fail("a value larger than " + std::to_string(max_value_bytes_ >> 20) + " MiB");
  value_.append(chunk.data() + i, used);
  i += used;
  if (!end_.done()) return true;
  if (end_.max_depth() > max_depth_) return fail("nesting deeper than " + std::to_string(max_depth_) + " levels");
  std::string problem;
  if (state_ == State::Item) {
    state_ = State::AfterItem;
    if (!sink_.item(value_offset_, value_, problem)) return fail(problem.empty() ? "an item was refused" : problem);
  } else {
    state_ = State::AfterMember;
    if (!sink_.member(key_, value_, problem)) return fail(problem.empty() ? "a member was refused" : problem);
  }
  return true;
}

// The key's string token, up to its closing quote (escapes skipped).
bool JsonListScanner::take_key(std::string_view chunk, size_t& i) {
  while (i < chunk.size()) {
    const char c = chunk[i++];
    key_ += c;
    if (key_.size() > max_value_bytes_) return fail("a key larger than " + std::to_string(max_value_bytes_ >> 20) + " MiB");
    if (key_escaped_) {
      key_escaped_ = false;
    } else if (c == '\\') {
      key_escaped_ = true;
    } else if (c == '"') {
      state_ = State::Colon;
      return true;
    }
  }
  return true;
}

// A member's value or an item begins at chunk[i]: `next` takes it, `base_depth` deep.
void JsonListScanner::start_value(State next, int base_depth, std::string_view chunk, size_t i) {
  state_ = next;
  value_.clear();
  value_offset_ = offset_ + i;
  end_.start(base_depth);
  for (; counted_ < i; ++counted_) line_ += chunk[counted_] == '\n';
  value_line_ = line_;
  value_is_item_ = next == State::Item;
  if (value_is_item_) ++items_started_;
}

// One step of the top level at chunk[i]: consumes at least one byte, or hands a value out.
bool JsonListScanner::step(std::string_view chunk, size_t& i) {
  if (state_ == State::Key) return take_key(chunk, i);
  if (state_ == State::Member || state_ == State::Item) return take_value(chunk, i);
  const char c = chunk[i];
  if (is_space(c)) {
    ++i;
    return true;
  }
  switch (state_) {
    case State::Start:
      if (c != '{') return fail("not a JSON object");
      state_ = State::FirstKey;
      break;
    case State::FirstKey:
    case State::NextKey:
      if (c == '}' && state_ == State::FirstKey) {
        state_ = State::Done;
        break;
      }
      if (c != '"') return fail("a key that is not a string");
      key_ = "\"";
      key_escaped_ = false;
      state_ = State::Key;
      break;
    case State::Colon:
      if (c != ':') return fail("no colon after a key");
      state_ = State::Value;
      break;
    case State::Value:
      if (c == '[' && key_ == "\"items\"") {
        if (saw_items_array_) return fail("two \"items\" members");
        saw_items_array_ = true;
        state_ = State::ItemsFirst;
        break;
      }
      start_value(State::Member, 1, chunk, i);
      return true;  // the value's first byte is its own
    case State::ItemsFirst:
      if (c == ']') {
        state_ = State::AfterMember;
        break;
      }
      start_value(State::Item, 2, chunk, i);
      return true;
    case State::NextItem:
      start_value(State::Item, 2, chunk, i);
      return true;
    case State::AfterItem:
      if (c == ',') state_ = State::NextItem;
      else if (c == ']') state_ = State::AfterMember;
      else return fail("no comma between items");
      break;
    case State::AfterMember:
      if (c == ',') state_ = State::NextKey;
      else if (c == '}') state_ = State::Done;
      else return fail("no comma between members");
      break;
    case State::Done:
      return fail("more after the object");
    default:
      break;
  }
  ++i;
  return true;
}

bool JsonListScanner::feed(std::string_view chunk) {
  if (!ok()) return false;
  size_t i = 0;
  // A UTF-8 byte order mark may open the text (as the whole-text parse allows).
  while (!started_ && i < chunk.size()) {
    if (bom_seen_ < kByteOrderMark.size() && chunk[i] == kByteOrderMark[bom_seen_]) {
      ++bom_seen_;
      ++i;
      continue;
    }
    if (bom_seen_ != 0 && bom_seen_ != kByteOrderMark.size()) return fail("not JSON");
    started_ = true;
  }
  counted_ = 0;
  while (i < chunk.size())
    if (!step(chunk, i)) break;
  for (; counted_ < chunk.size(); ++counted_) line_ += chunk[counted_] == '\n';
  offset_ += chunk.size();
  return ok();
}

bool JsonListScanner::finish() {
  if (!ok()) return false;
  if (state_ != State::Done) return fail("the text ends inside its object");
  return true;
}

}  // namespace gpu_admission::webhook
