// The HTTPS side of the audit benchmark's stand-in API server: serves a GeneratedCluster as the
// Kubernetes API server does to a reader with a bearer token. Discovery (/api, /api/v1, /apis,
// /apis/GROUP, /apis/GROUP/VERSION: APIVersions, APIGroupList with preferredVersion, APIGroup,
// APIResourceList with kind, name, verbs, namespaced and sub-resources), lists of every served
// resource cluster-wide or in one namespace, in etcd order (namespace, then name), items without
// apiVersion and kind, `limit` and `continue` (base64url tokens of the last key, like the real
// one's), single Namespace GETs, and Status objects for errors. Counts what it serves; GET
// /standin/counters returns the counts as JSON.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "bench/audit_cluster.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}  // namespace httplib

namespace gpu_admission::bench::audit {

class AuditApiServer {
 public:
  AuditApiServer(const GeneratedCluster& cluster, std::string token);
  ~AuditApiServer();
  AuditApiServer(const AuditApiServer&) = delete;
  AuditApiServer& operator=(const AuditApiServer&) = delete;

  // Listens on 127.0.0.1:`port` (0: any free port) with a fresh self-signed localhost
  // certificate. False with `error` when it cannot.
  bool start(int port, std::string& error);
  void stop();
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // A kubeconfig for this server: its CA inline, the bearer token.
  bool write_kubeconfig(const std::string& path, std::string& error) const;

  struct Counters {
    std::atomic<long long> requests{0}, discovery{0}, lists{0}, list_pages{0}, gets{0}, items{0}, bytes{0};
    std::atomic<long long> handler_ns{0}, unauthorized{0}, errors{0};
  };
  Counters counters;
  std::string counters_json() const;

 private:
  void handle(const httplib::Request& req, httplib::Response& res);
  void list(const Resource& resource, const std::string& ns, const httplib::Request& req, httplib::Response& res);

  const GeneratedCluster& cluster_;
  std::string token_;
  std::string cert_pem_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
};

}  // namespace gpu_admission::bench::audit
