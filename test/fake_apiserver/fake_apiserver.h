// A fake Kubernetes API server for the tests and the benchmarks' stand-ins: HTTPS on 127.0.0.1 (a self-signed
// localhost certificate from certs/), a bearer token check (the token can be replaced while it
// serves: a rotation) or a client certificate it was told to accept, and a table of the resources it
// serves, each with discovery (/api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION, plain
// JSON as kubectl accepts it; /version says v1.32.0), paged lists (limit/continue,
// cluster-wide and per namespace, a labelSelector, 410 Gone for expired continue tokens),
// chunked watches with bookmarks, 410 Gone for expired resourceVersions, and single-object GETs. The default table holds the core
// workloads, apps/v1, batch/v1, resource.k8s.io, the two report CRDs (wgpolicyk8s.io/v1alpha2's
// PolicyReports, openreports.io/v1alpha1's Reports), which are also written to (POST, PUT,
// DELETE) and checked against their schemas, and Secrets and the admissionregistration.k8s.io/v1
// webhook configurations, also writable; tests add custom
// resources with add_resource(). Fault injection: abrupt disconnects of the watches, slow
// responses, a verb on a resource answered 403 Forbidden (RBAC), objects the watches do not announce (a template created just before its pod), a
// group that disappears (a CRD not installed), and stopping and restarting the server on the
// same port. Objects are held as JSON trees; list items carry no apiVersion/kind, as the real
// API server sends them, in etcd's key order: "namespace/name" compared as bytes (so
// team-a-x/... comes before team-a/...). Writes are answered as the real server answers them
// (201, 409 AlreadyExists or Conflict, 404, 413 past 3 MiB, 400 and 422 for bad bodies); PATCH
// and writes of resources that are not writable are 405.
//
// It also stands in for a cluster at scale (the benchmarks' stand-ins, bench/): objects put as
// JSON text (put_raw) are copied into a page as they are, a page costs its own items whatever
// the store holds (150,000 pods of 9 KB list at TLS speed), and with `no_delay` responses go out
// without Nagle's delay, as from the real server (Go's net/http). What it served is counted
// (`counters`), and GET /fake/counters answers the counts as JSON to an authorized client.
//
// Resource names (put(), remove(), stored(), list_pages_of(), remove_resource()): the plural,
// "pods", "deployments", "pytorchjobs", when one group serves it, or always plural.group:
// "deployments.apps", "pytorchjobs.kubeflow.org" (kubectl's spelling). A plural two groups
// serve must be given with its group. A resource served in several versions of its group is one
// store of objects.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
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

// One version of a resource the fake serves.
struct ResourceType {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // the plural, "pytorchjobs"
  std::string kind;      // "PyTorchJob"
  bool namespaced = true;
  std::vector<std::string> short_names = {};
  std::vector<std::string> categories = {};  // "all" for the workloads, as the real server says
  bool writable = false;                     // POST, PUT and DELETE served (otherwise 405)
  // Checks a written object's content (apiVersion, kind and metadata are checked for every
  // resource): one "field: problem" per problem, answered as 422 Invalid; none when fine. It
  // drops the fields its schema does not know, as the real server prunes a CRD's objects.
  std::function<std::vector<std::string>(Json&)> validate = nullptr;

  std::string group_version() const { return group.empty() ? version : group + "/" + version; }
  std::string name() const { return group.empty() ? resource : resource + "." + group; }
};

// The resources a new FakeApiServer serves.
std::vector<ResourceType> default_resources();
// Of those, the ones self-managed certificates write: Secrets (core v1) and the
// admissionregistration.k8s.io/v1 validating and mutating webhook configurations (cluster-scoped).
std::vector<ResourceType> admission_resources();
// The PolicyReport CRD's schema checks (wgpolicyk8s.io/v1alpha2): results[].policy required,
// results[].result and .severity from their enums, the summary's counts integers, the types of
// the other known fields; unknown fields of the report, its summary and results are dropped.
std::vector<std::string> policy_report_problems(Json& report);
// The OpenReports Report CRD's (openreports.io/v1alpha1): the same results and summary; at the
// top also `source` (a string) and `configuration` (`limits` required: maxResults, statusFilter).
std::vector<std::string> open_report_problems(Json& report);

