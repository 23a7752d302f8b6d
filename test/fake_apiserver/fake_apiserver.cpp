// The fake API server's core (see fake_apiserver.h) on httplib's SSLServer: starting and
// stopping, the objects tests put, the routing of every request (discovery, lists, watches,
// single GETs, writes) and the single-object GETs. Discovery and the resource table live in
// fake_apiserver_discovery.cpp, lists and watches in fake_apiserver_lists.cpp, writes in
// fake_apiserver_writes.cpp.
#include "test/fake_apiserver/fake_apiserver.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "certs/certs.h"
#include "test/fake_apiserver/fake_apiserver_internal.h"

namespace cluster_test {
namespace fake {

std::string now_rfc3339() {
  const time_t seconds = ::time(nullptr);
  struct tm utc {};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace fake

namespace {

using namespace std::chrono_literals;

std::string key_of(const Json& metadata) {
  const auto text = [&](const char* field) {
    const auto it = metadata.find(field);
    return it != metadata.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return text("namespace") + "/" + text("name");
}

// "/apis/apps/v1/deployments" -> {"apis", "apps", "v1", "deployments"}.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) segments.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return segments;
}

// The object with apiVersion and kind first, as the API server writes it.
Json with_type(const Json& object, const ResourceType& type) {
  Json out = {{"apiVersion", type.group_version()}, {"kind", type.kind}};
  for (const auto& [field, value] : object.items())
    if (field != "apiVersion" && field != "kind") out[field] = value;
  return out;
}

// The DER bytes of a certificate ("" when there is none).
std::string der_of(X509* cert) {
  if (cert == nullptr) return "";
  unsigned char* der = nullptr;
  const int size = i2d_X509(cert, &der);
  if (size <= 0) return "";
  std::string out(reinterpret_cast<char*>(der), static_cast<size_t>(size));
  OPENSSL_free(der);
  return out;
}

Json method_not_allowed() {
  return fake::status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
}

}  // namespace

FakeApiServer::FakeApiServer() : resources_(default_resources()) {
  char pattern[] = "/tmp/gpu-admission-fakeapi-XXXXXX";
  if (const char* made = ::mkdtemp(pattern)) dir_ = made;
  const auto pair = gpu_admission::certs::generate_localhost_pair();
  cert_pem_ = pair.cert_pem;
  key_pem_ = pair.key_pem;
  std::ofstream(dir_ + "/tls.crt") << cert_pem_;
  std::ofstream(dir_ + "/tls.key") << key_pem_;
}

FakeApiServer::~FakeApiServer() {
  stop();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

bool FakeApiServer::start(int port) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = false;
  }
  server_ = std::make_unique<httplib::SSLServer>((dir_ + "/tls.crt").c_str(), (dir_ + "/tls.key").c_str());
  if (!server_->is_valid()) return false;
  // Ask every client for a certificate, as the API server does, but take any or none: which
  // ones authenticate is decided per request (authorized()).
  SSL_CTX_set_verify(server_->ssl_context(), SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
  server_->set_tcp_nodelay(no_delay);
  route();
  if (port == 0) {
    port_ = server_->bind_to_any_port("127.0.0.1");
  } else {
    bool bound = false;
    for (int attempt = 0; attempt < 50 && !bound; ++attempt) {
      bound = server_->bind_to_port("127.0.0.1", port);
      if (!bound) std::this_thread::sleep_for(100ms);
    }
    port_ = bound ? port : -1;
  }
  if (port_ <= 0) return false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 500 && !server_->is_running(); ++i) std::this_thread::sleep_for(2ms);
  return true;
}

void FakeApiServer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ++cut_generation_;
  }
  changed_.notify_all();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

void FakeApiServer::write_kubeconfig(const std::string& path) const {
  Json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"current-context", "fake"},
      {"clusters",
       Json::array({{{"name", "fake"},
                     {"cluster", {{"server", server_url()}, {"certificate-authority", dir_ + "/tls.crt"}}}}})},
      {"users", Json::array({{{"name", "fake-user"}, {"user", {{"token", token}}}}})},
      {"contexts", Json::array({{{"name", "fake"}, {"context", {{"cluster", "fake"}, {"user", "fake-user"}}}}})}};
  std::ofstream(path) << config.dump(2);
}

std::string FakeApiServer::next_uid_locked() {
  std::string digits = std::to_string(++uids_);
  return "00000000-0000-4000-8000-" + std::string(digits.size() < 12 ? 12 - digits.size() : 0, '0') + digits;
}

