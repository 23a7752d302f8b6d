// List pages and watch events (see watch_decoder.h).
#include "webhook/cluster/watch_decoder.h"

#include <algorithm>

#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::cluster {
namespace {

// Files and standard input (`check`, `audit FILE`) hold what the API server stores: as deep.
static_assert(kMaxObjectDepth == kMaxStoredObjectDepth);

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string_view string_or_empty(simdjson::dom::object object, std::string_view key) {
  element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS || value.type() != element_type::STRING) return {};
  return value.get_string().value_unsafe();
}

std::optional<EventType> event_type(std::string_view text) {
  if (text == "ADDED") return EventType::Added;
  if (text == "MODIFIED") return EventType::Modified;
  if (text == "DELETED") return EventType::Deleted;
  if (text == "BOOKMARK") return EventType::Bookmark;
  if (text == "ERROR") return EventType::Error;
  return std::nullopt;
}

}  // namespace

simdjson::error_code allow_stored_depth(simdjson::dom::parser& parser) {
  if (parser.max_depth() >= kMaxDocumentDepth) return simdjson::SUCCESS;
  // allocate() keeps the capacity it is given; a parser never used gets a small one (it grows
  // with the first document).
  return parser.allocate(std::max<size_t>(parser.capacity(), simdjson::dom::MINIMAL_DOCUMENT_CAPACITY),
                         kMaxDocumentDepth);
}

std::string_view object_meta_problem(element object) {
  ObjectMeta meta;
  if (read_object_meta(object, meta)) return {};
  if (object.type() != element_type::OBJECT) return "not a JSON object";
  simdjson::dom::object metadata;
  if (object.at_key("metadata").get_object().get(metadata) != simdjson::SUCCESS) return "no metadata";
  return "no metadata.name";
}

bool read_object_meta(element object, ObjectMeta& out) {
  out = {};
  simdjson::dom::object obj;
  if (object.get_object().get(obj) != simdjson::SUCCESS) return false;
  simdjson::dom::object metadata;
  if (obj.at_key("metadata").get_object().get(metadata) != simdjson::SUCCESS) return false;
  out.name = string_or_empty(metadata, "name");
  out.namespace_name = string_or_empty(metadata, "namespace");
  out.resource_version = string_or_empty(metadata, "resourceVersion");
  return !out.name.empty();
}

std::optional<std::string> decode_watch_event(simdjson::dom::parser& parser, std::string_view line, WatchEvent& out) {
  out = {};
  if (const auto error = allow_stored_depth(parser); error != simdjson::SUCCESS)
    return std::string("watch event parser: ") + simdjson::error_message(error);
  element root;
  if (const auto error = parser.parse(line.data(), line.size()).get(root); error != simdjson::SUCCESS)
    return std::string("watch event is not JSON: ") + simdjson::error_message(error);
  simdjson::dom::object event;
  if (root.get_object().get(event) != simdjson::SUCCESS) return "watch event is not a JSON object";
  const auto type = event_type(string_or_empty(event, "type"));
  if (!type) return "watch event has no known type";
  out.type = *type;
  const bool has_object =
      event.at_key("object").get(out.object) == simdjson::SUCCESS && out.object.type() == element_type::OBJECT;
  if (!has_object && (out.type == EventType::Added || out.type == EventType::Modified || out.type == EventType::Deleted)) {
    out.object = {};
    out.problem = "the event's object is not a JSON object";
    return std::nullopt;
  }
  if (!has_object) return "watch event has no object";
  if (out.type == EventType::Error) {
    simdjson::dom::object status = out.object.get_object().value_unsafe();
    element code;
    if (status.at_key("code").get(code) == simdjson::SUCCESS && code.is_int64())
      out.error_code = code.get_int64().value_unsafe();
    out.error_message = string_or_empty(status, "message");
    return std::nullopt;
  }
  if (out.type == EventType::Bookmark) {
    read_object_meta(out.object, out.meta);  // a bookmark's object carries only a resourceVersion
    if (out.meta.resource_version.empty()) return "bookmark without a resourceVersion";
    return std::nullopt;
  }
  if (!read_object_meta(out.object, out.meta)) out.problem = object_meta_problem(out.object);
  return std::nullopt;
}

std::optional<std::string> decode_list_page(simdjson::dom::parser& parser, std::string_view body, ListPage& out) {
  out = {};
  if (const auto error = allow_stored_depth(parser); error != simdjson::SUCCESS)
    return std::string("list page parser: ") + simdjson::error_message(error);
  element root;
  if (const auto error = parser.parse(body.data(), body.size()).get(root); error != simdjson::SUCCESS)
    return std::string("list response is not JSON: ") + simdjson::error_message(error);
  simdjson::dom::object list;
  if (root.get_object().get(list) != simdjson::SUCCESS) return "list response is not a JSON object";
  simdjson::dom::object metadata;
  if (list.at_key("metadata").get_object().get(metadata) == simdjson::SUCCESS) {
    out.resource_version = string_or_empty(metadata, "resourceVersion");
    out.continue_token = string_or_empty(metadata, "continue");
  }
  element items;
  if (list.at_key("items").get(items) != simdjson::SUCCESS || items.is_null()) {
    // An empty list may come with "items": null or without items.
    static const simdjson::padded_string kEmpty = simdjson::padded_string(std::string_view("[]"));
    thread_local simdjson::dom::parser empty_parser;
    out.items = empty_parser.parse(kEmpty).get_array().value_unsafe();
  } else if (items.get_array().get(out.items) != simdjson::SUCCESS) {
    return "list response items is not an array";
  }
  if (out.resource_version.empty()) return "list response has no metadata.resourceVersion";
  return std::nullopt;
}

}  // namespace gpu_admission::webhook::cluster
