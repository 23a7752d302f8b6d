#include "webhook/io/yaml_json.h"

#include "policy/patch.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <sstream>

namespace gpu_admission::webhook {
namespace {

using policy::SourceMark;

SourceMark mark_of(const YAML::Mark& m) {
  if (m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

bool is_null_scalar(std::string_view s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }
bool is_true(std::string_view s) { return s == "true" || s == "True" || s == "TRUE"; }
bool is_false(std::string_view s) { return s == "false" || s == "False" || s == "FALSE"; }

bool all_digits(std::string_view s, bool hex = false) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!ok) return false;
  }
  return true;
}

// YAML 1.2 core schema resolution of a plain scalar.
Json resolve_plain(const std::string& s) {
  if (is_null_scalar(s)) return nullptr;
  if (is_true(s)) return true;
  if (is_false(s)) return false;
  std::string_view v = s;
  std::string_view digits = v;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (all_digits(digits)) {
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return static_cast<int64_t>(n);
    errno = 0;
    if (!negative) {
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') return static_cast<uint64_t>(u);
    }
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
    return s;  // out of any number's range: kept as text, never an infinity
  }
  if (v.size() > 2 && v[0] == '0' && v[1] == 'x' && all_digits(v.substr(2), true))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 16));
  if (v.size() > 2 && v[0] == '0' && v[1] == 'o' && all_digits(v.substr(2)))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 8));
  if (v == ".inf" || v == ".Inf" || v == ".INF" || v == "+.inf" || v == "-.inf" || v == ".nan" || v == ".NaN" ||
      v == ".NAN")
    return s;  // JSON has no infinities or NaN: keep the text
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kFloat)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
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
    if (has_stray_byte(text)) value(mark, anchor, scalar(tag, utf8_escapes(text)), merge_key);
    else value(mark, anchor, scalar(tag, text), merge_key);
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

  struct Frame {
    Json value;
    std::string path;
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
    void put(const std::string& key, Json v) {
      if (Json* existing = find_key(key)) {
        *existing = std::move(v);
        return;
      }
      auto& object = value.get_ref<Json::object_t&>();
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

  static Json scalar(const std::string& tag, const std::string& text) {
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "!!str") return text;  // quoted or explicit string
    if (tag == "?" || tag.empty() || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null")
      return resolve_plain(text);
    return text;  // unknown tags: keep the text
  }

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

  // Where a child of the top frame starts: for reports (doc_.marks) and for merges (key_marks).
  void note(const YAML::Mark& mark, const std::string& path) {
    if (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.collect && top.value.is_object()) top.key_marks[top.key] = mark_of(mark);
      if (!top.record) return;
    }
    if (limits_.record_marks) doc_.marks.set(path, mark_of(mark));
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
        fail(mark, "key \"" + key + "\"" + (target.path.empty() ? "" : " in " + target.path) +
                       " is written before \"<<\" and merged with another value: kubectl (go-yaml v2) would use the "
                       "merged value, YAML 1.1 the written one; put \"<<\" first");
        return;
      }
      target.put(key, it.value());
      target.merged.insert(key);
      auto km = marks.find(key);
      SourceMark at = km != marks.end() ? km->second : mark_of(mark);
      if (target.collect) target.key_marks[key] = at;
      if (target.record && limits_.record_marks) doc_.marks.set(policy::child_path(target.path, key), at);
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
        fail(mark, "duplicate key \"<<\"" + (top.path.empty() ? "" : " in " + top.path));
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
        fail(mark, "duplicate key \"" + top.key + "\"" + (top.path.empty() ? "" : " in " + top.path));
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
    std::string path = next_path(mark);
    note(mark, path);
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
      frame.path = target->path;
      frame.record = false;
      frame.collect = container.is_object();
    } else {
      frame.path = next_path(mark);
      note(mark, frame.path);
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

size_t first_significant(std::string_view text) {
  size_t i = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 byte order mark
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  return i;
}

SourceMark mark_at_offset(std::string_view text, size_t offset) {
  SourceMark m{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++m.line;
      m.column = 1;
    } else {
      ++m.column;
    }
  }
  return m;
}

// Depth check before handing JSON to a recursive parser.
bool json_depth_ok(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

YamlParse parse_json(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  if (!json_depth_ok(text, limits.max_depth)) {
    out.error = YamlError{"nesting deeper than " + std::to_string(limits.max_depth) + " levels", {}};
    return out;
  }
  try {
    YamlDocument doc;
    doc.value = Json::parse(text.begin(), text.end());
    doc.line = 1;
    out.documents.push_back(std::move(doc));
  } catch (const Json::parse_error& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> keep the reason.
    size_t colon = message.find(": ");
    out.error = YamlError{"invalid JSON: " + (colon == std::string::npos ? message : message.substr(colon + 2)),
                          mark_at_offset(text, e.byte == 0 ? 0 : e.byte - 1)};
  } catch (const Json::exception& e) {
    // out_of_range.406: a number too large for a double, e.g. 1e400.
    std::string message = e.what();
    size_t bracket = message.find("] ");
    out.error = YamlError{"invalid JSON: " + (bracket == std::string::npos ? message : message.substr(bracket + 2)), {}};
  }
  return out;
}

}  // namespace

static YamlParse parse_yaml_or_json_as_yaml(std::string_view text, const YamlLimits& limits);