void FakeApiServer::store_locked(const std::string& name, const std::string& key, Stored stored, bool announce) {
  const long long rv = ++rv_;
  if (!stored.is_raw) {
    stored.object["metadata"]["resourceVersion"] = std::to_string(rv);
  } else {
    const std::string_view prefix = R"({"metadata":{")";
    if (stored.raw.compare(0, prefix.size(), prefix) == 0) {
      // Made anew at its size: insert() would double a large text's capacity.
      const std::string field = R"("resourceVersion":")" + std::to_string(rv) + "\",";
      std::string text;
      text.reserve(stored.raw.size() + field.size());
      text.append(stored.raw, 0, prefix.size() - 1).append(field).append(stored.raw, prefix.size() - 1);
      stored.raw = std::move(text);
    }
  }
  auto& store = objects_[name];
  const bool existed = store.count(key) > 0;
  if (!existed) key_index_.erase(name);
  if (announce)
    events_.push_back({rv, name, key, existed ? "MODIFIED" : "ADDED", stored.is_raw ? Json() : stored.object,
                       stored.is_raw ? stored.raw : std::string()});
  store[key] = std::move(stored);
}

bool FakeApiServer::put(const std::string& resource, Json object, bool announce) {
  if (!object.is_object() || (object.contains("metadata") && !object["metadata"].is_object())) {
    std::fprintf(stderr, "FakeApiServer::put(%s): the object is not an object with metadata\n", resource.c_str());
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    std::string error;
    const std::string name = resolve_locked(resource, error);
    if (name.empty()) {
      std::fprintf(stderr, "FakeApiServer::put: %s\n", error.c_str());
      return false;
    }
    Json& metadata = object["metadata"];
    const std::string key = key_of(metadata);
    // An update keeps the object's uid and creation time, as on a real server.
    const auto& store = objects_[name];
    const Json* old_metadata = nullptr;
    if (const auto old = store.find(key); old != store.end() && !old->second.is_raw) {
      const auto found = old->second.object.find("metadata");
      if (found != old->second.object.end() && found->is_object()) old_metadata = &*found;
    }
    for (const char* field : {"uid", "creationTimestamp"}) {
      if (metadata.contains(field)) continue;
      if (old_metadata != nullptr && old_metadata->contains(field)) metadata[field] = (*old_metadata)[field];
      else metadata[field] = std::string(field) == "uid" ? next_uid_locked() : fake::now_rfc3339();
    }
    store_locked(name, key, {with_type(object, *preferred_locked(name)), {}, false}, announce);
  }
  changed_.notify_all();
  return true;
}

bool FakeApiServer::put_raw(const std::string& resource, const std::string& namespace_name, const std::string& name,
                            std::string json_text, bool announce) {
  {
    std::lock_guard lock(mutex_);
    std::string error;
    const std::string resource_name = resolve_locked(resource, error);
    if (resource_name.empty()) {
      std::fprintf(stderr, "FakeApiServer::put_raw: %s\n", error.c_str());
      return false;
    }
    store_locked(resource_name, namespace_name + "/" + name, {Json(), std::move(json_text), true}, announce);
  }
  changed_.notify_all();
  return true;
}

bool FakeApiServer::remove_locked(const std::string& name, const std::string& key) {
  auto& store = objects_[name];
  const auto it = store.find(key);
  if (it == store.end()) return false;
  Stored gone = std::move(it->second);
  store.erase(it);
  key_index_.erase(name);
  if (gone.is_raw) {  // its resourceVersion stays the last put_raw's
    events_.push_back({++rv_, name, key, "DELETED", Json(), std::move(gone.raw)});
  } else {
    gone.object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({rv_, name, key, "DELETED", std::move(gone.object), {}});
  }
  return true;
}

void FakeApiServer::remove(const std::string& resource, const std::string& namespace_name, const std::string& name) {
  bool removed = false;
  {
    std::lock_guard lock(mutex_);
    std::string error;
    const std::string resource_name = resolve_locked(resource, error);
    removed = !resource_name.empty() && remove_locked(resource_name, namespace_name + "/" + name);
  }
  if (removed) changed_.notify_all();
}

