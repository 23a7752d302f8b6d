// Helpers for the fake API server's own tests: an HTTPS client that verifies the server and
// sends its token (httplib's SSLClient: GET, POST, PUT, PATCH, DELETE), paging through a list,
// and the objects they put and write.
#pragma once

#include <httplib.h>

#include <cctype>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cluster_test_support.h"

namespace cluster_test {

// An HTTPS client of the fake server that verifies its certificate and sends its token.
class Client {
 public:
  explicit Client(const FakeApiServer& server) : token(server.token), http_("127.0.0.1", server.port()) {
    write_text(dir_.file("ca.crt"), server.ca_pem());
    http_.set_ca_cert_path(dir_.file("ca.crt"));
    http_.enable_server_certificate_verification(true);
  }
  struct Answer {
    int status = 0;
    Json body;
    std::string content_type;
  };
  Answer send(const std::string& method, const std::string& path, const std::string& body = "") {
    const httplib::Headers headers = {{"Authorization", "Bearer " + token}};
    httplib::Result result = method == "GET"    ? http_.Get(path, headers)
                             : method == "POST" ? http_.Post(path, headers, body, "application/json")
                             : method == "PUT"  ? http_.Put(path, headers, body, "application/json")
                             : method == "PATCH" ? http_.Patch(path, headers, body, "application/merge-patch+json")
                                                 : http_.Delete(path, headers, body, "application/json");
    if (!result) return {};
    return {result->status, Json::parse(result->body, nullptr, false), result->get_header_value("Content-Type")};
  }
  Answer send(const std::string& method, const std::string& path, const Json& body) {
    return send(method, path, body.dump());
  }
  std::string token;  // the bearer token sent

 private:
  TempDir dir_;
  httplib::SSLClient http_;
};

inline std::string escaped(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Every item of the list at `path` as namespace/name, page by page (`limit` each).
struct Listed {
  std::vector<std::string> keys;
  int pages = 0;
  bool typed_items = false;  // an item carried apiVersion or kind
};
inline Listed list_all(Client& client, const std::string& path, int limit) {
  Listed listed;
  std::string token;
  do {
    const std::string url = path + (path.find('?') == std::string::npos ? "?" : "&") +
                            "limit=" + std::to_string(limit) + (token.empty() ? "" : "&continue=" + escaped(token));
    const auto answer = client.send("GET", url);
    INFO(url);
    REQUIRE(answer.status == 200);
    for (const Json& item : answer.body["items"]) {
      listed.typed_items = listed.typed_items || item.contains("apiVersion") || item.contains("kind");
      listed.keys.push_back(item["metadata"].value("namespace", "") + "/" + item["metadata"].value("name", ""));
    }
    token = answer.body["metadata"].value("continue", "");
    ++listed.pages;
  } while (!token.empty() && listed.pages < 10000);
  return listed;
}

inline Json pod(const std::string& ns, const std::string& name, const Json& labels = Json::object()) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"spec", {{"containers", Json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

inline const ResourceType kPyTorchJobs = {"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"};

inline Json policy_report_object(const std::string& ns, const std::string& result = "fail") {
  return {
      {"apiVersion", "wgpolicyk8s.io/v1alpha2"},
      {"kind", "PolicyReport"},
      {"metadata",
       {{"name", "gpu-admission"}, {"namespace", ns}, {"labels", {{"app.kubernetes.io/managed-by", "gpu-admission"}}}}},
      {"summary", {{"pass", 1}, {"fail", 1}, {"warn", 0}, {"error", 0}, {"skip", 0}}},
      {"results",
       Json::array(
           {{{"policy", "gpu-admission"},
             {"rule", "gpu-cap"},
             {"result", result},
             {"severity", "medium"},
             {"scored", true},
             {"properties", {{"field", "spec"}}},
             {"timestamp", {{"seconds", 1700000000}, {"nanos", 0}}},
             {"resources",
              Json::array({{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train"}, {"namespace", ns}}})}}})}};
}

}  // namespace cluster_test
