// The YAML half of parse_yaml_or_json (internal to webhook/io/): an event-driven builder that
// turns yaml-cpp parser events into JSON trees, with the source line/column of every field, merge
// keys (`<<`) expanded as kubectl reads them, and guards on nesting depth, node count (aliases
// and merges included) and duplicate keys. The builder keeps its own stack (no recursion per
// level); a stream nested deeper than yaml-cpp reads is read again by yaml_deep.cpp's parser.
#include "webhook/io/yaml_internal.h"

#include "policy/evaluation/patch.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace gpu_admission::webhook {
namespace {

using policy::SourceMark;
using detail::resolve_plain;
using detail::resolve_tagged;
using detail::TaggedScalar;

SourceMark mark_of(const YAML::Mark& m) {
  if (m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

// Builds JSON trees from yaml-cpp parser events. Driving YAML::Parser directly (instead of
// YAML::LoadAll) lets us stop when the parser makes no progress: yaml-cpp 0.7 otherwise produces
// empty documents forever on some malformed input (a stray ',' or bracket at the root).
//
// Merge keys (`<<`, YAML 1.1) are expanded as kubectl reads them (sigs.k8s.io/yaml, go-yaml v2):
// the value of a plain `<<` key (or one tagged !!merge) must be a mapping, an alias of one, or a
// sequence of those; its keys are added to the mapping, earlier sources of a sequence winning over
// later ones, and keys written after the `<<` replacing merged ones. A quoted '<<' is an ordinary
// key. go-yaml v2 applies the merge where the `<<` stands, so a merged key also replaces one
// written *before* it, where YAML 1.1 and go-yaml v3 keep the written one: that case, when the two
// values differ, is an error rather than a guess. Merged values count towards max_nodes like any
// alias expansion.
class JsonBuilder : public YAML::EventHandler {
 public:
  JsonBuilder(const YamlLimits& limits, YamlParse& out) : limits_(limits), out_(out) {}

  std::optional<YamlError> error;
  bool stalled() const { return stalled_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (has_last_start_ && mark.pos == last_start_.pos) {
      stalled_ = true;
      fail(mark, "the parser cannot make progress here (stray ',' or closing bracket?)");
    }
    last_start_ = mark;
    has_last_start_ = true;
    doc_ = YamlDocument();
    doc_.line = mark_of(mark).line;
    have_root_ = false;
    stack_.clear();
  }

  void OnDocumentEnd() override {
    if (error || !have_root_ || doc_.value.is_null()) return;  // empty documents are left out
    out_.documents.push_back(std::move(doc_));
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { value(mark, anchor, nullptr); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (error) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      fail(mark, "unknown alias");
      return;
    }
    nodes_ += it->second.nodes;  // an alias expands to a copy: count every node of it
    if (nodes_ > limits_.max_nodes) {
      fail(mark, "more than " + std::to_string(limits_.max_nodes) + " nodes (aliases included)");
      return;
    }
    if (Frame* target = merge_target()) {  // `<<: *a` or `<<: [*a, ...]`
      const Anchored& source = it->second;
      if (!source.value.is_object()) {
        fail(mark, kMergeValue);
        return;
      }
      if (!count(mark)) return;
      merge_into(*target, source.value, source.key_marks, mark);
      Frame& top = stack_.back();
      if (top.merge_list) {
        if (top.anchor) top.value.push_back(source.value);  // `&s [*a]` is still a list when aliased
      } else {
        top.merging = false;
        top.expecting_key = true;
      }
      return;
    }
    value(mark, 0, it->second.value);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& text) override {
    // Only the plain, untagged `<<` or one tagged !!merge is a merge key (go-yaml v2's isMerge);
    // yaml-cpp reports "?" for plain untagged scalars and "!" for quoted ones.
    const bool merge_key = text == "<<" && (tag == "?" || tag == "tag:yaml.org,2002:merge");
    TaggedScalar typed = resolve_tagged(tag, has_stray_byte(text) ? utf8_escapes(text) : text);
    if (typed.error) fail(mark, *typed.error);
    value(mark, anchor, std::move(typed.value), merge_key);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(mark, anchor, Json::array());
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(mark, anchor, Json::object());
  }
  void OnMapEnd() override { close(); }

  void fail(const YAML::Mark& mark, std::string message) {
    if (!error) error = YamlError{std::move(message), mark_of(mark)};
  }

 private:
  static constexpr const char* kMergeValue = "merge key value must be a mapping or a sequence of mappings";
  using KeyMarks = std::map<std::string, SourceMark, std::less<>>;  // key -> where its value starts

  // Marks are recorded, and frames keep their path, down to this depth; deeper nodes report their
  // nearest marked ancestor's line (SourceMap::find), and a deep frame's path is built only when
  // an error names it: kept for every frame, 10,000 levels of paths would take n^2 bytes.
  static constexpr size_t kMarkedDepth = 128;

  struct Frame {
    Json value;
    std::string path;            // when has_path
    bool has_path = true;
    bool merge_source = false;   // the value of `<<`, or an item of it: its path is its target's
    YAML::anchor_t anchor = 0;
    size_t first_node = 0;       // node count when the frame opened (for anchors)
    bool expecting_key = true;   // maps: the next event is a key
    std::string key;
    YAML::Mark key_mark;
    YAML::Mark start;
    bool record = true;          // children's marks go to doc_.marks (not inside a merge source)
    bool collect = false;        // maps: fill key_marks (anchored, or merged into their parent)
    bool merge_list = false;     // the sequence value of `<<`: each item is merged into the frame below
    bool merging = false;        // maps: the pending value is a `<<` key's
    bool has_merge = false;      // maps: a `<<` key was seen
    KeyMarks key_marks;
    std::set<std::string, std::less<>> merged;  // maps: keys that came from `<<` (a later key may replace them)
    std::set<std::string, std::less<>> agreed;  // maps: keys written before `<<` that it merges with the same value
    // Maps of kIndexFrom keys or more: key -> position. Json (ordered_json) looks keys up one by one,
    // which would make a mapping of n keys, or a merge of n keys, cost n^2.
    std::unordered_map<std::string, size_t> index;
    static constexpr size_t kIndexFrom = 16;

    Json* find_key(const std::string& key) {
      auto& object = value.get_ref<Json::object_t&>();
      if (object.size() < kIndexFrom) {
        for (auto& entry : object)
          if (entry.first == key) return &entry.second;
        return nullptr;
      }
      auto it = index.find(key);
      return it == index.end() ? nullptr : &(object.begin() + static_cast<std::ptrdiff_t>(it->second))->second;
    }
    // Doubles the entries' storage, moving the values: std::vector would copy its
    // pair<const std::string, Json> entries (their move may throw), each value a deep copy that
    // recurses once per level of it.
    static void grow(Json::object_t& object) {
      Json::object_t grown;
      grown.reserve(std::max<size_t>(4, object.capacity() * 2));
      for (auto& entry : object) grown.emplace_back(entry.first, std::move(entry.second));
      object.swap(grown);
    }
    void put(const std::string& key, Json v) {
      if (Json* existing = find_key(key)) {
        *existing = std::move(v);
        return;
      }
      auto& object = value.get_ref<Json::object_t&>();
      if (object.size() == object.capacity()) grow(object);
      object.emplace_back(key, std::move(v));  // the vector's: no second look-up
      if (object.size() == kIndexFrom) {
        for (size_t i = 0; i < object.size(); ++i) index.emplace((object.begin() + static_cast<std::ptrdiff_t>(i))->first, i);
      } else if (object.size() > kIndexFrom) {
        index.emplace(key, object.size() - 1);
      }
    }
  };
  struct Anchored {
    Json value;
    size_t nodes = 1;
    KeyMarks key_marks;  // mappings: where each key's value starts, for merges
  };

  // yaml-cpp 0.7 turns the escapes \N and \_ into the single bytes 0x85 and 0xA0, not UTF-8. The
  // text was valid UTF-8 before, so a byte that cannot start a character comes from them.
  static size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2; }
  static bool has_stray_byte(const std::string& text) {
    for (size_t i = 0; i < text.size(); i += utf8_length(static_cast<unsigned char>(text[i]))) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c >= 0x80 && c < 0xC0) return true;
    }
    return false;
  }
  static std::string utf8_escapes(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c >= 0x80 && c < 0xC0) {  // U+0080..U+00BF as UTF-8
        out += static_cast<char>(0xC2);
        out += static_cast<char>(c);
        ++i;
        continue;
      }
      const size_t n = std::min(utf8_length(c), text.size() - i);
      out.append(text, i, n);
      i += n;
    }
    return out;
  }

  // Equal JSON values, whatever the order of their keys (Json keeps insertion order).
  static bool same_value(const Json& a, const Json& b) {
    if (a.is_object() && b.is_object()) {
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(); it != a.end(); ++it) {
        auto other = b.find(it.key());
        if (other == b.end() || !same_value(it.value(), *other)) return false;
      }
      return true;
    }
    if (a.is_array() && b.is_array()) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!same_value(a[i], b[i])) return false;
      return true;
    }
    return a == b;
  }

  // The mapping that the next value is merged into, when that value belongs to a `<<` key.
  Frame* merge_target() {
    if (stack_.empty()) return nullptr;
    Frame& top = stack_.back();
    if (top.merge_list) return &stack_[stack_.size() - 2];
    if (top.value.is_object() && !top.expecting_key && top.merging) return &top;
    return nullptr;
  }

  // Whether the next child of the top frame keeps its path and mark (kMarkedDepth).
  bool child_has_path() const { return stack_.size() <= kMarkedDepth; }

  // Where a child of the top frame starts: for reports (doc_.marks) and for merges (key_marks).
  void note(const YAML::Mark& mark, const std::string& path, bool has_path) {
    if (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.collect && top.value.is_object()) top.key_marks[top.key] = mark_of(mark);
      if (!top.record) return;
    }
    if (has_path && limits_.record_marks) doc_.marks.set(path, mark_of(mark));
  }

  // The path of a frame of the stack, for errors: kept, or built from the frames above it.
  std::string path_of(const Frame& frame) const {
    if (frame.has_path) return frame.path;
    std::string path;
    const size_t end = static_cast<size_t>(&frame - stack_.data());
    for (size_t i = 1; i <= end; ++i) {
      const Frame& f = stack_[i];
      const Frame& parent = stack_[i - 1];
      if (f.has_path) path = f.path;
      else if (!f.merge_source)
        path = parent.value.is_array() ? policy::index_path(path, parent.value.size()) : policy::child_path(path, parent.key);
    }
    return path;
  }

  // Adds the keys of `source` to `target`: keys already merged by this `<<` (from an earlier
  // source) win; a key written before the `<<` stays when the merged value is the same, and is an
  // error otherwise (go-yaml v2 and YAML 1.1 disagree there).
  void merge_into(Frame& target, const Json& source, const KeyMarks& marks, const YAML::Mark& mark) {
    for (auto it = source.begin(); it != source.end(); ++it) {
      const std::string& key = it.key();
      if (target.merged.count(key)) continue;  // an earlier source of this `<<` wins
      if (Json* existing = target.find_key(key)) {  // written before the `<<`
        if (target.agreed.count(key)) continue;  // an earlier source agreed with it
        if (same_value(*existing, it.value())) {
          target.agreed.insert(key);
          continue;
        }
        const std::string where = path_of(target);
        fail(mark, "key \"" + key + "\"" + (where.empty() ? "" : " in " + where) +
                       " is written before \"<<\" and merged with another value: kubectl (go-yaml v2) would use the "
                       "merged value, YAML 1.1 the written one; put \"<<\" first");
        return;
      }
      target.put(key, it.value());
      target.merged.insert(key);
      auto km = marks.find(key);
      SourceMark at = km != marks.end() ? km->second : mark_of(mark);
      if (target.collect) target.key_marks[key] = at;
      if (target.record && target.has_path && limits_.record_marks)
        doc_.marks.set(policy::child_path(target.path, key), at);
    }
  }

  // A mapping key (the top frame is a mapping expecting one).
  void place_key(const YAML::Mark& mark, const Json& v, bool merge_key) {
    Frame& top = stack_.back();
    if (!v.is_string() && !v.is_number() && !v.is_boolean() && !v.is_null()) {
      fail(mark, "mapping keys must be strings");
      return;
    }
    if (merge_key) {
      if (top.has_merge) {
        const std::string where = path_of(top);
        fail(mark, "duplicate key \"<<\"" + (where.empty() ? "" : " in " + where));
        return;
      }
      top.has_merge = true;
      top.merging = true;
      top.key_mark = mark;
      top.expecting_key = false;
      return;
    }
    top.key = v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
    if (top.find_key(top.key)) {
      auto merged = top.merged.find(top.key);
      if (merged == top.merged.end()) {
        const std::string where = path_of(top);
        fail(mark, "duplicate key \"" + top.key + "\"" + (where.empty() ? "" : " in " + where));
        return;
      }
      top.merged.erase(merged);  // written after `<<`: replaces the merged value
    }
    top.key_mark = mark;
    top.expecting_key = false;
  }

  // The path of the next value (not a key) of the top frame.
  std::string next_path(const YAML::Mark& mark) {
    if (stack_.empty()) {
      doc_.line = mark_of(mark).line;  // where the document's content starts
      return {};
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) return policy::index_path(top.path, top.value.size());
    return policy::child_path(top.path, top.key);
  }

  void attach(Json v, const KeyMarks& marks, const YAML::Mark& mark) {
    if (stack_.empty()) {
      doc_.value = std::move(v);
      have_root_ = true;
      return;
    }
    if (Frame* target = merge_target()) {  // an inline mapping under `<<`
      merge_into(*target, v, marks, mark);
      Frame& top = stack_.back();
      if (top.merge_list) {
        if (top.anchor) top.value.push_back(std::move(v));
      } else {
        top.merging = false;
        top.expecting_key = true;
      }
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(v));
    } else {
      top.put(top.key, std::move(v));
      top.expecting_key = true;
    }
  }

  bool count(const YAML::Mark& mark) {
    if (++nodes_ > limits_.max_nodes) {
      fail(mark, "more than " + std::to_string(limits_.max_nodes) + " nodes (aliases included)");
      return false;
    }
    return true;
  }

  void value(const YAML::Mark& mark, YAML::anchor_t anchor, Json v, bool merge_key = false) {
    if (error || !count(mark)) return;
    if (!stack_.empty() && stack_.back().value.is_object() && stack_.back().expecting_key) {
      place_key(mark, v, merge_key);
      return;
    }
    if (merge_target()) {
      // An empty value (`<<:` then a new line) starts where the next token does: name the key.
      const Frame& top = stack_.back();
      fail(v.is_null() && !top.merge_list ? top.key_mark : mark, kMergeValue);
      return;
    }
    const bool has_path = child_has_path();
    const std::string path = has_path ? next_path(mark) : std::string();
    note(mark, path, has_path);
    if (anchor) anchors_[anchor] = Anchored{v, 1, {}};
    attach(std::move(v), {}, mark);
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, Json container) {
    if (error || !count(mark)) return;
    if (stack_.size() >= static_cast<size_t>(limits_.max_depth)) {
      fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    if (!stack_.empty() && stack_.back().value.is_object() && stack_.back().expecting_key) {
      fail(mark, "mapping keys must be strings");
      return;
    }
    Frame frame;
    if (Frame* target = merge_target()) {
      // The value of `<<` (a mapping, or a list of them), or an item of that list: its marks stay
      // local (key_marks) and go to the merged keys.
      if (container.is_array() && stack_.back().merge_list) {
        fail(mark, kMergeValue);
        return;
      }
      frame.merge_list = container.is_array();
      frame.merge_source = true;
      frame.has_path = target->has_path;
      if (frame.has_path) frame.path = target->path;
      frame.record = false;
      frame.collect = container.is_object();
    } else {
      frame.has_path = child_has_path();
      if (frame.has_path) frame.path = next_path(mark);
      note(mark, frame.path, frame.has_path);
      frame.record = stack_.empty() || stack_.back().record;
      frame.collect = anchor != 0 && container.is_object();
    }
    frame.value = std::move(container);
    frame.anchor = anchor;
    frame.first_node = nodes_;
    frame.start = mark;
    stack_.push_back(std::move(frame));
  }

  void close() {
    if (error || stack_.empty()) return;
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.anchor) anchors_[frame.anchor] = Anchored{frame.value, nodes_ - frame.first_node + 1, frame.key_marks};
    if (frame.merge_list) {  // every item is merged already
      Frame& target = stack_.back();
      target.merging = false;
      target.expecting_key = true;
      return;
    }
    attach(std::move(frame.value), frame.key_marks, frame.start);
  }

  const YamlLimits& limits_;
  YamlParse& out_;
  YamlDocument doc_;
  bool have_root_ = false;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  size_t nodes_ = 0;
  YAML::Mark last_start_;
  bool has_last_start_ = false;
  bool stalled_ = false;
};

