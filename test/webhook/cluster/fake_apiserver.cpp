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
  return resource == "namespaces" || resource == "pods" ? "v1" : "resource.k8s.io/v1";
}

std::string kind_of(const std::string& resource) {
  if (resource == "namespaces") return "Namespace";
  if (resource == "pods") return "Pod";
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
    const bool existed = objects_[resource].count(key) > 0 || raw_objects_[resource].erase(key) > 0;
    objects_[resource][key] = object;
    if (announce) events_.push_back({rv, resource, existed ? "MODIFIED" : "ADDED", object, {}});
  }
  changed_.notify_all();
}

void FakeApiServer::put_raw(const std::string& resource, const std::string& namespace_name, const std::string& name,
                            std::string json_text, bool announce) {
  {
    std::lock_guard lock(mutex_);
    const long long rv = ++rv_;
    const std::string_view prefix = R"({"metadata":{")";
    if (json_text.compare(0, prefix.size(), prefix) == 0)
      json_text.insert(prefix.size() - 1, R"("resourceVersion":")" + std::to_string(rv) + "\",");
    const std::string key = namespace_name + "/" + name;
    const bool existed = objects_[resource].erase(key) > 0 || raw_objects_[resource].count(key) > 0;
    raw_objects_[resource][key] = json_text;
    if (announce) events_.push_back({rv, resource, existed ? "MODIFIED" : "ADDED", Json(), std::move(json_text)});
  }
  changed_.notify_all();
}

void FakeApiServer::remove(const std::string& resource, const std::string& namespace_name, const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    const std::string key = namespace_name + "/" + name;
    auto& raw_objects = raw_objects_[resource];
    auto& objects = objects_[resource];
    const auto it = objects.find(key);
    if (const auto raw = raw_objects.find(key); raw != raw_objects.end()) {
      std::string text = std::move(raw->second);  // its resourceVersion stays the last put_raw's
      raw_objects.erase(raw);
      events_.push_back({++rv_, resource, "DELETED", Json(), std::move(text)});
    } else if (it != objects.end()) {
      Json object = it->second;
      objects.erase(it);
      object["metadata"]["resourceVersion"] = std::to_string(++rv_);
      events_.push_back({rv_, resource, "DELETED", object, {}});
    } else {
      return;
    }
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
  // The objects of both kinds in key order: a tree's key, or put_raw's text.
  std::map<std::string_view, std::pair<const Json*, const std::string*>> all;
  if (const auto found = objects_.find(resource); found != objects_.end())
    for (const auto& [key, object] : found->second) all[key].first = &object;
  if (const auto found = raw_objects_.find(resource); found != raw_objects_.end())
    for (const auto& [key, text] : found->second) all[key].second = &text;
  std::string items;
  size_t index = 0, count = 0;
  for (const auto& [key, object] : all) {
    if (index++ < offset) continue;
    if (count == limit) break;
    if (count++ > 0) items += ',';
    if (object.second != nullptr) {
      items += *object.second;
    } else {
      Json item = *object.first;
      item.erase("apiVersion");
      item.erase("kind");
      items += item.dump();
    }
  }
  next = offset + count < all.size() ? "page+" + std::to_string(offset + count) + "/=" : "";
  Json body = {{"kind", kind_of(resource) + "List"},
               {"apiVersion", group_version(resource)},
               {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
               {"items", Json::array()}};
  if (!next.empty()) body["metadata"]["continue"] = next;
  std::string text = body.dump();
  const std::string empty_items = R"("items":[])";
  text.insert(text.find(empty_items) + empty_items.size() - 1, items);
  return text;
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
                 const std::string key = std::string(req.matches[1]) + "/" + std::string(req.matches[3]);
                 const auto& raw_objects = raw_objects_[req.matches[2]];
                 if (const auto raw = raw_objects.find(key); raw != raw_objects.end()) {
                   res.status = 200;
                   return res.set_content(raw->second, "application/json");
                 }
                 const auto& objects = objects_[req.matches[2]];
                 const auto it = objects.find(key);
                 if (it == objects.end()) return reply(res, 404, status(404, "NotFound", "not found"));
                 reply(res, 200, it->second);
               });
  // Single GETs of a namespace and of a pod (pods are only ever got, never listed or watched).
  const auto get_one = [=](const std::string& resource, const std::string& key, const httplib::Request& req,
                           httplib::Response& res) {
    if (!authorized(req, res)) return;
    counters.gets++;
    if (resource == "pods") counters.pod_gets++;
    if (const int delay = get_delay_ms.load(); delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    std::lock_guard lock(mutex_);
    const auto& objects = objects_[resource];
    const auto it = objects.find(key);
    if (it == objects.end()) return reply(res, 404, status(404, "NotFound", "not found"));
    reply(res, 200, it->second);
  };
  server_->Get(R"(/api/v1/namespaces/([^/]+))", [=](const httplib::Request& req, httplib::Response& res) {
    get_one("namespaces", "/" + std::string(req.matches[1]), req, res);
  });
  server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [=](const httplib::Request& req, httplib::Response& res) {
    get_one("pods", std::string(req.matches[1]) + "/" + std::string(req.matches[2]), req, res);
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
        if (!event.raw.empty())
          lines.push_back(R"({"type":")" + event.type + R"(","object":)" + event.raw + "}\n");
        else
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
