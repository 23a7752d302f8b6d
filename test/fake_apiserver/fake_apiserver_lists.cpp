// The fake API server's lists and watches (see fake_apiserver.h): pages of a collection in
// namespace/name order (limit, continue tokens that expire_continue_tokens() makes answer 410
// Gone; remainingItemCount from a sorted index of the keys), label and field selectors, and
// chunked watch streams with bookmarks.
#include <httplib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <optional>
#include <vector>

#include "test/fake_apiserver/fake_apiserver.h"
#include "test/fake_apiserver/fake_apiserver_internal.h"

namespace cluster_test {
namespace {

using namespace std::chrono_literals;

// One requirement of a selector: `key=value`, `key!=value`, `key`, `!key`, `key in (a,b)`,
// `key notin (a,b)`.
struct Requirement {
  enum class Op { Equals, NotEquals, Exists, NotExists, In, NotIn };
  std::string key;
  Op op = Op::Exists;
  std::vector<std::string> values;

  // `value`: the label's (or field's) value, null when the object has none.
  bool matches(const std::string* value) const {
    const bool listed = value != nullptr && std::find(values.begin(), values.end(), *value) != values.end();
    switch (op) {
      case Op::Equals: case Op::In: return listed;
      case Op::NotEquals: case Op::NotIn: return !listed;
      case Op::Exists: return value != nullptr;
      case Op::NotExists: return value == nullptr;
    }
    return false;
  }
};

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

bool plain_word(std::string_view text) {
  return !text.empty() && text.find_first_of(" ()!=,") == std::string_view::npos;
}

// The operators written between a key and one value, tried in this order.
struct InfixOperator {
  std::string_view text;
  Requirement::Op op;
};
constexpr std::array<InfixOperator, 3> kInfixOperators = {{
    {"!=", Requirement::Op::NotEquals}, {"==", Requirement::Op::Equals}, {"=", Requirement::Op::Equals}}};
// The set operators, written `key in (a,b)`.
constexpr std::array<InfixOperator, 2> kSetOperators = {
    {{" notin ", Requirement::Op::NotIn}, {" in ", Requirement::Op::In}}};

bool parse_requirement(std::string_view term, Requirement& out, std::string& error) {
  term = trimmed(term);
  const auto fail = [&] {
    error = "unable to parse requirement: '" + std::string(term) + "'";
    return false;
  };
  for (const auto& [text, op] : kSetOperators) {
    const size_t at = term.find(text);
    if (at == std::string_view::npos) continue;
    out = {std::string(trimmed(term.substr(0, at))), op, {}};
    std::string_view values = trimmed(term.substr(at + text.size()));
    if (!plain_word(out.key) || values.size() < 2 || values.front() != '(' || values.back() != ')') return fail();
    values = values.substr(1, values.size() - 2);
    for (size_t start = 0; start <= values.size();) {
      const size_t comma = std::min(values.find(',', start), values.size());
      out.values.emplace_back(trimmed(values.substr(start, comma - start)));
      if (!plain_word(out.values.back())) return fail();
      start = comma + 1;
    }
    return true;
  }
  for (const auto& [text, op] : kInfixOperators) {
    const size_t at = term.find(text);
    if (at == std::string_view::npos) continue;
    out = {std::string(trimmed(term.substr(0, at))), op, {std::string(trimmed(term.substr(at + text.size())))}};
    // `a=` selects an empty value.
    return plain_word(out.key) && (out.values[0].empty() || plain_word(out.values[0])) ? true : fail();
  }
  const bool negated = !term.empty() && term.front() == '!';
  out = {std::string(trimmed(term.substr(negated ? 1 : 0))),
         negated ? Requirement::Op::NotExists : Requirement::Op::Exists,
         {}};
  return plain_word(out.key) ? true : fail();
}

// A selector: requirements separated by commas (those inside parentheses belong to a set).
bool parse_selector(std::string_view text, std::vector<Requirement>& out, std::string& error) {
  if (trimmed(text).empty()) return true;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '(') ++depth;
    if (i < text.size() && text[i] == ')') --depth;
    if (i < text.size() && (text[i] != ',' || depth > 0)) continue;
    Requirement requirement;
    if (!parse_requirement(text.substr(start, i - start), requirement, error)) return false;
    out.push_back(std::move(requirement));
    start = i + 1;
  }
  return true;
}