Json FakeApiServer::stored(const std::string& resource, const std::string& namespace_name,
                           const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::string error;
  const auto store = objects_.find(resolve_locked(resource, error));
  if (store == objects_.end()) return nullptr;
  const auto it = store->second.find(namespace_name + "/" + name);
  return it == store->second.end() || it->second.is_raw ? Json() : it->second.object;
}

void FakeApiServer::compact() {
  std::lock_guard lock(mutex_);
  compacted_ = rv_;
  events_.clear();
}

void FakeApiServer::cut_watches() {
  {
    std::lock_guard lock(mutex_);
    ++cut_generation_;
  }
  changed_.notify_all();
}

void FakeApiServer::expire_next_watch(const std::string& resource) {
  std::lock_guard lock(mutex_);
  std::string error;
  expire_next_watch_ = resolve_locked(resource, error);
}

void FakeApiServer::expire_continue_tokens() {
  std::lock_guard lock(mutex_);
  ++continue_epoch_;
}

int FakeApiServer::list_pages_of(const std::string& resource) const {
  std::lock_guard lock(mutex_);
  std::string error;
  const auto it = list_pages_.find(resolve_locked(resource, error));
  return it == list_pages_.end() ? 0 : it->second;
}

int FakeApiServer::lists_of(const std::string& resource) const {
  std::lock_guard lock(mutex_);
  std::string error;
  const auto it = lists_.find(resolve_locked(resource, error));
  return it == lists_.end() ? 0 : it->second;
}

std::vector<WriteRequest> FakeApiServer::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}

std::string FakeApiServer::counters_json() const {
  return Json{{"requests", counters.requests.load()}, {"lists", counters.lists.load()},
              {"listPages", counters.list_pages.load()}, {"items", counters.items.load()},
              {"bytes", counters.bytes.load()},
              {"handlerSeconds", static_cast<double>(counters.handler_ns.load()) / 1e9},
              {"watches", counters.watches.load()}, {"gets", counters.gets.load()},
              {"podGets", counters.pod_gets.load()}, {"creates", counters.creates.load()},
              {"updates", counters.updates.load()}, {"deletes", counters.deletes.load()},
              {"unauthorized", counters.unauthorized.load()}}
      .dump();
}

void FakeApiServer::record_write(const httplib::Request& req, const httplib::Response& res) {
  std::lock_guard lock(mutex_);
  writes_.push_back({req.method, req.target, req.body, res.status});
}

void FakeApiServer::accept_client_certificate(const std::string& cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  std::lock_guard lock(mutex_);
  if (cert != nullptr) client_certs_.insert(der_of(cert));
  X509_free(cert);
}

bool FakeApiServer::authorized(const httplib::Request& req, httplib::Response& res) {
  std::string peer;
  if (req.ssl != nullptr) {
    X509* cert = SSL_get1_peer_certificate(req.ssl);
    peer = der_of(cert);
    X509_free(cert);
  }
  {
    std::lock_guard lock(mutex_);
    if (req.get_header_value("Authorization") == "Bearer " + token) return true;
    if (!peer.empty() && client_certs_.count(peer) > 0) return true;
  }
  counters.unauthorized++;
  fake::reply(res, 401, fake::status(401, "Unauthorized", "Unauthorized"));
  return false;
}

void FakeApiServer::route() {
  // Bodies past the API server's limit are read and refused by create/update (413); far larger
  // ones are refused by httplib, and the error handler gives every bodiless error a Status.
  server_->set_payload_max_length(64u << 20);
  server_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    using Handled = httplib::Server::HandlerResponse;
    if (!res.body.empty()) return Handled::Unhandled;
    if (res.status == 404) fake::reply(res, 404, fake::no_such_path());
    else if (res.status == 413)
      fake::reply(res, 413, fake::status(413, "RequestEntityTooLarge", "Request entity too large"));
    else fake::reply(res, res.status, fake::status(res.status, "InternalError", "the request could not be served"));
    return Handled::Handled;
  }));
  // Every request is counted with the bytes and time of its answer.
  const auto counted = [this](auto answer) {
    return [this, answer](const httplib::Request& req, httplib::Response& res) {
      const auto started = std::chrono::steady_clock::now();
      counters.requests++;
      answer(req, res);
      counters.bytes += static_cast<long long>(res.body.size());
      counters.handler_ns +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
    };
  };
  const auto handler = counted([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res)) handle(req, res);
    if (req.method != "GET") record_write(req, res);
  });
  const std::string everything = R"(/apis?(/.*)?)";
  server_->Get(everything, handler);
  server_->Post(everything, handler);
  server_->Put(everything, handler);
  server_->Patch(everything, handler);
  server_->Delete(everything, handler);
  server_->Get("/version", counted([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res))
      fake::reply(res, 200, {{"major", "1"}, {"minor", "32"}, {"gitVersion", "v1.32.0"}, {"platform", "linux/amd64"}});
  }));
  server_->Get("/fake/counters", counted([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res)) res.set_content(counters_json(), "application/json");
  }));
}

