// Splits a YAML stream into its documents as it is read, so that each document is parsed on its
// own and a large multi-document file is never held whole: a document starts at a `---` line and
// ends after a `...` line, the lines YAML forbids inside a document's content (so no block scalar
// or quoted string can hold one). Directives and comments before a `---` stay with the document
// they precede.
//
// With list handlers, a document that is a List as kubectl writes it (`kubectl get -o yaml`: a
// block mapping at column 0 whose `items:` is a block sequence) is split further, into the
// sequence's entries, each handed out on its own, and the rest of the document (apiVersion, kind,
// metadata), so that a 150,000-pod List is never held either. An entry is its lines as the file
// has them, with the `-` that opens it blanked: it parses on its own as the same node, at the
// file's columns. The split is taken only where the lines before `items:` are plain `key: value`
// lines (no multi-line flow collection or quoted scalar that could hide a column-0 line);
// otherwise the document is handed out whole. Anchors are per entry there (kubectl writes none).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

struct YamlListHandlers {
  // One entry of a document's top-level `items:` sequence, and the 1-based line it starts at.
  std::function<bool(std::string_view text, int first_line)> item;
  // The rest of that document, with `items: []` on line `items_line` in place of the sequence,
  // which took `sequence_lines` lines of the stream (from its `items:` line on). Lines of `head`
  // past items_line are sequence_lines - 1 further down in the stream.
  std::function<bool(std::string_view head, int first_line, int items_line, int sequence_lines)> list_end;
};

class YamlDocumentSplitter {
 public:
  // on_document(text, first_line): one document's text (with its markers) and the 1-based line
  // of the stream it starts at. Returning false stops the split.
  using OnDocument = std::function<bool(std::string_view text, int first_line)>;

  // `max_document_bytes`: a longer document (or list entry, or the rest of a List) stops the
  // split (problem() says so). Without `list` handlers every document is handed out whole.
  YamlDocumentSplitter(OnDocument on_document, size_t max_document_bytes, YamlListHandlers list = {})
      : on_document_(std::move(on_document)), list_(std::move(list)), max_bytes_(max_document_bytes) {}

  // The next bytes of the stream; false once stopped.
  bool feed(std::string_view chunk);
  // The stream ended: hands out the last document.
  bool finish();
  const std::string& problem() const { return problem_; }

 private:
  enum class ListState : uint8_t { None, Pending, Items, Done };
  enum class Taken : uint8_t { Yes, No, Stop };
  bool take_line(std::string_view line);
  Taken take_list_line(std::string_view line, std::string_view bare);
  void note_head_line(std::string_view bare);
  bool end_items();
  bool emit();
  bool too_large(size_t size);

  OnDocument on_document_;
  YamlListHandlers list_;
  size_t max_bytes_;
  std::string pending_;  // the start of a line not yet ended
  std::string doc_;
  int doc_first_line_ = 1;
  int next_line_ = 1;
  bool doc_has_content_ = false;
  bool stopped_ = false;
  std::string problem_;
  // A List being split: where its `items:` line is, the sequence's indentation, the entry being
  // read and where it starts.
  ListState list_state_ = ListState::None;
  bool simple_head_ = true;  // every column-0 line so far a plain `key: value`
  std::string items_key_line_;
  int items_line_ = 0, sequence_lines_ = 0, sequence_indent_ = 0, item_first_line_ = 0;
  std::string item_;
};

}  // namespace gpu_admission::webhook
