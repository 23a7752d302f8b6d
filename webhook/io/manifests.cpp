#include "webhook/io/manifests.h"

#include "webhook/io/text_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

std::string located(const std::string& source, int line) {
  return line > 0 ? source + ":" + std::to_string(line) : source;
}

const Json* string_member(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? &*it : nullptr;
}

void collect(Json object, const std::string& where, ManifestRead& out, int depth) {
  if (!object.is_object()) {
    out.objects.emplace_back(std::move(object), where);  // reported later as not an object
    return;
  }
  const Json* kind = string_member(object, "kind");
  std::string kind_text = kind ? kind->get<std::string>() : "";
  if (depth < 4 && kind_text.size() >= 4 && kind_text.ends_with("List") && object.contains("items") &&
      object["items"].is_array()) {
    size_t i = 0;
    for (auto& item : object["items"]) collect(std::move(item), where + " items[" + std::to_string(i++) + "]", out, depth + 1);
    return;
  }
  if (kind_text == "AdmissionReview" && object.contains("request") && object["request"].is_object()) {
    Json& request = object["request"];
    ManifestObject m;
    m.source = where;
    m.from_review = true;
    if (auto* ns = string_member(request, "namespace")) m.review_namespace = ns->get<std::string>();
    if (auto* op = string_member(request, "operation")) m.review_operation = op->get<std::string>();
    if (auto* uid = string_member(request, "uid")) m.review_uid = uid->get<std::string>();
    if (request.contains("userInfo"))
      if (auto* user = string_member(request["userInfo"], "username")) m.review_username = user->get<std::string>();
    m.object = request.contains("object") ? request["object"] : Json();
    m.review = std::move(object);
    out.objects.push_back(std::move(m));
    return;
  }
  out.objects.emplace_back(std::move(object), where);
}

}  // namespace

ManifestRead read_manifest_text(std::string_view text, const std::string& source_name, int first_line) {
  ManifestRead out;
  YamlLimits limits;
  limits.max_depth = kMaxObjectDepth;  // whatever the API server stores
  limits.record_marks = false;
  YamlParse parsed = parse_yaml_or_json(text, limits);
  if (parsed.error) {
    std::string where = source_name;
    if (parsed.error->mark.line > 0) {
      where += ":" + std::to_string(parsed.error->mark.line + first_line - 1);
      if (parsed.error->mark.column > 0) where += ":" + std::to_string(parsed.error->mark.column);
    }
    out.error = where + ": " + parsed.error->message;
    return out;
  }
  for (auto& doc : parsed.documents) collect(std::move(doc.value), located(source_name, doc.line > 0 ? doc.line + first_line - 1 : 0), out, 0);
  return out;
}

ManifestRead read_manifest_file(const std::string& path) {
  const std::string name = path == "-" ? "<stdin>" : path;
  TextFile file = read_text_file(path, kMaxManifestBytes);
  if (!file.error.empty()) {
    ManifestRead out;
    out.error = name + ": " + file.error;
    return out;
  }
  return read_manifest_text(file.text, name);
}

}  // namespace gpu_admission::webhook
