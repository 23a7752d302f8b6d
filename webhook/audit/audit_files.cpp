// read_files_into (audit_sources.h): FILEs and standard input read as streams, in two passes, so
// that memory does not grow with them (docs/design.md, "Audit"):
// 1. Each input is read once, in chunks. A JSON `kind: List` (`kubectl get -A -o json`) is split
//    into its items (webhook/io/json_list_stream.h), each parsed on its own to learn its kind; a
//    YAML stream is split into documents (webhook/io/yaml_documents.h), each parsed on its own and
//    its objects of audited kinds written as JSON into a spool. Kept per input: runs of items of
//    one kind (where their bytes lie), never the items.
// 2. The runs are read back kind by kind, in the order the cluster path lists kinds (Namespaces
//    and claims before what refers to them), items in their input's order: the same order the
//    whole-file reading gave, so the result is the same. Each item is parsed, judged and dropped.
// Bytes lie where they can be read again: a large regular file stays where it is; standard input
// from a pipe, small files and converted YAML go to the spool (an unlinked temporary file). What
// the streaming pass cannot take (a JSON text that is not a List, not valid JSON, a List inside
// the List) is read whole as before, within kMaxManifestBytes, and reported as before.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "webhook/audit/audit_sources.h"
#include "webhook/cluster/watch_decoder.h"
#include "webhook/io/byte_store.h"
#include "webhook/io/json_list_stream.h"
#include "webhook/io/manifests.h"
#include "webhook/io/text_file.h"
#include "webhook/io/yaml_documents.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::audit {
namespace {

constexpr size_t kChunkBytes = 1u << 20;
constexpr std::string_view kOtherKinds = "objects of other kinds";
constexpr std::string_view kReviews = "AdmissionReviews (judge them with check)";

// Items of one kind that lie one after another in a store: begin..end holds them with the commas
// and whitespace between them.
struct Run {
  uint32_t store = 0;
  uint32_t kind = 0;
  uint64_t begin = 0, end = 0;
  uint64_t count = 0;
};

// What reading one input found; kept aside until the input is known to be usable as read.
struct Found {
  std::vector<Run> runs;
  std::map<std::string, size_t> skipped;
  bool contiguous = false;  // the object before the next one went into runs.back()

  void add(uint32_t store, uint32_t kind, uint64_t begin, uint64_t end) {
    if (contiguous && !runs.empty() && runs.back().store == store && runs.back().kind == kind) {
      runs.back().end = end;
      ++runs.back().count;
    } else {
      runs.push_back({store, kind, begin, end, 1});
    }
    contiguous = true;
  }
  void skip(std::string_view why) {
    ++skipped[std::string(why)];
    contiguous = false;
  }
};

// Parses `text` after copying it where simdjson's padding follows it.
simdjson::error_code parse_padded(simdjson::dom::parser& parser, std::string_view text, std::string& buffer,
                                  simdjson::dom::element& out) {
  buffer.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(text.data(), text.size());
  return parser.parse(buffer.data(), buffer.size(), false).get(out);
}

// Whether some object in `root` repeats a key. The whole-text reading kept the last value of a
// repeated key; simdjson's lookups find the first, so such an item is read as it was before.
bool has_duplicate_keys(simdjson::dom::element root) {
  std::vector<simdjson::dom::element> stack{root};
  std::vector<std::string_view> keys;
  const auto nested = [](simdjson::dom::element e) { return e.is_object() || e.is_array(); };
  while (!stack.empty()) {
    const simdjson::dom::element e = stack.back();
    stack.pop_back();
    simdjson::dom::object object;
    simdjson::dom::array array;
    if (!e.get(object)) {
      keys.clear();
      for (auto field : object) {
        keys.push_back(field.key);
        if (nested(field.value)) stack.push_back(field.value);
      }
      if (keys.size() < 2) continue;
      std::sort(keys.begin(), keys.end());
      if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return true;
    } else if (!e.get(array)) {
      for (auto value : array)
        if (nested(value)) stack.push_back(value);
    }
  }
  return false;
}

// An input as opened: its descriptor, whether it is a regular file (readable again by offset)
// and from where.
struct Input {
  std::string name;
  int fd = -1;
  bool regular = false;
  uint64_t base = 0, size = 0;

