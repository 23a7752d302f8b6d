// The fake API server's writes (see fake_apiserver.h): POST, PUT and DELETE of a writable
// resource's objects (the PolicyReport CRD by default) with the real server's checks and
// answers: 413 past 3 MiB, 400 for a body of another kind or namespace, 422 for invalid
// content, 409 AlreadyExists on create, 409 Conflict for a stale resourceVersion, 404 for an
// update or delete of nothing.
#include <httplib.h>

#include <cctype>

#include "test/fake_apiserver/fake_apiserver.h"
#include "test/fake_apiserver/fake_apiserver_internal.h"

namespace cluster_test {
namespace {

using Problems = std::vector<std::string>;

std::string text_of(const Json& object, const char* field) {
  const auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A lowercase RFC 1123 subdomain, what object names must be.
bool valid_name(std::string_view name) {
  const auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
  };
  if (name.empty() || name.size() > 253 || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// A label value: at most 63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric.
bool valid_label_value(std::string_view value) {
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (value.empty()) return true;
  if (value.size() > 63 || !alnum(value.front()) || !alnum(value.back())) return false;
  return std::all_of(value.begin(), value.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

void check_metadata(const Json& metadata, Problems& problems) {
  const auto labels = metadata.find("labels");
  if (labels == metadata.end()) return;
  if (!labels->is_object()) return problems.push_back("metadata.labels: Invalid value: must be a map of strings");
  for (const auto& [key, value] : labels->items()) {
    if (!value.is_string() || !valid_label_value(value.get<std::string>()))
      problems.push_back("metadata.labels: Invalid value: " + value.dump() +
                         ": a valid label must be an empty string "
                         "or consist of alphanumeric characters, '-', '_' or '.', at most 63 characters (label " +
                         key + ")");
  }
}

Json invalid(const ResourceType& type, const std::string& name, const Problems& problems) {
  std::string message = type.kind + "." + type.group + " \"" + name + "\" is invalid: ";
  Json causes = Json::array();
  for (size_t i = 0; i < problems.size(); ++i) {
    const size_t colon = problems[i].find(": ");
    causes.push_back(
        {{"reason", "FieldValueInvalid"}, {"message", problems[i]}, {"field", problems[i].substr(0, colon)}});
    message += (i == 0 ? (problems.size() > 1 ? "[" : "") : ", ") + problems[i];
  }
  if (problems.size() > 1) message += "]";
  Json details = {{"name", name}, {"group", type.group}, {"kind", type.kind}, {"causes", causes}};
  return fake::status(422, "Invalid", message, details);
}

Json conflict(const ResourceType& type, const std::string& name, const std::string& why) {
  return fake::status(409, "Conflict", "Operation cannot be fulfilled on " + fake::quoted(type, name) + ": " + why,
                      fake::object_details(type, name));
}

// Reads a written body into `object`, checked as the real server decodes it: within the request
// limit, a JSON object of the resource's apiVersion and kind, metadata in the URL's namespace.
// False with the answer in `res` when it cannot be stored.
bool read_written(const ResourceType& type, const std::string& namespace_name, const std::string& body, Json& object,
                  httplib::Response& res) {
  if (body.size() > fake::kMaxRequestBody) {
    fake::reply(res, 413, fake::status(413, "RequestEntityTooLarge",
                                       "Request entity too large: limit is " + std::to_string(fake::kMaxRequestBody)));
    return false;
  }
  object = Json::parse(body, nullptr, false);
  std::string problem;
  if (object.is_discarded() || !object.is_object()) problem = "the body of the request is not a JSON object";
  else if (!object.contains("apiVersion")) problem = "Object 'apiVersion' is missing";
  else if (!object.contains("kind")) problem = "Object 'Kind' is missing";
  else if (object["apiVersion"] != type.group_version())
    problem = "the API version in the data (" + text_of(object, "apiVersion") +
              ") does not match the expected API version (" + type.group_version() + ")";
  else if (object["kind"] != type.kind)
    problem =
        "the kind in the data (" + text_of(object, "kind") + ") does not match the expected kind (" + type.kind + ")";
  else if (object.contains("metadata") && !object["metadata"].is_object()) problem = "metadata must be an object";
  if (problem.empty()) {
    Json& metadata = object["metadata"];
    const std::string namespace_in_body = text_of(metadata, "namespace");
    if (type.namespaced && !namespace_in_body.empty() && namespace_in_body != namespace_name)
      problem = "the namespace of the provided object does not match the namespace sent on the request";
    // A cluster-scoped object has no namespace; the server clears one.
    if (type.namespaced) metadata["namespace"] = namespace_name;
    else metadata.erase("namespace");
  }
  if (problem.empty()) return true;
  fake::reply(res, 400, fake::bad_request(problem));
  return false;
}

Problems content_problems(const ResourceType& type, Json& object) {
  Problems problems;
  check_metadata(object["metadata"], problems);
  if (type.validate) {
    Problems more = type.validate(object);
    problems.insert(problems.end(), more.begin(), more.end());
  }
  return problems;
}

// Whether anything outside metadata differs (the real server then bumps metadata.generation).
bool content_changed(const Json& before, const Json& after) {
  Json a = before, b = after;
  a.erase("metadata");
  b.erase("metadata");
  return a != b;
}

}  // namespace

void FakeApiServer::create(const Target& target, const httplib::Request& req, httplib::Response& res) {
  Json object;
  if (!read_written(target.type, target.namespace_name, req.body, object, res)) return;
  Json& metadata = object["metadata"];
  std::string name = text_of(metadata, "name");
  {
    std::lock_guard lock(mutex_);
    if (name.empty() && !text_of(metadata, "generateName").empty()) {
      name = text_of(metadata, "generateName") + next_uid_locked().substr(31);  // five characters more
      metadata["name"] = name;
    }
    Problems problems = content_problems(target.type, object);
    if (name.empty())
      problems.insert(problems.begin(), "metadata.name: Required value: name or generateName is required");
    else if (!valid_name(name))
      problems.insert(problems.begin(),
                      "metadata.name: Invalid value: \"" + name +
                          "\": a lowercase RFC 1123 subdomain must "
                          "consist of lower case alphanumeric characters, '-' or '.', and must start and "
                          "end with an alphanumeric character");
    if (!problems.empty()) return fake::reply(res, 422, invalid(target.type, name, problems));
    if (!text_of(metadata, "resourceVersion").empty())
      return fake::reply(res, 500, fake::status(500, "InternalError", "Internal error occurred: resourceVersion should "
                                                                      "not be set on objects to be created"));
    const std::string key = text_of(metadata, "namespace") + "/" + name;
    if (objects_[target.name].count(key) > 0)
      return fake::reply(res, 409,
                         fake::status(409, "AlreadyExists", fake::quoted(target.type, name) + " already exists",
                                      fake::object_details(target.type, name)));
    metadata["uid"] = next_uid_locked();
    metadata["creationTimestamp"] = fake::now_rfc3339();
    metadata["generation"] = 1;
    store_locked(target.name, key, {object, {}, false}, true);
    counters.creates++;
    fake::reply(res, 201, objects_[target.name][key].object);
  }
  changed_.notify_all();
}

void FakeApiServer::update(const Target& target, const httplib::Request& req, httplib::Response& res) {
  Json object;
  if (!read_written(target.type, target.namespace_name, req.body, object, res)) return;
  Json& metadata = object["metadata"];
  const std::string name = text_of(metadata, "name");
  if (name != target.object_name)
    return fake::reply(res, 400,
                       fake::bad_request("the name of the object (" + name + ") does not match the name on the URL (" +
                                         target.object_name + ")"));
  {
    std::lock_guard lock(mutex_);
    const Problems problems = content_problems(target.type, object);
    if (!problems.empty()) return fake::reply(res, 422, invalid(target.type, name, problems));
    const std::string key = text_of(metadata, "namespace") + "/" + name;
    auto& store = objects_[target.name];
    const auto it = store.find(key);
    if (it == store.end()) return fake::reply(res, 404, fake::not_found(target.type, name));
    // put_raw text has no metadata to compare: any update replaces it.
    const Json before = it->second.is_raw ? Json::object() : it->second.object;
    const Json old_metadata = before.value("metadata", Json::object());
    const std::string rv = text_of(metadata, "resourceVersion"), uid = text_of(metadata, "uid");
    if (!rv.empty() && !it->second.is_raw && rv != text_of(old_metadata, "resourceVersion"))
      return fake::reply(res, 409,
                         conflict(target.type, name,
                                  "the object has been modified; please apply your changes "
                                  "to the latest version and try again"));
    if (!uid.empty() && !it->second.is_raw && uid != text_of(old_metadata, "uid"))
      return fake::reply(res, 409,
                         conflict(target.type, name,
                                  "Precondition failed: UID in precondition: " + uid +
                                      ", UID in object meta: " + text_of(old_metadata, "uid")));
    // What the server owns stays the server's.
    for (const char* field : {"uid", "creationTimestamp"})
      if (old_metadata.contains(field)) metadata[field] = old_metadata[field];
    const long long generation = old_metadata.value("generation", 1LL);
    metadata["generation"] = content_changed(before, object) ? generation + 1 : generation;
    store_locked(target.name, key, {object, {}, false}, true);
    counters.updates++;
    fake::reply(res, 200, store[key].object);
  }
  changed_.notify_all();
}

// DELETE, with the preconditions of a DeleteOptions body (uid, resourceVersion) checked.
void FakeApiServer::erase(const Target& target, const httplib::Request& req, httplib::Response& res) {
  const Json options = req.body.empty() ? Json::object() : Json::parse(req.body, nullptr, false);
  if (!options.is_object()) return fake::reply(res, 400, fake::bad_request("the body is not DeleteOptions"));
  const Json preconditions = options.value("preconditions", Json::object());
  {
    std::lock_guard lock(mutex_);
    const std::string key = target.namespace_name + "/" + target.object_name;
    auto& store = objects_[target.name];
    const auto it = store.find(key);
    if (it == store.end()) return fake::reply(res, 404, fake::not_found(target.type, target.object_name));
    const Json metadata = it->second.is_raw ? Json::object() : it->second.object.value("metadata", Json::object());
    for (const auto& [field, said] : {std::pair{"uid", "UID"}, std::pair{"resourceVersion", "ResourceVersion"}}) {
      const std::string wanted = text_of(preconditions, field), actual = text_of(metadata, field);
      if (!wanted.empty() && wanted != actual)
        return fake::reply(res, 409,
                           conflict(target.type, target.object_name,
                                    std::string("Precondition failed: ") + said + " in precondition: " + wanted + ", " +
                                        said + " in object meta: " + actual));
    }
    Json details = fake::object_details(target.type, target.object_name);
    details["uid"] = text_of(metadata, "uid");
    remove_locked(target.name, key);
    counters.deletes++;
    Json done = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Success"},
                 {"details", details}};
    fake::reply(res, 200, done);
  }
  changed_.notify_all();
}

}  // namespace cluster_test
