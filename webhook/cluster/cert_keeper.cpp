// Self-managed certificates: the Secret, the caBundles and the certificate served (cert_keeper.h).
#include "webhook/cluster/cert_keeper.h"

#include <algorithm>

#include "certs/certs.h"
#include "webhook/cluster/webhook_ca_bundle.h"
#include "webhook/io/clock.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr int kAttempts = 5;                 // reads of the Secret per round (each 409 costs one)
constexpr size_t kMaxSecretBytes = 1u << 20;  // the API server stores at most 1 MiB per object

std::string when(std::int64_t unix_seconds) { return certs::format_utc(unix_seconds); }

// The Secret-write operation a plan is counted under.
std::string_view operation_of(Renewal what) { return renewal_name(what); }

}  // namespace

CertKeeper::CertKeeper(KubeConfig config, CertKeeperOptions options, Install install, Metrics* metrics, Logger* logger)
    : client_(std::move(config)), options_(std::move(options)), install_(std::move(install)), metrics_(metrics),
      logger_(logger) {
  client_.set_logger(logger);
  not_ready_ = "waiting for the self-managed certificate in Secret " + secret_ref();
}

CertKeeper::~CertKeeper() { stop(); }

bool CertKeeper::init(std::string& error) {
  if (!client_ready_) client_ready_ = client_.init(error);
  return client_ready_;
}

bool CertKeeper::start(std::string& error) {
  if (!init(error)) return false;
  thread_ = std::thread([this] { run(); });
  return true;
}

void CertKeeper::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string CertKeeper::not_ready_reason() const {
  std::lock_guard lock(mutex_);
  return not_ready_;
}

std::string CertKeeper::secret_path(bool collection) const {
  const std::string base = "/api/v1/namespaces/" + options_.ns + "/secrets";
  return collection ? base : base + "/" + options_.secret_name;
}

void CertKeeper::count(std::string_view operation, std::string_view result) {
  if (metrics_) metrics_->count_certificate_operation(operation, result);
}

// A failed round: logged when the error is new (a retry that fails the same way says nothing),
// and readiness says it until a certificate is served.
void CertKeeper::fail(const std::string& message, const Json& fields) {
  std::lock_guard lock(mutex_);
  if (installed_serial_.empty()) not_ready_ = "self-managed certificate: " + message;
  if (message == last_error_) return;
  last_error_ = message;
  if (!logger_) return;
  Json all = fields;
  all["secret"] = secret_ref();
  all["error"] = message;
  logger_->error("self-managed certificates: " + message + " (retrying; the certificate served stays in use)", all);
}

bool CertKeeper::sync() {
  const std::int64_t now = unix_now();
  CertMaterial material;
  if (!ensure_secret(now, material)) return false;
  bool trusted = false;
  const bool bundles_ok = ensure_bundles(material, trusted);
  install_if_due(material, trusted, now);
  std::lock_guard lock(mutex_);
  next_renewal_ = next_renewal(material);
  if (bundles_ok) last_error_.clear();
  return bundles_ok && installed_serial_ == material.serial();
}

// The Secret as it should be: read, created when absent, renewed when due, the winner's read
// back after a lost race. False (logged, counted) when it cannot be had.
bool CertKeeper::ensure_secret(std::int64_t now, CertMaterial& material) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const HttpResult got = client_.get(secret_path(false), options_.request_timeout, kMaxSecretBytes);
    if (got.status == 403) {
      fail(forbidden_hint("get", "secrets", "", options_.secret_name, options_.ns));
      return false;
    }
    if (got.status != 404 && !got.ok()) {
      fail("cannot read Secret " + secret_ref() + ": " + api_error(got));
      return false;
    }
    Json secret = got.ok() ? Json::parse(got.body, nullptr, false) : Json();
    if (got.ok() && !secret.is_object()) {
      fail("cannot read Secret " + secret_ref() + ": the answer is not a JSON object");
      return false;
    }
    const SecretContents contents = got.ok() ? read_secret(secret, options_.settings, now) : SecretContents{};
    const RenewalPlan plan = plan_renewal(contents, options_.settings, now, got.ok());
    if (plan.what == Renewal::None) {
      material = *contents.material;
      return true;
    }
    bool conflict = false;
    if (write_secret(secret, contents, plan, now, material, conflict)) return true;
    if (!conflict) return false;
    // Another replica wrote first: its Secret is read and used (or renewed, if still due).
  }
  fail("Secret " + secret_ref() + " kept changing under " + std::to_string(kAttempts) + " writes in a row");
  return false;
}

// Creates or updates the Secret per `plan`. `conflict`: another writer came first (409).
bool CertKeeper::write_secret(const Json& base, const SecretContents& contents, const RenewalPlan& plan,
                              std::int64_t now, CertMaterial& material, bool& conflict) {
  const std::string_view operation = operation_of(plan.what);
  Renewed renewed = renew(contents, plan, options_.settings, now);
  if (!renewed.ok()) {
    count(operation, "error");
    fail("cannot make certificates: " + renewed.error);
    return false;
  }
  const bool create = plan.what == Renewal::Create;
  const Json object = secret_with(create ? Json() : base, options_.secret_name, options_.ns, renewed.material);
  const HttpResult put = create ? client_.send("POST", secret_path(true), object.dump(), options_.request_timeout)
                                : client_.send("PUT", secret_path(false), object.dump(), options_.request_timeout);
  if (put.status == 409) {
    count(operation, "conflict");
    conflict = true;
    if (logger_)
      logger_->info("another replica wrote Secret " + secret_ref() + " first; using its certificate",
                    {{"secret", secret_ref()}, {"operation", operation}});
    return false;
  }
  if (put.status == 403) {
    count(operation, "error");
    fail(forbidden_hint(create ? "create" : "update", "secrets", "", options_.secret_name, options_.ns));
    return false;
  }
  if (!(put.status == 200 || put.status == 201)) {
    count(operation, "error");
    fail("cannot " + std::string(create ? "create" : "update") + " Secret " + secret_ref() + ": " + api_error(put));
    return false;
  }
  count(operation, "success");
  material = std::move(renewed.material);
  if (logger_)
    logger_->info(std::string(create ? "self-managed certificate created" : "self-managed certificate renewed") +
                      " in Secret " + secret_ref(),
                  {{"secret", secret_ref()},
                   {"operation", operation},
                   {"reason", plan.why},
                   {"serial", material.serial()},
                   {"not_after", when(material.serving.not_after)},
                   {"ca_not_after", when(material.ca.validity.not_after)},
                   {"trusted_cas", material.trusted.size()}});
  return true;
}