  Input() = default;
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() {
    if (fd > 0) ::close(fd);  // standard input (0) stays open
  }
  int release() { return std::exchange(fd, -1); }
};

std::optional<std::string> open_input(const std::string& path, Input& in) {
  in.name = path == "-" ? "<stdin>" : path;
  in.fd = path == "-" ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in.fd < 0) return in.name + ": cannot read: " + std::strerror(errno);
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) return in.name + ": cannot read: " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return in.name + ": cannot read: is a directory";
  if (S_ISREG(st.st_mode)) {
    const off_t at = ::lseek(in.fd, 0, SEEK_CUR);
    in.regular = at >= 0 && static_cast<uint64_t>(at) <= static_cast<uint64_t>(st.st_size);
    in.base = in.regular ? static_cast<uint64_t>(at) : 0;
    in.size = in.regular ? static_cast<uint64_t>(st.st_size) - in.base : 0;
  }
  return std::nullopt;
}

// The next chunk of the input `fd` into `buffer` (empty at its end).
std::optional<std::string> read_chunk(int fd, const std::string& name, std::string& buffer) {
  buffer.resize(kChunkBytes);
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return name + ": cannot read: " + std::strerror(errno);
    buffer.resize(static_cast<size_t>(n));
    return std::nullopt;
  }
}

// The first byte of `text` that is not whitespace (after a UTF-8 byte order mark), or npos.
size_t first_significant(std::string_view text) {
  size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  return i < text.size() ? i : std::string_view::npos;
}

// A text that did not stream and is too large to be read whole: what the streaming pass found,
// at the line (and item) where it stopped; or, when it is no List at all, its size.
std::string too_large_to_reread(const std::string& name, const JsonListScanner& scanner) {
  if (scanner.ok() || scanner.value_line() == 0)
    return name + ": too large (more than " + std::to_string(kMaxManifestBytes >> 20) + " MiB) for anything but a List";
  std::string where = name + ":" + std::to_string(scanner.value_line()) + ": ";
  if (scanner.value_is_item()) where += "item " + std::to_string(scanner.items_started()) + " of the List: ";
  return where + scanner.problem();
}

class FileReader;

// Takes the items of a streamed JSON List: each parsed to learn its kind, then dropped.
class ItemSink : public JsonListScanner::Sink {
 public:
  ItemSink(FileReader& reader, Found& found, uint32_t store, uint64_t base)
      : reader_(reader), found_(found), store_(store), base_(base) {}
  bool item(uint64_t offset, std::string_view text, std::string& problem) override;
  bool member(std::string_view key_token, std::string_view value, std::string& problem) override;
  // The top-level kind says List (as the whole-text reading asks: "...List").
  bool is_list() const { return list_kind_.size() >= 4 && list_kind_.ends_with("List"); }

 private:
  FileReader& reader_;
  Found& found_;
  uint32_t store_;
  uint64_t base_;
  std::string list_kind_;
  std::set<std::string> keys_;
  std::string buffer_;
};

class FileReader {
 public:
  FileReader(const std::vector<AuditKind>& kinds, Auditor& auditor, const FileReadOptions& options)
      : kinds_(kinds), auditor_(auditor), options_(options) {
    stores_.push_back(ByteStore::spool(options.spool_dir));
  }

  std::optional<std::string> read(const std::string& path);
  std::optional<std::string> judge();

  std::optional<uint32_t> kind_of(std::string_view api_version, std::string_view kind) const {
    const std::string_view group = policy::api_group_of(api_version);
    for (size_t i = 0; i < kinds_.size(); ++i)
      if (kinds_[i].group == group && kinds_[i].kind == kind) return static_cast<uint32_t>(i);
    return std::nullopt;
  }
  simdjson::dom::parser& parser() { return parser_; }

 private:
  ByteStore& spool() { return *stores_[0]; }
  std::optional<std::string> read_json(Input& in, std::string head);
  std::optional<std::string> read_yaml(Input& in, const std::string& head);
  std::optional<std::string> take_list_head(const std::string& name, std::string_view head, int first_line,
                                            int items_line, int sequence_lines, Found& found, Found& entries);
  std::optional<std::string> take_objects(const ManifestRead& read, Found& found);
  std::optional<std::string> judge_run(const Run& run);
  std::optional<std::string> judge_item(AuditKind& kind, std::string_view text, const std::string& name);
  void commit(Found& found);

