// What the fake API server's units share (fake_apiserver*.cpp): Status objects and replies in
// the real API server's words, the request body limit, and timestamps.
#pragma once

#include <httplib.h>

#include <string>

#include "test/fake_apiserver/fake_apiserver.h"

namespace cluster_test::fake {

// The API server's limit on a request body (3 MiB), answered with 413.
inline constexpr size_t kMaxRequestBody = 3u << 20;

inline Json status(int code, const std::string& reason, const std::string& message, Json details = nullptr) {
  Json body = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Failure"},
               {"message", message}, {"reason", reason}};
  if (!details.is_null()) body["details"] = std::move(details);
  body["code"] = code;
  return body;
}

inline void reply(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

// A JSON text as the body, moved in (httplib's set_content copies).
inline void reply_text(httplib::Response& res, int code, std::string text) {
  res.status = code;
  res.body = std::move(text);
  res.set_header("Content-Type", "application/json");
}

// The details of a Status about one object: its name, group and plural (the real server's "kind").
inline Json object_details(const ResourceType& type, const std::string& name) {
  return {{"name", name}, {"group", type.group}, {"kind", type.resource}};
}

// `pods "x"`, `policyreports.wgpolicyk8s.io "x"`: how the real server names an object.
inline std::string quoted(const ResourceType& type, const std::string& name) {
  return type.name() + " \"" + name + "\"";
}

inline Json not_found(const ResourceType& type, const std::string& name) {
  return status(404, "NotFound", quoted(type, name) + " not found", object_details(type, name));
}

inline Json no_such_path() {
  return status(404, "NotFound", "the server could not find the requested resource", Json::object());
}

inline Json bad_request(const std::string& message) { return status(400, "BadRequest", message); }

// Now in RFC 3339 (seconds), as metadata.creationTimestamp is written.
std::string now_rfc3339();

}  // namespace cluster_test::fake