// Discovery documents, or a resource's collection or object by method: GET lists, watches
// (?watch=1) and gets; POST creates, PUT updates and DELETE deletes where the resource is
// writable. Everything else is 405 (a method the resource does not take) or 404.
void FakeApiServer::handle(const httplib::Request& req, httplib::Response& res) {
  const std::vector<std::string> segments = split_path(req.path);
  if (serve_discovery(segments, res)) {
    if (req.method != "GET") fake::reply(res, 405, method_not_allowed());
    return;
  }
  Target target;
  if (!find_target(segments, target)) return fake::reply(res, 404, fake::no_such_path());
  const bool collection = target.object_name.empty();
  // A namespaced resource's cluster-wide collection takes GETs only.
  const bool creatable = collection && (!target.type.namespaced || !target.namespace_name.empty());
  const std::string watch = req.get_param_value("watch");
  const std::string verb = req.method == "GET"      ? (!collection ? "get" : watch == "1" || watch == "true" ? "watch" : "list")
                           : req.method == "POST"   ? "create"
                           : req.method == "PUT"    ? "update"
                           : req.method == "PATCH"  ? "patch"
                           : req.method == "DELETE" ? "delete"
                                                    : req.method;
  if (forbidden(target, verb, res)) return;
  if (req.method == "GET") {
    if (!collection) return get_object(target, req, res);
    return verb == "watch" ? this->watch(target, req, res) : list(target, req, res);
  }
  if (!target.type.writable) return fake::reply(res, 405, method_not_allowed());
  if (req.method == "POST" && creatable) return create(target, req, res);
  if (req.method == "PUT" && !collection) return update(target, req, res);
  if (req.method == "DELETE" && !collection) return erase(target, req, res);
  fake::reply(res, 405, method_not_allowed());
}

void FakeApiServer::forbid(const std::string& verb, const std::string& resource) {
  std::lock_guard lock(mutex_);
  std::string error;
  forbidden_.insert(verb + " " + resolve_locked(resource, error));
}

void FakeApiServer::permit(const std::string& verb, const std::string& resource) {
  std::lock_guard lock(mutex_);
  std::string error;
  forbidden_.erase(verb + " " + resolve_locked(resource, error));
}

// A 403 in the real server's words when RBAC (forbid()) does not allow `verb` on the target.
bool FakeApiServer::forbidden(const Target& target, const std::string& verb, httplib::Response& res) {
  {
    std::lock_guard lock(mutex_);
    if (forbidden_.count(verb + " " + target.name) == 0) return false;
  }
  std::string message = target.object_name.empty() ? target.type.resource : fake::quoted(target.type, target.object_name);
  message += " is forbidden: User \"system:serviceaccount:gpu-admission:gpu-admission\" cannot " + verb +
             " resource \"" + target.type.resource + "\" in API group \"" + target.type.group + "\"";
  message += target.namespace_name.empty() ? std::string(" at the cluster scope")
                                           : " in the namespace \"" + target.namespace_name + "\"";
  fake::reply(res, 403, fake::status(403, "Forbidden", message, fake::object_details(target.type, target.object_name)));
  return true;
}

void FakeApiServer::get_object(const Target& target, const httplib::Request& req, httplib::Response& res) {
  counters.gets++;
  if (target.name == "pods") counters.pod_gets++;
  if (const int delay = get_delay_ms.load(); delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  std::lock_guard lock(mutex_);
  get_ports_.insert(req.remote_port);
  const auto& store = objects_[target.name];
  const auto it = store.find(target.namespace_name + "/" + target.object_name);
  if (it == store.end()) return fake::reply(res, 404, fake::not_found(target.type, target.object_name));
  if (it->second.is_raw) {
    res.status = 200;
    return res.set_content(it->second.raw, "application/json");
  }
  fake::reply(res, 200, with_type(it->second.object, target.type));  // in the version asked for
}

}  // namespace cluster_test