  const std::vector<AuditKind>& kinds_;
  Auditor& auditor_;
  FileReadOptions options_;
  std::vector<std::unique_ptr<ByteStore>> stores_;  // [0]: the spool
  std::vector<Run> runs_;
  simdjson::dom::parser parser_;
  std::string buffer_, normalized_;
};

bool ItemSink::item(uint64_t offset, std::string_view text, std::string& problem) {
  simdjson::dom::element element;
  if (auto err = parse_padded(reader_.parser(), text, buffer_, element)) {
    problem = std::string("not JSON: ") + simdjson::error_message(err);
    return false;
  }
  simdjson::dom::object object;
  if (element.get(object)) {
    found_.skip(kOtherKinds);
    return true;
  }
  // The last of a repeated key counts, as in the whole-text reading.
  std::string_view kind, api_version;
  bool request = false, items = false;
  for (auto field : object) {
    if (field.key == "kind") {
      if (field.value.get(kind)) kind = {};
    } else if (field.key == "apiVersion") {
      if (field.value.get(api_version)) api_version = {};
    } else if (field.key == "request") {
      request = field.value.is_object();
    } else if (field.key == "items") {
      items = field.value.is_array();
    }
  }
  if (items && kind.size() >= 4 && kind.ends_with("List")) {
    problem = "a List inside the List";  // read whole, as before
    return false;
  }
  if (kind == "AdmissionReview" && request) {
    found_.skip(kReviews);
    return true;
  }
  const auto index = reader_.kind_of(api_version, kind);
  if (!index) {
    found_.skip(kOtherKinds);
    return true;
  }
  found_.add(store_, *index, base_ + offset, base_ + offset + text.size());
  return true;
}

bool ItemSink::member(std::string_view key_token, std::string_view value, std::string& problem) {
  simdjson::dom::element element;
  std::string_view key;
  if (parse_padded(reader_.parser(), key_token, buffer_, element) || element.get(key)) {
    problem = "a key that is not a JSON string";
    return false;
  }
  std::string name(key);
  if (name == "items" || !keys_.insert(name).second) {
    problem = "items that are not one array, or a repeated key";
    return false;
  }
  if (parse_padded(reader_.parser(), value, buffer_, element)) {
    problem = "a member that is not JSON";
    return false;
  }
  if (name == "kind") {
    std::string_view kind;
    list_kind_ = element.get(kind) ? "" : std::string(kind);
  }
  return true;
}

void FileReader::commit(Found& found) {
  for (const auto& [why, count] : found.skipped)
    for (size_t i = 0; i < count; ++i) auditor_.skip(why);
  runs_.insert(runs_.end(), found.runs.begin(), found.runs.end());
}

// Objects read whole (a YAML document, a JSON text that is not a streamable List): those of
// audited kinds go to the spool as JSON, one a line.
std::optional<std::string> FileReader::take_objects(const ManifestRead& read, Found& found) {
  for (const ManifestObject& o : read.objects) {
    const Json& object = o.object;
    const std::string kind = object.is_object() && object.contains("kind") && object["kind"].is_string()
                                 ? object["kind"].get<std::string>() : "";
    const std::string api_version = object.is_object() && object.contains("apiVersion") && object["apiVersion"].is_string()
                                        ? object["apiVersion"].get<std::string>() : "";
    const auto index = kind_of(api_version, kind);
    if (o.from_review || !index) {
      found.skip(o.from_review ? kReviews : kOtherKinds);
      continue;
    }
    const uint64_t begin = spool().size();
    std::string error;
    if (!spool().append(to_json_text(object) + "\n", error)) return o.source + ": " + error;
    found.add(0, *index, begin, spool().size());
  }
  return std::nullopt;
}

