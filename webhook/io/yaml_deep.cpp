// The YAML parser for streams nested deeper than yaml-cpp reads (internal to webhook/io/):
// yaml-cpp 0.7 recurses once per level and stops at 500 levels (its DepthGuard), while objects
// may nest 10,000 levels (kMaxObjectDepth). libyaml's parser is a state machine whose stacks live
// on the heap, and it is the parser kubectl's YAML reader (go-yaml) was ported from. Its events
// are handed to the same builder as yaml-cpp's, spelled as yaml-cpp spells them, so the JSON
// trees, marks and checks are the same whichever parser read the text.
#include "webhook/io/yaml_internal.h"

#include <yaml.h>

#include <map>
#include <memory>

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>

namespace gpu_admission::webhook::detail {
namespace {

YAML::Mark mark_of(const yaml_mark_t& m) {
  YAML::Mark out;
  out.pos = static_cast<int>(m.index);
  out.line = static_cast<int>(m.line);
  out.column = static_cast<int>(m.column);
  return out;
}

std::string text_of(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : ""; }

// Anchor names -> the numbers yaml-cpp hands out: one per definition, never reused, so that a
// name defined again (or in a later document) is a new anchor.
class Anchors {
 public:
  void start_document() { names_.clear(); }
  YAML::anchor_t define(const yaml_char_t* name) {
    if (!name) return YAML::NullAnchor;
    return names_[text_of(name)] = ++last_;
  }
  std::optional<YAML::anchor_t> find(const yaml_char_t* name) const {
    auto it = names_.find(text_of(name));
    if (it == names_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, YAML::anchor_t, std::less<>> names_;
  YAML::anchor_t last_ = 0;
};

// The tag as yaml-cpp reports it: "?" for a plain scalar without one, "!" for a quoted or block
// scalar without one, else the resolved tag.
std::string scalar_tag(const yaml_event_t& e) {
  if (e.data.scalar.tag) return text_of(e.data.scalar.tag);
  return e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? "?" : "!";
}

std::string collection_tag(const yaml_char_t* tag) { return tag ? text_of(tag) : "?"; }

YAML::EmitterStyle::value style_of(bool flow) { return flow ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block; }

// One event to `handler`; an error when an alias names no anchor of its document.
std::optional<YamlEventError> deliver(const yaml_event_t& e, YAML::EventHandler& handler, Anchors& anchors) {
  const YAML::Mark mark = mark_of(e.start_mark);
  switch (e.type) {
    case YAML_DOCUMENT_START_EVENT:
      anchors.start_document();
      handler.OnDocumentStart(mark);
      break;
    case YAML_DOCUMENT_END_EVENT: handler.OnDocumentEnd(); break;
    case YAML_ALIAS_EVENT: {
      auto anchor = anchors.find(e.data.alias.anchor);
      if (!anchor) return YamlEventError{"the referenced anchor is not defined", mark};
      handler.OnAlias(mark, *anchor);
      break;
    }
    case YAML_SCALAR_EVENT:
      handler.OnScalar(mark, scalar_tag(e), anchors.define(e.data.scalar.anchor),
                       std::string(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length));
      break;
    case YAML_SEQUENCE_START_EVENT:
      handler.OnSequenceStart(mark, collection_tag(e.data.sequence_start.tag), anchors.define(e.data.sequence_start.anchor),
                              style_of(e.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE));
      break;
    case YAML_SEQUENCE_END_EVENT: handler.OnSequenceEnd(); break;
    case YAML_MAPPING_START_EVENT:
      handler.OnMapStart(mark, collection_tag(e.data.mapping_start.tag), anchors.define(e.data.mapping_start.anchor),
                         style_of(e.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE));
      break;
    case YAML_MAPPING_END_EVENT: handler.OnMapEnd(); break;
    default: break;  // stream start and end, no event
  }
  return std::nullopt;
}

}  // namespace

std::optional<YamlEventError> parse_deep_yaml(std::string_view text, YAML::EventHandler& handler,
                                              const std::function<bool()>& stop) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return YamlEventError{"out of memory for the YAML parser", {}};
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> owner(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  Anchors anchors;
  while (!stop()) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) {
      std::string message = parser.problem ? parser.problem : "cannot parse";
      if (parser.context) message += std::string(" (") + parser.context + ")";
      return YamlEventError{message, mark_of(parser.problem_mark)};
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> held(&event, yaml_event_delete);
    if (event.type == YAML_STREAM_END_EVENT) break;
    if (auto error = deliver(event, handler, anchors)) return error;
  }
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::detail