// Offset of the first byte that is not valid UTF-8 or is a control character, or npos. yaml-cpp can loop forever
// on invalid sequences, so text is checked before it gets there.
static size_t invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      // YAML allows no C0 control characters but tab, LF and CR (and a NUL would make yaml-cpp
      // guess UTF-16); JSON allows them only escaped.
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return i;
    i += len;
  }
  return std::string_view::npos;
}

YamlParse parse_yaml_or_json(std::string_view text, const YamlLimits& limits) {
  if (size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    YamlParse out;
    const bool control = static_cast<unsigned char>(text[bad]) < 0x20;
    out.error = YamlError{std::string(control ? "control character not allowed" : "invalid UTF-8") + " (byte 0x" + [&] {
                            static constexpr char kHex[] = "0123456789abcdef";
                            unsigned char b = static_cast<unsigned char>(text[bad]);
                            return std::string{kHex[b >> 4], kHex[b & 15]};
                          }() + ")",
                          mark_at_offset(text, bad)};
    return out;
  }
  size_t start = first_significant(text);
  if (start < text.size() && (text[start] == '{' || text[start] == '[')) {
    YamlParse json = parse_json(text.substr(0, 3) == "\xEF\xBB\xBF" ? text.substr(3) : text, limits);
    if (!json.error) return json;
    // Not valid JSON: it may still be YAML flow style. If YAML fails too, the JSON error is the
    // more useful one.
    YamlParse yaml = parse_yaml_or_json_as_yaml(text, limits);
    if (!yaml.error) return yaml;
    return json;
  }
  return parse_yaml_or_json_as_yaml(text, limits);
}

static YamlParse parse_yaml_or_json_as_yaml(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  std::istringstream stream{std::string(text)};
  JsonBuilder builder(limits, out);
  try {
    YAML::Parser parser(stream);
    while (!builder.error && parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception& e) {
    builder.fail(e.mark, "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    builder.fail(YAML::Mark::null_mark(), std::string("invalid YAML: ") + e.what());
  }
  if (builder.error) {
    if (builder.stalled() || builder.error->message.rfind("invalid YAML", 0) != 0)
      builder.error->message = "invalid YAML: " + builder.error->message;
    out.documents.clear();
    out.error = builder.error;
  }
  return out;
}

std::string to_json_text(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

namespace {

// A string can be written plain when it reads back as the same string: no indicator at the
// start, no ": " or " #" inside, no surrounding spaces, printable ASCII, not "<<" (a merge key) and
// not a null, bool or number. Anything else is written as a JSON string, which is a valid YAML
// double-quoted scalar.
bool plain_safe(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  if (s == "<<") return false;  // a plain << key is a merge key
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`~").find(s.front()) != std::string_view::npos) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) return false;
    if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) return false;
    if (c == '#' && i > 0 && s[i - 1] == ' ') return false;
  }
  return resolve_plain(s).is_string();
}

void write_scalar_string(std::string& out, const std::string& s) {
  if (plain_safe(s)) {
    out += s;
    return;
  }
  std::string quoted;
  policy::append_json_string(quoted, s);
  // YAML, unlike JSON, reads U+0085, U+2028 and U+2029 as line breaks (folded into a space inside
  // a quoted scalar): escape them.
  for (size_t i = 0; i < quoted.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(quoted[i]);
    if (c == 0xC2 && i + 1 < quoted.size() && static_cast<unsigned char>(quoted[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
    } else if (c == 0xE2 && i + 2 < quoted.size() && static_cast<unsigned char>(quoted[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(quoted[i + 2]) == 0xA8 || static_cast<unsigned char>(quoted[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(quoted[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += quoted[i];
    }
  }
}


void write_value(std::string& out, const Json& v, int indent);

void write_inline(std::string& out, const Json& v) {
  if (v.is_string()) write_scalar_string(out, v.get_ref<const std::string&>());
  else if (v.is_object()) out += "{}";
  else if (v.is_array()) out += "[]";
  else out += to_json_text(v);
}

// Writes a collection whose first line continues the current one (after "- " or at the top).
void write_block(std::string& out, const Json& v, int indent, bool first_line_started) {
  bool first = true;
  auto line_start = [&] {
    if (!(first && first_line_started)) out.append(static_cast<size_t>(indent), ' ');
    first = false;
  };
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      line_start();
      std::string key;
      write_scalar_string(key, it.key());
      if (key.size() > 1000) {  // an implicit key is at most 1024 characters: write `? KEY` then `: VALUE`
        out += "? ";
        out += key;
        out += '\n';
        out.append(static_cast<size_t>(indent), ' ');
      } else {
        out += key;
      }
      out += ':';
      write_value(out, it.value(), indent + 2);
    }
  } else {
    for (const auto& item : v) {
      line_start();
      out += '-';
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        out += ' ';
        write_block(out, item, indent + 2, true);
      } else {
        out += ' ';
        write_inline(out, item);
        out += '\n';
      }
    }
  }
}

// After "key:": a scalar or empty collection on the same line, else the block below.
void write_value(std::string& out, const Json& v, int indent) {
  if ((v.is_object() || v.is_array()) && !v.empty()) {
    out += '\n';
    // Sequences under a key are indented like the key's children.
    write_block(out, v, indent, false);
    return;
  }
  out += ' ';
  write_inline(out, v);
  out += '\n';
}

}  // namespace

std::string to_yaml(const Json& value) {
  std::string out;
  if ((value.is_object() || value.is_array()) && !value.empty()) write_block(out, value, 0, false);
  else {
    write_inline(out, value);
    out += '\n';
  }
  return out;
}

}  // namespace gpu_admission::webhook