// The fields a field selector may name: these two on every resource, and the pod fields the
// real server indexes on pods.
constexpr std::array<std::string_view, 2> kCommonFields = {"metadata.name", "metadata.namespace"};
constexpr std::array<std::string_view, 7> kPodFields = {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                                                        "spec.serviceAccountName", "status.phase", "status.podIP",
                                                        "status.nominatedNodeName"};

bool parse_fields(const ResourceType& type, std::string_view text, std::vector<Requirement>& out, std::string& error) {
  if (!parse_selector(text, out, error)) return false;
  const bool pods = type.group.empty() && type.resource == "pods";
  for (const Requirement& requirement : out) {
    const auto known = [&](const auto& fields) {
      return std::find(fields.begin(), fields.end(), requirement.key) != fields.end();
    };
    if (requirement.op != Requirement::Op::Equals && requirement.op != Requirement::Op::NotEquals) {
      error = "invalid field selector: " + requirement.key + ": only =, == and != are supported";
      return false;
    }
    if (!known(kCommonFields) && !(pods && known(kPodFields))) {
      error = "field label not supported: " + requirement.key;
      return false;
    }
  }
  return true;
}

// An object's string at a dotted path ("" when it has none, as the real server reads it).
std::string field_of(const Json& object, std::string_view path) {
  const Json* at = &object;
  for (size_t start = 0; start <= path.size();) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const auto it = at->is_object() ? at->find(std::string(path.substr(start, dot - start))) : at->end();
    if (!at->is_object() || it == at->end()) return "";
    at = &*it;
    start = dot + 1;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

bool selected(const Json& object, const std::vector<Requirement>& labels, const std::vector<Requirement>& fields) {
  const Json* label_map = nullptr;
  if (const auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object())
    if (const auto found = metadata->find("labels"); found != metadata->end() && found->is_object())
      label_map = &*found;
  for (const Requirement& requirement : labels) {
    std::optional<std::string> value;
    if (label_map != nullptr)
      if (const auto found = label_map->find(requirement.key); found != label_map->end() && found->is_string())
        value = found->get<std::string>();
    if (!requirement.matches(value ? &*value : nullptr)) return false;
  }
  for (const Requirement& requirement : fields) {
    const std::string value = field_of(object, requirement.key);
    if (!requirement.matches(&value)) return false;
  }
  return true;
}

// Continue tokens, "page+EPOCH/HEX=": the continuation's epoch and the hex of the last key
// returned. The '+', '/' and '=' make a client that does not escape the token fail.
std::string continue_token(int epoch, std::string_view last_key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token = "page+" + std::to_string(epoch) + "/";
  for (const unsigned char c : last_key) {
    token += kHex[c >> 4];
    token += kHex[c & 15];
  }
  return token + "=";
}

bool read_continue_token(std::string_view token, int& epoch, std::string& last_key) {
  if (token.size() < 8 || token.substr(0, 5) != "page+" || token.back() != '=') return false;
  const auto [end, error] = std::from_chars(token.data() + 5, token.data() + token.size(), epoch);
  if (error != std::errc() || *end != '/') return false;
  const std::string_view hex = token.substr(static_cast<size_t>(end - token.data()) + 1);
  const std::string_view digits = hex.substr(0, hex.size() - 1);
  if (digits.size() % 2 != 0) return false;
  last_key.clear();
  for (size_t i = 0; i < digits.size(); i += 2) {
    unsigned value = 0;
    const auto [stop, bad] = std::from_chars(digits.data() + i, digits.data() + i + 2, value, 16);
    if (bad != std::errc() || stop != digits.data() + i + 2) return false;
    last_key += static_cast<char>(value);
  }
  return true;
}

bool read_limit(const httplib::Request& req, size_t& limit) {
  limit = 0;
  if (!req.has_param("limit")) return true;
  const std::string text = req.get_param_value("limit");
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), limit);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

