// Kubeconfig files read and merged (see kubeconfig_merge.h). The text goes through the
// project's one YAML reader (io/yaml_json.h) and is then read as a JSON tree.
#include "webhook/cluster/kubeconfig_merge.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr size_t kMaxKubeconfigBytes = 4u << 20;

// The three lists of named entries: the list's key, the key of each entry's mapping, and where
// the merged kubeconfig keeps them.
struct ListKind {
  const char* list;
  const char* entry;
  std::map<std::string, KubeconfigEntry> MergedKubeconfig::*target;
};
constexpr ListKind kLists[] = {{"clusters", "cluster", &MergedKubeconfig::clusters},
                               {"users", "user", &MergedKubeconfig::users},
                               {"contexts", "context", &MergedKubeconfig::contexts}};

std::string located(const std::string& file, const YamlError& error) {
  std::string where = "kubeconfig " + file;
  if (error.mark.line > 0) where += ":" + std::to_string(error.mark.line) + ":" + std::to_string(error.mark.column);
  return where + ": " + error.message;
}

// One list of a file: its entries by name (a name twice in one file is an error, as in kubectl).
bool read_list(const Json& root, const ListKind& kind, const std::string& file,
               std::map<std::string, KubeconfigEntry>& out, std::string& error) {
  const auto list = root.find(kind.list);
  if (list == root.end() || list->is_null()) return true;
  const std::string where = "kubeconfig " + file + ": " + kind.list;
  if (!list->is_array()) {
    error = where + " is not a list";
    return false;
  }
  size_t index = 0;
  for (const Json& item : *list) {
    const std::string at = where + "[" + std::to_string(index++) + "]";
    const auto name = item.is_object() ? item.find("name") : item.end();
    if (!item.is_object() || name == item.end() || !name->is_string() || name->get<std::string>().empty()) {
      error = at + " has no name";
      return false;
    }
    const auto entry = item.find(kind.entry);
    if (entry != item.end() && !entry->is_null() && !entry->is_object()) {
      error = at + " (\"" + name->get<std::string>() + "\"): " + kind.entry + " is not a mapping";
      return false;
    }
    KubeconfigEntry value{entry == item.end() || entry->is_null() ? Json::object() : *entry, file};
    if (!out.emplace(name->get<std::string>(), std::move(value)).second) {
      error = where + ": the name \"" + name->get<std::string>() + "\" is there twice";
      return false;
    }
  }
  return true;
}

}  // namespace

bool merge_kubeconfig_text(std::string_view text, const std::string& file, MergedKubeconfig& into,
                           std::string& error) {
  YamlLimits limits;
  limits.record_marks = false;
  const YamlParse parse = parse_yaml_or_json(text, limits);
  if (parse.error) {
    error = located(file, *parse.error);
    return false;
  }
  if (parse.documents.size() > 1) {
    error = "kubeconfig " + file + " holds more than one YAML document";
    return false;
  }
  if (parse.documents.empty() || parse.documents.front().value.is_null()) {  // empty: adds nothing
    into.files.push_back(file);
    return true;
  }
  const Json& root = parse.documents.front().value;
  if (!root.is_object()) {
    error = "kubeconfig " + file + " is not a mapping";
    return false;
  }
  // Read the whole file first: a broken file adds nothing.
  std::map<std::string, KubeconfigEntry> lists[3];
  for (size_t i = 0; i < 3; ++i)
    if (!read_list(root, kLists[i], file, lists[i], error)) return false;
  const auto current = root.find("current-context");
  if (current != root.end() && !current->is_null() && !current->is_string()) {
    error = "kubeconfig " + file + ": current-context is not a string";
    return false;
  }
  into.files.push_back(file);
  for (size_t i = 0; i < 3; ++i) {
    auto& target = into.*(kLists[i].target);
    for (auto& [name, entry] : lists[i]) target.emplace(name, std::move(entry));  // the first file wins
  }
  if (into.current_context.empty() && current != root.end() && current->is_string() &&
      !current->get<std::string>().empty()) {
    into.current_context = current->get<std::string>();
    into.current_context_file = file;
  }
  return true;
}

bool merge_kubeconfig_file(const std::string& file, MergedKubeconfig& into, bool& missing, std::string& error) {
  missing = false;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 && errno == ENOENT) {
    missing = true;
    return true;
  }
  const TextFile read = read_text_file(file == "-" ? "./-" : file, kMaxKubeconfigBytes);
  if (!read.error.empty()) {
    error = "kubeconfig " + file + ": " + read.error;
    return false;
  }
  return merge_kubeconfig_text(read.text, file, into, error);
}

std::vector<std::string> split_kubeconfig_list(std::string_view list) {
  std::vector<std::string> files;
  std::set<std::string, std::less<>> seen;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = std::min(list.find(':', start), list.size());
    const std::string_view part = list.substr(start, colon - start);
    if (!part.empty() && seen.insert(std::string(part)).second) files.emplace_back(part);
    start = colon + 1;
  }
  return files;
}

}  // namespace gpu_admission::webhook::cluster