std::optional<std::string> FileReader::read_json(Input& in, std::string head) {
  Found found;
  // A large regular file is read again where it lies; anything else is copied into the spool.
  const bool in_place = in.regular && in.size > options_.keep_open_above;
  uint32_t store = 0;
  uint64_t base = spool().size();
  if (in_place) {
    stores_.push_back(ByteStore::over_file(in.release(), in.base, in.size, in.name));
    store = static_cast<uint32_t>(stores_.size() - 1);
    base = 0;
  }
  const ByteStore& source = *stores_[store];
  ItemSink sink(*this, found, store, base);
  JsonListScanner scanner(sink, kMaxObjectDepth, kMaxManifestBytes);
  uint64_t total = 0;
  std::string chunk = std::move(head), error;
  while (!chunk.empty()) {
    total += chunk.size();
    if (!in_place && !spool().append(chunk, error)) return in.name + ": " + error;
    if (scanner.ok()) scanner.feed(chunk);
    // Not a List: it is read whole below, so it must fit as before.
    if (!scanner.ok() && (in_place || total > kMaxManifestBytes)) break;
    if (in_place) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, source.size() - total));
      chunk.clear();
      if (n > 0 && !source.read(total, n, chunk, error)) return in.name + ": " + error;
    } else if (auto read_error = read_chunk(in.fd, in.name, chunk)) {
      return read_error;
    }
  }
  if (scanner.ok() && scanner.finish() && scanner.saw_items_array() && sink.is_list()) {
    commit(found);
    return std::nullopt;
  }
  // Not a List that streams: read whole, as before (the same objects, or the same error).
  const uint64_t size = in_place ? source.size() : total;
  if (size > kMaxManifestBytes) return too_large_to_reread(in.name, scanner);
  std::string text;
  if (!source.read(base, static_cast<size_t>(size), text, error)) return in.name + ": " + error;
  if (!in_place) spool().truncate(base);  // its objects take the text's place
  const ManifestRead read = read_manifest_text(text, in.name);
  if (read.error) return *read.error;
  Found whole;
  if (auto err = take_objects(read, whole)) return err;
  commit(whole);
  return std::nullopt;
}

// The rest of a YAML List split by entries (yaml_documents.h): its entries count when it is a
// List as the whole-text reading takes one (kind ending in List); otherwise the document is one
// object that has an `items` field, and is taken as such.
std::optional<std::string> FileReader::take_list_head(const std::string& name, std::string_view head, int first_line,
                                                      int items_line, int sequence_lines, Found& found, Found& entries) {
  YamlLimits limits;
  limits.max_depth = kMaxObjectDepth;
  limits.record_marks = false;
  const YamlParse parsed = parse_yaml_or_json(head, limits);
  if (parsed.error) {
    int line = parsed.error->mark.line > 0 ? parsed.error->mark.line + first_line - 1 : 0;
    if (line > items_line) line += sequence_lines - 1;  // past the entries, which the head leaves out
    std::string where = name;
    if (line > 0) where += ":" + std::to_string(line);
    if (line > 0 && parsed.error->mark.column > 0) where += ":" + std::to_string(parsed.error->mark.column);
    return where + ": " + parsed.error->message;
  }
  const Json object = parsed.documents.empty() ? Json() : parsed.documents.front().value;
  const auto text_of = [&](const char* key) {
    return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
  };
  const std::string kind = text_of("kind");
  if (kind.size() >= 4 && kind.ends_with("List")) {
    for (const auto& [why, count] : entries.skipped) found.skipped[why] += count;
    found.runs.insert(found.runs.end(), entries.runs.begin(), entries.runs.end());
    found.contiguous = false;
    return std::nullopt;
  }
  if (kind_of(text_of("apiVersion"), kind))  // the whole-text reading judged it; it is no longer held
    return name + ":" + std::to_string(first_line) + ": a " + kind + " with a top-level items sequence (only a List's " +
           "items are objects): write it as JSON";
  found.skip(kind == "AdmissionReview" && object.contains("request") ? kReviews : kOtherKinds);
  return std::nullopt;
}