void FakeApiServer::list(const Target& target, const httplib::Request& req, httplib::Response& res) {
  std::vector<Requirement> labels, fields;
  std::string error;
  if (!parse_selector(req.get_param_value("labelSelector"), labels, error) ||
      !parse_fields(target.type, req.get_param_value("fieldSelector"), fields, error))
    return fake::reply(res, 400, fake::bad_request(error));
  size_t limit = 0;
  if (!read_limit(req, limit)) return fake::reply(res, 400, fake::bad_request("limit must be a non-negative integer"));
  limit = std::min(limit == 0 ? max_page : limit, max_page);
  const std::string token_in = req.get_param_value("continue");

  std::unique_lock lock(mutex_);
  int epoch = continue_epoch_;
  std::string after;  // the key the page starts after
  if (!token_in.empty() && !read_continue_token(token_in, epoch, after))
    return fake::reply(res, 400, fake::bad_request("continue key is not valid: " + token_in));
  if (epoch < continue_epoch_) {
    Json gone = fake::status(410, "Expired",
                             "The provided continue parameter is too old to display a consistent list result. You can "
                             "start a new list without the continue parameter.");
    // An inconsistent continuation, as the real server offers one.
    gone["metadata"]["continue"] = continue_token(continue_epoch_, after);
    return fake::reply(res, 410, gone);
  }
  counters.list_pages++;
  list_pages_[target.name]++;
  if (token_in.empty()) {
    counters.lists++;
    lists_[target.name]++;
  }
  // The page: the keys after `after` in the namespace asked for; a full page says "continue"
  // when keys are left, whether or not they match, as etcd's paging does.
  const std::string prefix = target.namespace_name.empty() ? "" : target.namespace_name + "/";
  const auto& store = objects_[target.name];
  auto it = after.empty() ? store.lower_bound(prefix) : store.upper_bound(after);
  const auto in_range = [&](auto at) { return at != store.end() && at->first.compare(0, prefix.size(), prefix) == 0; };
  const bool filtered = !labels.empty() || !fields.empty();
  std::vector<const Stored*> page;
  std::string last_key;
  size_t raw_bytes = 0;
  for (; in_range(it) && page.size() < limit; ++it) {
    const Stored& stored = it->second;
    if (filtered && (stored.is_raw || !selected(stored.object, labels, fields))) continue;
    page.push_back(&stored);
    raw_bytes += stored.raw.size() + 1;
    last_key = it->first;
  }
  Json metadata = {{"resourceVersion", std::to_string(rv_)}};
  if (in_range(it)) {
    metadata["continue"] = continue_token(continue_epoch_, last_key);
    if (!filtered) metadata["remainingItemCount"] = keys_from_locked(target.name, it->first, prefix);
  }
  // The list's text made once at its size: a page of a large store is megabytes.
  std::string text = R"({"kind":)" + Json(target.type.kind + "List").dump() + R"(,"apiVersion":)" +
                     Json(target.type.group_version()).dump() + R"(,"metadata":)" + metadata.dump() + R"(,"items":[)";
  text.reserve(text.size() + raw_bytes + 2);
  for (const Stored* stored : page) {
    if (stored != page.front()) text += ',';
    if (stored->is_raw) {
      text += stored->raw;
      continue;
    }
    Json item = stored->object;
    item.erase("apiVersion");
    item.erase("kind");
    text += item.dump();
  }
  text += "]}";
  lock.unlock();
  counters.items += static_cast<long long>(page.size());
  fake::reply_text(res, 200, std::move(text));
}