// One POST, PUT, PATCH or DELETE the server answered.
struct WriteRequest {
  std::string method;
  std::string path;
  std::string body;
  int status = 0;
};

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

  // A kubeconfig (token auth, CA file) for this server, written to `path`.
  void write_kubeconfig(const std::string& path) const;

  // The resource table. add_resource() adds one version of a resource (or replaces the entry
  // of the same group, version and plural); remove_resource() drops every version of the named
  // resource and its objects (false when the name is unknown or ambiguous). A group without
  // resources left is gone from discovery, and its paths answer 404: a CRD not installed.
  void add_resource(ResourceType type);
  bool remove_resource(const std::string& resource);
  std::vector<ResourceType> resources() const;

  // Stores `object` (metadata.name, .namespace) as a `resource` (see the naming above);
  // resourceVersion is set here, and uid and creationTimestamp when it has none (an update
  // keeps the old uid); apiVersion and kind are the resource's preferred version's.
  // announce=false: GET and lists find it, no watch event is sent (the watch is "behind").
  // False, with a message on stderr, when the resource is unknown: nothing is stored.
  bool put(const std::string& resource, Json object, bool announce = true);
  // An object given as JSON text, sent as it is: in lists (so without apiVersion and kind, as
  // list items come), in watch events ({"type":...,"object":<text>}) and to GETs. For objects a
  // JSON tree cannot hold or should not be made to (10,000 levels deep, not an object, no
  // name). `namespace_name`/`name` place it among the others (a list's order, GETs, remove()).
  // When the text starts with {"metadata":{" its resourceVersion is set here; otherwise it has
  // none (watches then advance past it with the next bookmark). Such objects never match a
  // label or field selector.
  bool put_raw(const std::string& resource, const std::string& namespace_name, const std::string& name,
               std::string json_text, bool announce = true);
  void remove(const std::string& resource, const std::string& namespace_name, const std::string& name);
  // The stored object (after the server's writes too); null when there is none (or only raw text).
  Json stored(const std::string& resource, const std::string& namespace_name, const std::string& name) const;

  // Watches from a resourceVersion older than the current one get 410 (ERROR event) from now on.
  void compact();
  // Closes every watch stream without a proper end (no final chunk).
  void cut_watches();
  // The next watch of `resource` gets an ERROR event with code 410 at once.
  void expire_next_watch(const std::string& resource);
  // Every continue token handed out so far is expired: following one answers 410 Gone (reason
  // Expired), as when a paged list took longer than etcd keeps its revision.
  void expire_continue_tokens();

  // The bearer token accepted. Set it before start(); while serving, use set_token().
  std::string token = "fake-token";
  void set_token(std::string new_token) {
    std::lock_guard lock(mutex_);
    token = std::move(new_token);
  }
  // Also accept a client presenting this certificate (PEM), with or without a token, as the API
  // server accepts a certificate its client CA signed.
  void accept_client_certificate(const std::string& cert_pem);
  // Answers `verb` (get, list, watch, create, update, patch, delete) on `resource` (see the naming
  // above) with 403 Forbidden, as the real server answers a service account RBAC does not allow;
  // permit() undoes it.
  void forbid(const std::string& verb, const std::string& resource);
  void permit(const std::string& verb, const std::string& resource);
  std::atomic<int> get_delay_ms{0};   // delay of single-object GETs
  std::atomic<int> bookmark_ms{200};  // bookmark interval on watches
  std::atomic<bool> serve_dra{true};  // false: resource.k8s.io is not served (404, not discovered)
  std::atomic<bool> serve_policy_reports{true};  // false: wgpolicyk8s.io likewise
  std::atomic<bool> serve_open_reports{true};    // false: openreports.io likewise
  size_t max_page = 1000;             // a list's limit is capped at this
  // Set before start(): responses without Nagle's algorithm, as Go's net/http writes them. A
  // response's headers and body are two writes, and with Nagle the body waits for the client's
  // delayed ACK of the headers (40 ms a page). The audit stand-in sets it; the tests keep the timing
  // their races (two replicas writing the same Secret) were written against.
  bool no_delay = false;

  struct Counters {
    // lists: first pages; list_pages: every page; gets: single-object GETs (pod_gets of pods);
    // creates/updates/deletes: writes that succeeded.
    std::atomic<int> lists{0}, list_pages{0}, watches{0}, gets{0}, unauthorized{0}, pod_gets{0};
    std::atomic<int> creates{0}, updates{0}, deletes{0};
    // requests: every request, /fake/counters included; items: list items served; bytes:
    // response bodies (not watch streams); handler_ns: time spent answering (building pages).
    std::atomic<long long> requests{0}, items{0}, bytes{0}, handler_ns{0};
  };
  Counters counters;
  // The counters as one JSON object ("lists", "listPages", "items", "bytes", "handlerSeconds",
  // ...), as GET /fake/counters answers them.
  std::string counters_json() const;
  // List pages (and lists: first pages) served of one resource, however the URL spelled it.
  int list_pages_of(const std::string& resource) const;
  int lists_of(const std::string& resource) const;
  // Every write request answered, in order.
  std::vector<WriteRequest> writes() const;
  // The client ports single-object GETs came from: one per connection they used.
  size_t get_connections() const {
    std::lock_guard lock(mutex_);
    return get_ports_.size();
  }

 private:
  // What a request path names: a collection or one object of a served resource.
  struct Target {
    ResourceType type;
    std::string name;            // type.name(): where its objects are stored
    std::string namespace_name;  // from the URL ("" for cluster-wide or cluster-scoped)
    std::string object_name;     // "" for a collection
  };
  struct Stored {
    Json object;
    std::string raw;  // put_raw's text, sent instead of `object` when set
    bool is_raw = false;
  };
  struct Event {
    long long rv;
    std::string resource;  // a ResourceType::name()
    std::string key;       // namespace/name
    std::string type;
    Json object;
    std::string raw;
  };

  void route();
  void handle(const httplib::Request& req, httplib::Response& res);
  bool authorized(const httplib::Request& req, httplib::Response& res);
  void get_object(const Target& target, const httplib::Request& req, httplib::Response& res);
  void list(const Target& target, const httplib::Request& req, httplib::Response& res);
  void watch(const Target& target, const httplib::Request& req, httplib::Response& res);
  void create(const Target& target, const httplib::Request& req, httplib::Response& res);
  void update(const Target& target, const httplib::Request& req, httplib::Response& res);
  void erase(const Target& target, const httplib::Request& req, httplib::Response& res);

  // Discovery (fake_apiserver_discovery.cpp); the *_locked ones want mutex_ held.
  bool serve_discovery(const std::vector<std::string>& segments, httplib::Response& res) const;
  bool find_target(const std::vector<std::string>& segments, Target& target) const;
  bool group_hidden(std::string_view group) const;
  std::string resolve_locked(const std::string& resource, std::string& error) const;
  const ResourceType* preferred_locked(const std::string& name) const;

  // Stores an object of resource `name` (a ResourceType::name()) and records its event.
  void store_locked(const std::string& name, const std::string& key, Stored stored, bool announce);
  // Removes the object at `key` and records its DELETED event; false when there is none.
  bool remove_locked(const std::string& name, const std::string& key);
  std::string next_uid_locked();
  void record_write(const httplib::Request& req, const httplib::Response& res);
  // How many keys of store `name` from `from` on start with `prefix`: remainingItemCount, read
  // from a sorted index of the store's keys (rebuilt after a key is added or removed), so
  // that a page costs the same whatever the store holds.
  size_t keys_from_locked(const std::string& name, const std::string& from, const std::string& prefix);

  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::string dir_;
  std::string cert_pem_;
  std::string key_pem_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ResourceType> resources_;
  long long rv_ = 100;
  long long compacted_ = 0;  // watches from below this get 410
  int cut_generation_ = 0;
  int continue_epoch_ = 0;   // continue tokens of older epochs are expired
  long long uids_ = 0;
  bool stopping_ = false;
  std::string expire_next_watch_;  // a ResourceType::name()
  std::map<std::string, std::map<std::string, Stored>> objects_;  // name -> ns/name -> object
  std::map<std::string, int> list_pages_, lists_;                 // name -> count
  std::vector<WriteRequest> writes_;
  std::set<int> get_ports_;
  std::set<std::string> client_certs_;  // DER of the accepted client certificates
  std::set<std::string> forbidden_;     // "verb resource" (a ResourceType::name())
  bool forbidden(const Target& target, const std::string& verb, httplib::Response& res);
  std::vector<Event> events_;
  std::map<std::string, std::vector<const std::string*>> key_index_;  // name -> objects_[name]'s keys, in order
};

}  // namespace cluster_test
