// Self-managed certificates (`serve --certs self-managed`): the webhook keeps its CA and serving
// certificate in a Secret of its namespace and needs neither Helm, cert-manager nor an operator to
// issue them, so a GitOps tool renders no key material and every render is the same.
//
// Each replica, on start and then at every renewal point (cert_material.h: two thirds of a
// lifetime) or resync: reads the Secret; creates it when absent (POST; a 409 AlreadyExists means
// another replica won the race: its Secret is read and used); renews it when due (PUT with the
// resourceVersion read; a 409 Conflict reads the winner's); writes ca.crt into the caBundle of its
// own webhook configurations when it differs (webhook_ca_bundle.h); and then serves the
// certificate through `install`, without a restart. A certificate signed by a new CA is served
// only once every configuration trusts that CA (or does not exist), so the API server never meets
// a certificate it cannot verify, unless the one served is about to expire. Failures are logged
// with what to do (a 403 names the verb and resource the service account lacks), counted
// (gpu_admission_certificate_operations_total), and retried with backoff; the certificate served
// stays in use meanwhile. Readiness waits for the first certificate from the Secret.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "webhook/cluster/cert_material.h"
#include "webhook/cluster/kube_client.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

namespace gpu_admission::webhook::cluster {

struct CertKeeperOptions {
  std::string secret_name;     // --certs-secret
  std::string ns;              // the Secret's namespace (--certs-namespace, else $POD_NAMESPACE)
  CertSettings settings;       // --service (and its namespace, the Secret's), lifetimes
  std::string validating_configuration;  // --validating-webhook-configuration ("" : none)
  std::string mutating_configuration;    // --mutating-webhook-configuration ("" : none)
  std::chrono::milliseconds resync{60'000};        // how often the Secret and caBundles are re-read
  std::chrono::milliseconds retry{1'000};          // first wait after a failure, doubling up to resync
  std::chrono::milliseconds request_timeout{10'000};
};

class CertKeeper {
 public:
  // Serves `material`'s certificate from now on; false with `error` when it cannot be used.
  using Install = std::function<bool(const CertMaterial& material, std::string& error)>;

  CertKeeper(KubeConfig config, CertKeeperOptions options, Install install, Metrics* metrics, Logger* logger);
  ~CertKeeper();  // stop()
  CertKeeper(const CertKeeper&) = delete;
  CertKeeper& operator=(const CertKeeper&) = delete;

  // Readies the API client (CA bundle, credentials); false with `error` set when it cannot be
  // used. start() calls it; a test driving sync() itself calls it first.
  bool init(std::string& error);
  // init() unless done, then starts the keeper's thread.
  bool start(std::string& error);
  void stop();

  // "" once a certificate from the Secret is served; else why not (thread-safe, cheap).
  std::string not_ready_reason() const;

  // One round: the Secret, the caBundles, the certificate served. True when all succeeded
  // (the thread runs it; tests may call it instead of start()).
  bool sync();
  // When the next round is due after a successful one (a renewal point, or the resync).
  std::chrono::milliseconds next_wait() const;

 private:
  bool ensure_secret(std::int64_t now, CertMaterial& material);
  bool write_secret(const Json& base, const SecretContents& contents, const RenewalPlan& plan, std::int64_t now,
                    CertMaterial& material, bool& conflict);
  bool ensure_bundles(const CertMaterial& material, bool& trusted);
  void install_if_due(const CertMaterial& material, bool trusted, std::int64_t now);
  void fail(const std::string& message, const Json& fields = Json::object());
  void count(std::string_view operation, std::string_view result);
  void run();
  std::string secret_path(bool collection) const;
  std::string secret_ref() const { return options_.ns + "/" + options_.secret_name; }

  KubeClient client_;
  bool client_ready_ = false;  // init() succeeded
  CertKeeperOptions options_;
  Install install_;
  Metrics* metrics_;
  Logger* logger_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
  std::string not_ready_ = "waiting for the self-managed certificate";
  std::string installed_serial_;   // of the certificate served from the Secret ("" : none yet)
  certs::Validity installed_;      // its validity
  std::int64_t next_renewal_ = 0;  // unix seconds
  std::string last_error_;         // logged once until it changes
  std::string absent_logged_;      // configurations whose absence was logged
};

}  // namespace gpu_admission::webhook::cluster