std::optional<std::string> FileReader::read_yaml(Input& in, const std::string& head) {
  Found found, entries;  // entries: those of the List being split, kept once it is known to be one
  std::optional<std::string> error;
  const auto take = [&](Found& into, bool entry) {
    return [&, entry](std::string_view text, int first_line) {
      const ManifestRead read = read_manifest_text(text, in.name, first_line);
      error = read.error ? read.error : take_objects(read, into);
      if (entry && !error && read.objects.empty()) into.skip(kOtherKinds);  // `-` alone: a null entry
      return !error;
    };
  };
  YamlListHandlers list;
  list.item = take(entries, true);
  list.list_end = [&](std::string_view text, int first_line, int items_line, int sequence_lines) {
    error = take_list_head(in.name, text, first_line, items_line, sequence_lines, found, entries);
    entries = Found{};
    return !error;
  };
  YamlDocumentSplitter splitter(take(found, false), kMaxManifestBytes, std::move(list));
  std::string chunk = head;
  while (!chunk.empty() && splitter.feed(chunk))
    if (auto read_error = read_chunk(in.fd, in.name, chunk)) return read_error;
  if (!error && splitter.problem().empty()) splitter.finish();
  if (error) return error;
  if (!splitter.problem().empty()) return in.name + ": " + splitter.problem();
  commit(found);
  return std::nullopt;
}

std::optional<std::string> FileReader::read(const std::string& path) {
  Input in;
  if (auto err = open_input(path, in)) return err;
  // The first significant byte says JSON or YAML, as for a text read whole.
  std::string head, chunk;
  while (true) {
    if (auto err = read_chunk(in.fd, in.name, chunk)) return err;
    head += chunk;
    const size_t first = first_significant(head);
    if (chunk.empty() && first == std::string_view::npos) return std::nullopt;  // nothing in it
    if (first == std::string_view::npos) continue;
    if (head[first] == '{' || head[first] == '[') return read_json(in, std::move(head));
    return read_yaml(in, head);
  }
}

std::optional<std::string> FileReader::judge_item(AuditKind& kind, std::string_view text, const std::string& name) {
  simdjson::dom::element element;
  if (auto err = parse_padded(parser_, text, buffer_, element))
    return name + ": cannot re-read an object (did the file change while it was read?): " + simdjson::error_message(err);
  if (has_duplicate_keys(element)) {
    const Json object = Json::parse(text, nullptr, false);
    if (object.is_discarded()) return name + ": cannot re-read an object";
    normalized_ = to_json_text(object);
    if (auto err = parse_padded(parser_, normalized_, buffer_, element))
      return name + ": cannot re-read an object: " + simdjson::error_message(err);
  }
  std::string_view api_version;
  if (element["apiVersion"].get(api_version)) api_version = {};
  const size_t slash = api_version.find('/');
  const std::string_view version = slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  if (kind.version != version) kind.version = std::string(version);
  auditor_.add(kind, element);
  return std::nullopt;
}

std::optional<std::string> FileReader::judge_run(const Run& run) {
  const ByteStore& store = *stores_[run.store];
  AuditKind kind = kinds_[run.kind];
  JsonValueSplitter splitter;
  std::optional<std::string> error;
  uint64_t seen = 0;
  const auto on_value = [&](std::string_view text) {
    if (error) return;
    ++seen;
    error = judge_item(kind, text, store.name());
  };
  std::string window, read_error;
  for (uint64_t at = run.begin; at < run.end && !error;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, run.end - at));
    if (!store.read(at, n, window, read_error)) return read_error;
    splitter.feed(window, on_value);
    at += n;
  }
  if (!error) splitter.finish(on_value);
  if (error) return error;
  if (seen != run.count) return store.name() + ": changed while it was read (run the audit again)";
  return std::nullopt;
}

std::optional<std::string> FileReader::judge() {
  if (cluster::allow_stored_depth(parser_)) return std::string("out of memory for the JSON parser");
  // Kind by kind, in the kinds' order; within a kind, in the order the inputs held them.
  std::stable_sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.kind < b.kind; });
  for (const Run& run : runs_)
    if (auto err = judge_run(run)) return err;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> read_files_into(const std::vector<std::string>& paths, const std::vector<AuditKind>& kinds,
                                           Auditor& auditor, const FileReadOptions& options) {
  FileReader reader(kinds, auditor, options);
  if (cluster::allow_stored_depth(reader.parser())) return std::string("out of memory for the JSON parser");
  for (const std::string& path : paths)
    if (auto err = reader.read(path)) return err;
  return reader.judge();
}

}  // namespace gpu_admission::webhook::audit
