// The audit benchmark's stand-in API server over HTTPS (audit_apiserver.h), on cpp-httplib's
// SSLServer with a self-signed localhost certificate (certs/certs.h).
#include "bench/audit_apiserver.h"

#include <httplib.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "bench/audit_discovery.h"
#include "certs/certs.h"

namespace gpu_admission::bench::audit {
namespace {

constexpr char kBase64Std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64(std::string_view in, const char* alphabet, bool pad) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += alphabet[(n >> shift) & 63];
  }
  if (i < in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) n |= uint8_t(in[i + 1]) << 8;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    if (i + 1 < in.size()) out += alphabet[(n >> 6) & 63];
    if (pad) out.append(i + 1 < in.size() ? 1 : 2, '=');
  }
  return out;
}

// Decodes base64url without padding; false on any other character.
bool unbase64url(std::string_view in, std::string& out) {
  uint32_t bits = 0;
  int count = 0;
  for (char c : in) {
    const char* at = std::char_traits<char>::find(kBase64Url, 64, c);
    if (!at) return false;
    bits = (bits << 6) | static_cast<uint32_t>(at - kBase64Url);
    if ((count += 6) >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return true;
}

// The API server's continue token: the key after which the next page starts.
std::string continue_token(long long rv, const std::string& last_key) {
  return base64(Json{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", last_key + std::string(1, '\0')}}.dump(), kBase64Url, false);
}

bool read_continue(const std::string& token, std::string& start) {
  std::string text;
  if (!unbase64url(token, text)) return false;
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("start") || !j["start"].is_string() || j.value("v", "") != "meta.k8s.io/v1") return false;
  start = j["start"].get<std::string>();
  return true;
}

void status(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
  res.status = code;
  res.set_content(Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Failure"},
                       {"message", message}, {"reason", reason}, {"code", code}}.dump(),
                  "application/json");
}

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

}  // namespace

AuditApiServer::AuditApiServer(const GeneratedCluster& cluster, std::string token)
    : cluster_(cluster), token_(std::move(token)) {}

AuditApiServer::~AuditApiServer() {
  stop();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

bool AuditApiServer::start(int port, std::string& error) {
  char pattern[] = "/tmp/gpu-admission-audit-standin-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (!made) return error = "cannot make a temporary directory for the certificate", false;
  dir_ = made;
  const auto pair = certs::generate_localhost_pair();
  if (pair.cert_pem.empty()) return error = "cannot make a localhost certificate", false;
  cert_pem_ = pair.cert_pem;
  std::ofstream(dir_ + "/tls.crt") << pair.cert_pem;
  std::ofstream(dir_ + "/tls.key") << pair.key_pem;
  server_ = std::make_unique<httplib::SSLServer>((dir_ + "/tls.crt").c_str(), (dir_ + "/tls.key").c_str());
  if (!server_->is_valid()) return error = "cannot load the certificate into the TLS server", false;
  // As the real API server, keep connections open however many requests they carry.
  server_->set_keep_alive_max_count(1'000'000);
  server_->set_keep_alive_timeout(60);
  // And write without Nagle's delay, as Go's net/http (which the API server runs on) does: a
  // response's headers and body go out as separate writes.
  server_->set_tcp_nodelay(true);
  server_->Get(".*", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
  port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1") : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) return error = "cannot listen on 127.0.0.1:" + std::to_string(port), false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 500 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return true;
}

void AuditApiServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

bool AuditApiServer::write_kubeconfig(const std::string& path, std::string& error) const {
  const Json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"current-context", "audit-standin"},
      {"clusters", Json::array({{{"name", "audit-standin"},
                                 {"cluster", {{"server", url()},
                                              {"certificate-authority-data", base64(cert_pem_, kBase64Std, true)}}}}})},
      {"users", Json::array({{{"name", "auditor"}, {"user", {{"token", token_}}}}})},
      {"contexts", Json::array({{{"name", "audit-standin"}, {"context", {{"cluster", "audit-standin"}, {"user", "auditor"}}}}})}};
  std::ofstream out(path);
  out << config.dump(2) << "\n";
  if (!out) return error = "cannot write " + path, false;
  return true;
}

std::string AuditApiServer::counters_json() const {
  return Json{{"requests", counters.requests.load()}, {"discovery", counters.discovery.load()},
              {"lists", counters.lists.load()}, {"listPages", counters.list_pages.load()},
              {"gets", counters.gets.load()}, {"items", counters.items.load()}, {"bytes", counters.bytes.load()},
              {"handlerSeconds", static_cast<double>(counters.handler_ns.load()) / 1e9},
              {"unauthorized", counters.unauthorized.load()}, {"errors", counters.errors.load()}}
      .dump();
}

void AuditApiServer::handle(const httplib::Request& req, httplib::Response& res) {
  const auto started = std::chrono::steady_clock::now();
  ++counters.requests;
  if (req.get_header_value("Authorization") != "Bearer " + token_) {
    ++counters.unauthorized;
    return status(res, 401, "Unauthorized", "Unauthorized");
  }
  const std::vector<std::string> parts = segments(req.path);
  std::string discovery;
  if (req.path == "/standin/counters") {
    res.set_content(counters_json(), "application/json");
  } else if (discovery_document(cluster_, parts, discovery)) {
    ++counters.discovery;
    res.set_content(discovery, "application/json");
  } else if (const ListTarget target = list_target(cluster_, parts); target.resource) {
    list(*target.resource, target.namespace_name, req, res);
  } else if (parts.size() == 4 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces") {
    ++counters.gets;
    const Resource& namespaces = cluster_.resources.front();
    const auto it = std::find_if(namespaces.items.begin(), namespaces.items.end(),
                                 [&](const StoredObject& o) { return o.key == parts[3]; });
    if (it == namespaces.items.end()) status(res, 404, "NotFound", "namespaces \"" + parts[3] + "\" not found");
    else res.set_content(R"({"kind":"Namespace","apiVersion":"v1",)" + it->text.substr(1), "application/json");
  } else {
    status(res, 404, "NotFound", "the server could not find the requested resource");
  }
  if (res.status >= 400) ++counters.errors;
  counters.bytes += static_cast<long long>(res.body.size());  // a list's body is counted in list()
  counters.handler_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
}

void AuditApiServer::list(const Resource& resource, const std::string& ns, const httplib::Request& req,
                          httplib::Response& res) {
  const auto& items = resource.items;
  auto first = items.begin(), end = items.end();
  if (!ns.empty()) {  // keys of a namespace: "NS/..." ('0' follows '/')
    const auto by_key = [](const StoredObject& o, const std::string& key) { return o.key < key; };
    first = std::lower_bound(items.begin(), items.end(), ns + "/", by_key);
    end = std::lower_bound(first, items.end(), ns + "0", by_key);
  }
  if (const std::string token = req.get_param_value("continue"); !token.empty()) {
    std::string start;
    if (!read_continue(token, start)) return status(res, 400, "BadRequest", "continue key is not valid: " + token);
    first = std::lower_bound(first, end, start, [](const StoredObject& o, const std::string& key) { return o.key < key; });
  } else {
    ++counters.lists;
  }
  ++counters.list_pages;
  size_t limit = 0;
  if (req.has_param("limit")) {
    const std::string text = req.get_param_value("limit");
    char* tail = nullptr;
    const long long n = std::strtoll(text.c_str(), &tail, 10);
    if (text.empty() || *tail != '\0' || n < 0) return status(res, 400, "BadRequest", "limit must be a non-negative integer");
    limit = static_cast<size_t>(n);
  }
  const size_t available = static_cast<size_t>(end - first);
  const size_t count = limit == 0 ? available : std::min(limit, available);
  const auto last = first + static_cast<std::ptrdiff_t>(count);
  const std::string api_version = resource.group.empty() ? resource.version : resource.group + "/" + resource.version;
  std::string meta = R"({"resourceVersion":")" + std::to_string(cluster_.resource_version) + "\"";
  if (last != end)
    meta += R"(,"continue":")" + continue_token(cluster_.resource_version, (last - 1)->key) +
            R"(","remainingItemCount":)" + std::to_string(end - last);
  meta += "}";
  auto body = std::make_shared<std::string>();
  size_t size = 100 + meta.size();
  for (auto it = first; it != last; ++it) size += it->text.size() + 1;
  body->reserve(size);
  *body += R"({"kind":")" + resource.kind + R"(List","apiVersion":")" + api_version + R"(","metadata":)" + meta + R"(,"items":[)";
  for (auto it = first; it != last; ++it) {
    if (it != first) *body += ',';
    *body += it->text;
  }
  *body += "]}";
  counters.items += static_cast<long long>(count);
  counters.bytes += static_cast<long long>(body->size());
  res.set_content_provider(body->size(), "application/json", [body](size_t offset, size_t length, httplib::DataSink& sink) {
    return sink.write(body->data() + offset, std::min<size_t>(length, 1u << 20));
  });
}

}  // namespace gpu_admission::bench::audit
