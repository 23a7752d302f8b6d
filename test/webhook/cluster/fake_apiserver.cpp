// The fake API server (see fake_apiserver.h), on httplib's SSLServer.
#include "fake_apiserver.h"

#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "certs/certs.h"

namespace cluster_test {
namespace {

using namespace std::chrono_literals;

std::string key_of(const Json& object) {
  const Json& meta = object["metadata"];
  return meta.value("namespace", "") + "/" + meta.value("name", "");
}

std::string group_version(const std::string& resource) {
  return resource == "namespaces" ? "v1" : "resource.k8s.io/v1";
}

std::string kind_of(const std::string& resource) {
  if (resource == "namespaces") return "Namespace";
  return resource == "resourceclaims" ? "ResourceClaim" : "ResourceClaimTemplate";
}

Json status(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

void reply(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

}  // namespace

FakeApiServer::FakeApiServer() {
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
      {"clusters", Json::array({{{"name", "fake"}, {"cluster", {{"server", server_url()}, {"certificate-authority", dir_ + "/tls.crt"}}}}})},
      {"users", Json::array({{{"name", "fake-user"}, {"user", {{"token", token}}}}})},
      {"contexts", Json::array({{{"name", "fake"}, {"context", {{"cluster", "fake"}, {"user", "fake-user"}}}}})}};
  std::ofstream(path) << config.dump(2);
}

void FakeApiServer::put(const std::string& resource, Json object, bool announce) {
  {
    std::lock_guard lock(mutex_);
    const long long rv = ++rv_;
    object["metadata"]["resourceVersion"] = std::to_string(rv);
    object["apiVersion"] = group_version(resource);
    object["kind"] = kind_of(resource);
    const std::string key = key_of(object);
    const bool existed = objects_[resource].count(key) > 0;
    objects_[resource][key] = object;
    if (announce) events_.push_back({rv, resource, existed ? "MODIFIED" : "ADDED", object});
  }
  changed_.notify_all();
}

void FakeApiServer::remove(const std::string& resource, const std::string& namespace_name, const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    auto& objects = objects_[resource];
    const auto it = objects.find(namespace_name + "/" + name);
    if (it == objects.end()) return;
    Json object = it->second;
    objects.erase(it);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({rv_, resource, "DELETED", object});
  }
  changed_.notify_all();
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

std::string FakeApiServer::list_body(const std::string& resource, size_t offset, size_t limit,
                                     std::string& next) const {
  std::lock_guard lock(mutex_);
  Json items = Json::array();
  const auto found = objects_.find(resource);
  size_t index = 0;
  if (found != objects_.end()) {
    for (const auto& [key, object] : found->second) {
      if (index++ < offset) continue;
      if (items.size() == limit) break;
      Json item = object;
      item.erase("apiVersion");
      item.erase("kind");
      items.push_back(std::move(item));
    }
  }
  const size_t total = found == objects_.end() ? 0 : found->second.size();
  next = offset + items.size() < total ? "page+" + std::to_string(offset + items.size()) + "/=" : "";
  Json body = {{"kind", kind_of(resource) + "List"},
               {"apiVersion", group_version(resource)},
               {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
               {"items", std::move(items)}};
  if (!next.empty()) body["metadata"]["continue"] = next;
  return body.dump();
}

void FakeApiServer::route() {
  auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") == "Bearer " + token) return true;
    counters.unauthorized++;
    reply(res, 401, status(401, "Unauthorized", "Unauthorized"));
    return false;
  };
  server_->Get("/api", [=](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res)) reply(res, 200, {{"kind", "APIVersions"}, {"versions", {"v1"}}});
  });
  server_->Get("/api/v1", [=](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    reply(res, 200, {{"kind", "APIResourceList"}, {"groupVersion", "v1"},
                     {"resources", Json::array({{{"name", "namespaces"}, {"singularName", "namespace"},
                                                 {"namespaced", false}, {"kind", "Namespace"},
                                                 {"verbs", {"get", "list", "watch"}}, {"shortNames", {"ns"}}}})}});
  });
  server_->Get("/apis", [=](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    Json groups = Json::array();
    if (serve_dra) {
      Json version = {{"groupVersion", "resource.k8s.io/v1"}, {"version", "v1"}};
      groups.push_back({{"name", "resource.k8s.io"}, {"versions", {version}}, {"preferredVersion", version}});
    }
    reply(res, 200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}});
  });
  server_->Get("/apis/resource.k8s.io", [=](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    if (!serve_dra) return reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
    reply(res, 200, {{"kind", "APIGroup"}, {"apiVersion", "v1"}, {"name", "resource.k8s.io"},
                     {"versions", Json::array({{{"groupVersion", "resource.k8s.io/v1beta1"}, {"version", "v1beta1"}},
                                               {{"groupVersion", "resource.k8s.io/v1"}, {"version", "v1"}},
                                               {{"groupVersion", "resource.k8s.io/v1beta2"}, {"version", "v1beta2"}}})}});
  });
  auto collection = [=](const std::string& resource) {
    return [=](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      if (req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true") return watch(resource, req, res);
      counters.list_pages++;
      const std::string token_in = req.get_param_value("continue");
      if (token_in.empty()) counters.lists++;
      const size_t offset = token_in.empty() ? 0 : std::stoul(token_in.substr(5));
      size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : max_page;
      limit = std::min(limit == 0 ? max_page : limit, max_page);
      std::string next;
      res.set_content(list_body(resource, offset, limit, next), "application/json");
    };
  };
  server_->Get("/api/v1/namespaces", collection("namespaces"));
  server_->Get("/apis/resource.k8s.io/v1/resourceclaims", collection("resourceclaims"));
  server_->Get("/apis/resource.k8s.io/v1/resourceclaimtemplates", collection("resourceclaimtemplates"));
  server_->Get(R"(/apis/resource.k8s.io/v1/namespaces/([^/]+)/(resourceclaims|resourceclaimtemplates)/([^/]+))",
               [=](const httplib::Request& req, httplib::Response& res) {
                 if (!authorized(req, res)) return;
                 counters.gets++;
                 if (const int delay = get_delay_ms.load(); delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
                 std::lock_guard lock(mutex_);
                 get_ports_.insert(req.remote_port);
                 const auto& objects = objects_[req.matches[2]];
                 const auto it = objects.find(std::string(req.matches[1]) + "/" + std::string(req.matches[3]));
                 if (it == objects.end()) return reply(res, 404, status(404, "NotFound", "not found"));
                 reply(res, 200, it->second);
               });
}

}  // namespace cluster_test

namespace cluster_test {

// A chunked stream of the events after the requested resourceVersion, one JSON line each (the
// first one split over two writes), bookmarks every bookmark_ms, the end after timeoutSeconds,
// and an abrupt close on cut_watches() or stop().
void FakeApiServer::watch(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
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
    state->expired = state->from < compacted_ || expire_next_watch_ == resource;
    if (expire_next_watch_ == resource) expire_next_watch_.clear();
  }
  res.set_chunked_content_provider("application/json", [this, resource, state](size_t, httplib::DataSink& sink) {
    if (state->expired) {
      const std::string line = Json{{"type", "ERROR"}, {"object", status(410, "Expired", "too old resource version")}}.dump() + "\n";
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
        if (event.rv <= state->from || event.resource != resource) continue;
        lines.push_back(Json{{"type", event.type}, {"object", event.object}}.dump() + "\n");
        state->from = event.rv;
      }
      const auto now = std::chrono::steady_clock::now();
      if (lines.empty() && now >= state->next_bookmark) {
        lines.push_back(Json{{"type", "BOOKMARK"},
                             {"object", {{"kind", kind_of(resource)}, {"apiVersion", group_version(resource)},
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