// Every named configuration's caBundle holds the material's CAs. `trusted`: each one does, or
// does not exist (so the certificate may be served). False when one could not be read or written.
bool CertKeeper::ensure_bundles(const CertMaterial& material, bool& trusted) {
  trusted = true;
  bool ok = true;
  const std::pair<WebhookKind, const std::string*> targets[] = {
      {WebhookKind::Validating, &options_.validating_configuration},
      {WebhookKind::Mutating, &options_.mutating_configuration}};
  for (const auto& [kind, name] : targets) {
    if (name->empty()) continue;
    const std::string what = std::string(kind_name(kind)) + " " + *name;
    const CaBundleWrite write =
        write_ca_bundle(client_, kind, *name, material.bundle(), options_.request_timeout, kAttempts);
    for (int i = 0; i < write.conflicts; ++i) count("ca-bundle", "conflict");
    switch (write.outcome) {
      case CaBundleWrite::Outcome::Current:
        break;
      case CaBundleWrite::Outcome::Written:
        count("ca-bundle", "success");
        if (logger_)
          logger_->info("caBundle written into " + what,
                        {{"configuration", *name}, {"kind", kind_name(kind)}, {"webhooks", write.webhooks},
                         {"trusted_cas", material.trusted.size()}, {"secret", secret_ref()}});
        break;
      case CaBundleWrite::Outcome::Absent: {
        std::lock_guard lock(mutex_);
        if (absent_logged_.find("|" + what + "|") == std::string::npos && logger_)
          logger_->warn(what + " does not exist (yet): its caBundle is written once it does",
                        {{"configuration", *name}, {"kind", kind_name(kind)}});
        absent_logged_ += "|" + what + "|";
        break;
      }
      case CaBundleWrite::Outcome::Failed:
        count("ca-bundle", "error");
        fail(write.error, {{"configuration", *name}, {"kind", kind_name(kind)}});
        trusted = false;
        ok = false;
        break;
    }
    if (write.outcome != CaBundleWrite::Outcome::Absent) {
      std::lock_guard lock(mutex_);
      const size_t at = absent_logged_.find("|" + what + "|");
      if (at != std::string::npos) absent_logged_.erase(at, what.size() + 2);
    }
  }
  return ok;
}

// Serves the Secret's certificate when it is not the one served: at once the first time (nothing
// trusted is served yet), else once the caBundles trust its CA, or when the one served is about to
// expire (a tenth of its lifetime left) whatever the caBundles say.
void CertKeeper::install_if_due(const CertMaterial& material, bool trusted, std::int64_t now) {
  std::string serial = material.serial();
  std::string replaced;
  {
    std::lock_guard lock(mutex_);
    if (serial == installed_serial_) return;
    const certs::Validity& served = installed_;
    replaced = installed_serial_;
    const bool first = installed_serial_.empty();
    const bool expiring = now >= served.not_after - (served.not_after - served.not_before) / 10;
    if (!first && !trusted && !expiring) return;
  }
  std::string error;
  if (!install_ || !install_(material, error)) {
    if (metrics_) metrics_->count_certificate_reload(false);
    fail("cannot serve the certificate of Secret " + secret_ref() + ": " + error);
    return;
  }
  if (metrics_) {
    metrics_->count_certificate_reload(true);
    metrics_->set_certificate_expiry(static_cast<double>(material.serving.not_after));
  }
  {
    std::lock_guard lock(mutex_);
    installed_serial_ = serial;
    installed_ = material.serving;
    not_ready_.clear();
  }
  if (logger_)
    logger_->info("serving the self-managed certificate of Secret " + secret_ref(),
                  {{"secret", secret_ref()}, {"serial", serial}, {"not_after", when(material.serving.not_after)},
                   {"ca_not_after", when(material.ca.validity.not_after)}, {"trusted_cas", material.trusted.size()},
                   {"replaced_serial", replaced.empty() ? Json(nullptr) : Json(replaced)}});
}

std::chrono::milliseconds CertKeeper::next_wait() const {
  std::lock_guard lock(mutex_);
  const std::int64_t seconds = next_renewal_ - unix_now();
  const std::chrono::milliseconds until = std::chrono::seconds(std::max<std::int64_t>(seconds, 0)) + std::chrono::milliseconds(200);
  return std::min(until, options_.resync);
}

void CertKeeper::run() {
  std::chrono::milliseconds backoff = options_.retry;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool ok = sync();
    std::chrono::milliseconds wait = ok ? next_wait() : backoff;
    backoff = ok ? options_.retry : std::min(backoff * 2, options_.resync);
    lock.lock();
    wake_.wait_for(lock, wait, [&] { return stopping_; });
  }
}

}  // namespace gpu_admission::webhook::cluster
