#include "webhook/io/yaml_documents.h"

namespace gpu_admission::webhook {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// `---` or `...` at the start of a line, alone or followed by whitespace.
bool is_marker(std::string_view line, std::string_view marker) {
  if (line.substr(0, 3) != marker) return false;
  return line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '\n';
}

// Blank lines, comments and directives: what may come before a document's `---`.
bool is_preamble(std::string_view line) {
  if (!line.empty() && line[0] == '%') return true;
  const size_t first = line.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos || line[first] == '#';
}

// Blank or only a comment.
bool is_blank(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos || line[first] == '#';
}

size_t indent_of(std::string_view line) {
  const size_t first = line.find_first_not_of(' ');
  return first == std::string_view::npos ? line.size() : first;
}

std::string_view trimmed(std::string_view s) {
  const size_t end = s.find_last_not_of(" \t\r\n");
  return end == std::string_view::npos ? std::string_view() : s.substr(0, end + 1);
}

// Whether `rest` (what follows a key's colon) is a value that ends on its line: nothing, a
// comment, a plain scalar, a quoted scalar closed on the line, a flow collection closed on the
// line, or the indicator of a block scalar (whose content is indented).
bool value_ends_on_line(std::string_view rest) {
  const size_t first = rest.find_first_not_of(" \t");
  if (first == std::string_view::npos) return true;
  const std::string_view value = trimmed(rest.substr(first));
  if (value.empty()) return true;
  const char open = value.front();
  if (open == '"' || open == '\'') return value.size() >= 2 && value.back() == open;
  if (open == '{') return value.back() == '}';
  if (open == '[') return value.back() == ']';
  return open != '&' && open != '*' && open != '!' && open != '?';
}

// A plain `key: value` line at column 0 (an unquoted key).
bool is_simple_key_line(std::string_view line) {
  if (line.empty() || std::string_view("-?:,[]{}#&*!|>'\"%@` \t").find(line[0]) != std::string_view::npos) return false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && i > 0 && (line[i - 1] == ' ' || line[i - 1] == '\t')) return false;
    if (line[i] != ':') continue;
    if (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t' || line[i + 1] == '\r' || line[i + 1] == '\n')
      return value_ends_on_line(line.substr(i + 1));
  }
  return false;
}

// `items:` at column 0 with nothing after it but a comment.
bool is_items_key(std::string_view line) {
  if (line.substr(0, 6) != "items:") return false;
  return is_blank(line.substr(6));
}

// A sequence entry's opening at `indent`: `-` then a space or the line's end.
bool opens_entry(std::string_view line, size_t indent) {
  if (line.size() <= indent || line[indent] != '-') return false;
  return line.size() == indent + 1 || line[indent + 1] == ' ' || line[indent + 1] == '\r' || line[indent + 1] == '\n';
}

}  // namespace

bool YamlDocumentSplitter::too_large(size_t size) {
  if (size <= max_bytes_) return false;
  problem_ = "a document larger than " + std::to_string(max_bytes_ >> 20) + " MiB";
  stopped_ = true;
  return true;
}

bool YamlDocumentSplitter::end_items() {
  const bool had_item = !item_.empty();
  list_state_ = ListState::Done;
  if (had_item && !list_.item(item_, item_first_line_)) stopped_ = true;
  item_.clear();
  return !stopped_;
}

bool YamlDocumentSplitter::emit() {
  if (list_state_ == ListState::Pending) {  // `items:` ended the document: nothing to split
    doc_.append(items_key_line_);
    list_state_ = ListState::None;
  }
  if (list_state_ == ListState::Items && !end_items()) return false;
  if (list_state_ == ListState::Done) {
    if (!list_.list_end(doc_, doc_first_line_, items_line_, sequence_lines_)) stopped_ = true;
  } else if (doc_has_content_ && !on_document_(doc_, doc_first_line_)) {
    stopped_ = true;
  }
  doc_.clear();
  doc_has_content_ = false;
  doc_first_line_ = next_line_;
  list_state_ = ListState::None;
  simple_head_ = true;
  return !stopped_;
}