// The documents read, or the builder's error (then no documents).
YamlParse finish(const JsonBuilder& builder, YamlParse& out) {
  if (builder.error) {
    YamlError error = *builder.error;
    if (builder.stalled() || error.message.rfind("invalid YAML", 0) != 0) error.message = "invalid YAML: " + error.message;
    out.documents.clear();
    out.error = std::move(error);
  }
  return std::move(out);
}

// The stream read by libyaml (yaml_deep.cpp), for what yaml-cpp cannot read as deep.
YamlParse parse_deep_yaml_stream(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  JsonBuilder builder(limits, out);
  if (auto error = detail::parse_deep_yaml(text, builder, [&] { return builder.error.has_value(); }))
    builder.fail(error->mark, "invalid YAML: " + error->message);
  return finish(builder, out);
}

}  // namespace

namespace detail {

YamlParse parse_yaml_stream(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  JsonBuilder builder(limits, out);
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    while (!builder.error && parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::DeepRecursion&) {
    // yaml-cpp stops at 500 levels: unless the builder's own depth limit stopped first, the
    // stream is read again by the parser that goes as deep as the limits allow.
    if (!builder.error) return parse_deep_yaml_stream(text, limits);
  } catch (const YAML::Exception& e) {
    builder.fail(e.mark, "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    builder.fail(YAML::Mark::null_mark(), std::string("invalid YAML: ") + e.what());
  }
  return finish(builder, out);
}

}  // namespace detail
}  // namespace gpu_admission::webhook
