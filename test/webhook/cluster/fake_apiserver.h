// A fake Kubernetes API server for the cluster-state tests: HTTPS on 127.0.0.1 (a self-signed
// localhost certificate from certs/), a bearer token check, discovery (/api, /apis,
// /apis/resource.k8s.io), paged lists (limit/continue), chunked watches with bookmarks, 410 Gone
// for expired resourceVersions, single-object GETs, and fault injection: abrupt disconnects of
// the watches, slow responses, objects the watches do not announce (a template created just
// before its pod), and stopping and restarting the server on the same port. Objects are held as
// JSON trees; list items carry no apiVersion/kind, as the real API server sends them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "policy/base/json.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}

namespace cluster_test {

using gpu_admission::Json;

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Listens on 127.0.0.1 (port 0: a free port; a restart passes the previous port).
  bool start(int port = 0);
  // Stops listening and cuts every connection.
  void stop();
  int port() const { return port_; }
  const std::string& ca_pem() const { return cert_pem_; }
  std::string server_url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  // A kubeconfig (token auth, CA inline) for this server, written to `path`.
  void write_kubeconfig(const std::string& path) const;

  // resource: namespaces | resourceclaims | resourceclaimtemplates | pods (pods are only got by
  // name: put them with announce=false). `object` is the whole object
  // (metadata.name, .namespace); resourceVersion is set here. announce=false: GET finds it, no
  // watch event is sent (the watch is "behind").
  void put(const std::string& resource, Json object, bool announce = true);
  // An object given as JSON text, sent as it is: in lists (so without apiVersion and kind, as
  // list items come), in watch events ({"type":...,"object":<text>}) and to GETs. For objects a
  // JSON tree cannot hold or should not be made to (10,000 levels deep, not an object, no
  // name). `namespace_name`/`name` place it among the others (a list's order, GETs, remove()).
  // When the text starts with {"metadata":{" its resourceVersion is set here; otherwise it has
  // none (watches then advance past it with the next bookmark).
  void put_raw(const std::string& resource, const std::string& namespace_name, const std::string& name,
               std::string json_text, bool announce = true);
  void remove(const std::string& resource, const std::string& namespace_name, const std::string& name);
  // Watches from a resourceVersion older than the current one get 410 (ERROR event) from now on.
  void compact();
  // Closes every watch stream without a proper end (no final chunk).
  void cut_watches();
  // The next watch gets an ERROR event with code 410 at once.
  void expire_next_watch(const std::string& resource) {
    std::lock_guard lock(mutex_);
    expire_next_watch_ = resource;
  }

  std::string token = "fake-token";
  std::atomic<int> get_delay_ms{0};   // delay of single-object GETs
  std::atomic<int> bookmark_ms{200};  // bookmark interval on watches
  std::atomic<bool> serve_dra{true};
  size_t max_page = 1000;             // a list's limit is capped at this

  struct Counters {
    std::atomic<int> lists{0}, list_pages{0}, watches{0}, gets{0}, unauthorized{0}, pod_gets{0};
  };
  Counters counters;
  // The client ports single-object GETs came from: one per connection they used.
  size_t get_connections() const {
    std::lock_guard lock(mutex_);
    return get_ports_.size();
  }

 private:
  struct Event {
    long long rv;
    std::string resource;
    std::string type;
    Json object;
    std::string raw;  // put_raw's text, sent instead of `object` when set
  };
  void route();
  void watch(const std::string& resource, const httplib::Request& req, httplib::Response& res);
  std::string list_body(const std::string& resource, size_t offset, size_t limit, std::string& next) const;

  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::string dir_;
  std::string cert_pem_;
  std::string key_pem_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  long long rv_ = 100;
  long long compacted_ = 0;  // watches from below this get 410
  int cut_generation_ = 0;
  bool stopping_ = false;
  std::string expire_next_watch_;  // a resource
  std::map<std::string, std::map<std::string, Json>> objects_;  // resource -> ns/name -> object
  std::map<std::string, std::map<std::string, std::string>> raw_objects_;  // resource -> ns/name -> put_raw text
  std::set<int> get_ports_;
  std::vector<Event> events_;
};

}  // namespace cluster_test