// Lines after `items:`: the sequence's entries (Yes), or the first line past it (No).
YamlDocumentSplitter::Taken YamlDocumentSplitter::take_list_line(std::string_view line, std::string_view bare) {
  if (list_state_ == ListState::Pending) {
    if (is_blank(bare)) {
      ++sequence_lines_;
      return Taken::Yes;
    }
    const size_t indent = indent_of(bare);
    if (!opens_entry(bare, indent)) {  // not a block sequence: the document is read whole
      doc_.append(items_key_line_);
      list_state_ = ListState::None;
      simple_head_ = false;
      return Taken::No;
    }
    list_state_ = ListState::Items;
    sequence_indent_ = static_cast<int>(indent);
    doc_.append("items: []\n");
  }
  const size_t indent = indent_of(bare);
  const bool entry = opens_entry(bare, static_cast<size_t>(sequence_indent_));
  if (!is_blank(bare) && indent <= static_cast<size_t>(sequence_indent_) && !(entry && indent == static_cast<size_t>(sequence_indent_)))
    return end_items() ? Taken::No : Taken::Stop;  // past the sequence
  if (entry && indent == static_cast<size_t>(sequence_indent_)) {
    if (!item_.empty() && !end_items()) return Taken::Stop;
    list_state_ = ListState::Items;
    item_first_line_ = next_line_;
    item_.assign(line);
    item_[static_cast<size_t>(sequence_indent_) + (line.size() - bare.size())] = ' ';
  } else if (!item_.empty()) {
    if (too_large(item_.size() + line.size())) return Taken::Stop;
    item_.append(line);
  }
  ++sequence_lines_;
  return Taken::Yes;
}

// Follows the column-0 lines of a document that may be split as a List.
void YamlDocumentSplitter::note_head_line(std::string_view bare) {
  if (!list_.item || list_state_ == ListState::Done || is_blank(bare) || indent_of(bare) > 0) return;
  if (is_marker(bare, "---")) {
    simple_head_ = simple_head_ && is_blank(bare.substr(3));  // content on the marker line: not split
    return;
  }
  if (!is_simple_key_line(bare)) simple_head_ = false;
}

bool YamlDocumentSplitter::take_line(std::string_view line) {
  std::string_view bare = line;
  if (next_line_ == 1 && bare.substr(0, 3) == kByteOrderMark) bare.remove_prefix(3);
  const bool starts = is_marker(bare, "---"), ends = is_marker(bare, "...");
  if ((list_state_ == ListState::Pending || list_state_ == ListState::Items) && !starts && !ends) {
    const Taken taken = take_list_line(line, bare);
    if (taken == Taken::Stop) return false;
    if (taken == Taken::Yes) {
      ++next_line_;
      return true;
    }
  } else if (list_state_ == ListState::Items && !end_items()) {
    return false;
  }
  if (starts && (doc_has_content_ || list_state_ != ListState::None) && !emit()) return false;
  if (doc_.empty() && list_state_ == ListState::None) doc_first_line_ = next_line_;
  if (list_.item && list_state_ == ListState::None && simple_head_ && is_items_key(bare)) {
    list_state_ = ListState::Pending;
    items_key_line_.assign(line);
    items_line_ = next_line_;
    sequence_lines_ = 1;
    doc_has_content_ = true;
    ++next_line_;
    return true;
  }
  if (too_large(doc_.size() + line.size())) return false;
  doc_.append(line);
  ++next_line_;
  if (!is_preamble(bare)) doc_has_content_ = true;
  note_head_line(bare);
  if (ends) return emit();
  return true;
}

bool YamlDocumentSplitter::feed(std::string_view chunk) {
  while (!stopped_ && !chunk.empty()) {
    const size_t newline = chunk.find('\n');
    if (newline == std::string_view::npos) {
      if (too_large(pending_.size() + chunk.size())) return false;
      pending_.append(chunk);
      return true;
    }
    const std::string_view piece = chunk.substr(0, newline + 1);
    chunk.remove_prefix(newline + 1);
    if (pending_.empty()) {
      if (!take_line(piece)) return false;
    } else {
      pending_.append(piece);
      const std::string line = std::move(pending_);
      pending_.clear();
      if (!take_line(line)) return false;
    }
  }
  return !stopped_;
}

bool YamlDocumentSplitter::finish() {
  if (stopped_) return false;
  if (!pending_.empty()) {
    const std::string line = std::move(pending_);
    pending_.clear();
    if (!take_line(line)) return false;
  }
  // A stream of only comments is still one (empty) document to the parser: nothing to hand out.
  return emit();
}

}  // namespace gpu_admission::webhook