size_t FakeApiServer::keys_from_locked(const std::string& name, const std::string& from, const std::string& prefix) {
  auto& keys = key_index_[name];
  const auto& store = objects_[name];
  if (keys.size() != store.size()) {
    keys.clear();
    keys.reserve(store.size());
    for (const auto& [key, stored] : store) keys.push_back(&key);
  }
  const auto less = [](const std::string* key, const std::string& value) { return *key < value; };
  const auto first = std::lower_bound(keys.begin(), keys.end(), from, less);
  // The keys starting with `prefix` end before prefix's last byte plus one ("team-a/" -> "team-a0").
  auto end = keys.end();
  if (!prefix.empty()) {
    std::string past = prefix;
    past.back() = static_cast<char>(past.back() + 1);
    end = std::lower_bound(first, keys.end(), past, less);
  }
  return static_cast<size_t>(end - first);
}

// A chunked stream of the events after the requested resourceVersion, one JSON line each (the
// first one split over two writes), bookmarks every bookmark_ms, the end after timeoutSeconds,
// and an abrupt close on cut_watches() or stop(). Selectors are refused: watches are not filtered.
void FakeApiServer::watch(const Target& target, const httplib::Request& req, httplib::Response& res) {
  if (!req.get_param_value("labelSelector").empty() || !req.get_param_value("fieldSelector").empty())
    return fake::reply(res, 400, fake::bad_request("the fake API server does not filter watches by selectors"));
  counters.watches++;
  struct State {
    long long from = 0;
    int generation = 0;
    bool expired = false;
    bool first = true;
    std::chrono::steady_clock::time_point deadline, next_bookmark;
  };
  auto state = std::make_shared<State>();
  state->from = std::atoll(req.get_param_value("resourceVersion").c_str());
  const int timeout = req.has_param("timeoutSeconds") ? std::atoi(req.get_param_value("timeoutSeconds").c_str()) : 60;
  state->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  state->next_bookmark = std::chrono::steady_clock::now() + std::chrono::milliseconds(bookmark_ms.load());
  {
    std::lock_guard lock(mutex_);
    state->generation = cut_generation_;
    state->expired = state->from < compacted_ || expire_next_watch_ == target.name;
    if (expire_next_watch_ == target.name) expire_next_watch_.clear();
  }
  const std::string prefix = target.namespace_name.empty() ? "" : target.namespace_name + "/";
  res.set_chunked_content_provider("application/json", [this, target, prefix, state](size_t, httplib::DataSink& sink) {
    if (state->expired) {
      const std::string line =
          Json{{"type", "ERROR"}, {"object", fake::status(410, "Expired", "too old resource version")}}.dump() + "\n";
      sink.write(line.data(), line.size());
      sink.done();
      return true;
    }
    std::vector<std::string> lines;
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, 50ms);
      if (stopping_ || state->generation != cut_generation_) return false;  // abrupt: no final chunk
      for (const Event& event : events_) {
        if (event.rv <= state->from || event.resource != target.name ||
            event.key.compare(0, prefix.size(), prefix) != 0)
          continue;
        if (event.object.is_null())
          lines.push_back(R"({"type":")" + event.type + R"(","object":)" + event.raw + "}\n");
        else
          lines.push_back(Json{{"type", event.type}, {"object", event.object}}.dump() + "\n");
        state->from = event.rv;
      }
      const auto now = std::chrono::steady_clock::now();
      if (lines.empty() && now >= state->next_bookmark) {
        lines.push_back(Json{{"type", "BOOKMARK"},
                             {"object", {{"kind", target.type.kind}, {"apiVersion", target.type.group_version()},
                                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}}.dump() + "\n");
        state->from = std::max(state->from, rv_);
        state->next_bookmark = now + std::chrono::milliseconds(bookmark_ms.load());
      }
    }
    for (const std::string& line : lines) {
      if (state->first && line.size() > 10) {  // split a line over two chunks
        state->first = false;
        if (!sink.write(line.data(), 7) || !sink.write(line.data() + 7, line.size() - 7)) return false;
      } else if (!sink.write(line.data(), line.size())) {
        return false;
      }
    }
    if (std::chrono::steady_clock::now() >= state->deadline) sink.done();
    return true;
  });
}

}  // namespace cluster_test
