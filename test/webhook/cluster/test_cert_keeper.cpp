// Self-managed certificates against the stand-in API server (webhook/cluster/cert_keeper.h): the
// Secret created when absent, the caBundle of every webhook of both configurations written, the
// certificate installed; two keepers racing (one Secret, the loser uses the winner's); renewal and
// CA rotation with a conditional update; configurations that appear later or lose their caBundle;
// and RBAC refusals that name the verb and resource.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "certs/authority.h"
#include "cluster_test_support.h"
#include "webhook/cluster/cert_keeper.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/ops/base64.h"

namespace {

using namespace cluster_test;
namespace certs = gpu_admission::certs;
using gpu_admission::webhook::base64_decode;

constexpr const char* kNs = "gpu-admission";
constexpr const char* kSecret = "gpu-admission-certs";

Json configuration(const std::string& name, int webhooks) {
  Json list = Json::array();
  for (int i = 0; i < webhooks; ++i)
    list.push_back({{"name", "hook" + std::to_string(i) + ".gpu-admission.io"},
                    {"clientConfig", {{"service", {{"name", "gpu-admission"}, {"namespace", kNs}, {"path", "/validate"}}}}},
                    {"admissionReviewVersions", {"v1"}},
                    {"sideEffects", "None"}});
  return {{"metadata", {{"name", name}}}, {"webhooks", list}};
}

struct Installed {
  std::mutex mutex;
  std::vector<std::string> serials;
  std::string last() {
    std::lock_guard lock(mutex);
    return serials.empty() ? "" : serials.back();
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return serials.size();
  }
};

cl::CertKeeperOptions keeper_options() {
  cl::CertKeeperOptions options;
  options.secret_name = kSecret;
  options.ns = kNs;
  options.settings.service = "gpu-admission";
  options.settings.ns = kNs;
  options.validating_configuration = "gpu-admission";
  options.mutating_configuration = "gpu-admission";
  options.request_timeout = 3s;
  return options;
}

std::unique_ptr<cl::CertKeeper> keeper_for(const FakeApiServer& api, Installed& installed,
                                           gpu_admission::webhook::Metrics* metrics = nullptr,
                                           gpu_admission::webhook::Logger* logger = nullptr) {
  auto install = [&installed](const cl::CertMaterial& material, std::string&) {
    std::lock_guard lock(installed.mutex);
    installed.serials.push_back(material.serial());
    return true;
  };
  auto keeper = std::make_unique<cl::CertKeeper>(config_for(api), keeper_options(), install, metrics, logger);
  std::string error;
  REQUIRE(keeper->init(error));
  return keeper;
}

std::string secret_data(const FakeApiServer& api, const char* key) {
  const Json secret = api.stored("secrets", kNs, kSecret);
  if (!secret.is_object()) return "";
  return base64_decode(secret["data"].value(key, "")).value_or("");
}

// Every caBundle of both configurations, decoded ("" where one is missing).
std::vector<std::string> bundles(const FakeApiServer& api) {
  std::vector<std::string> out;
  for (const char* resource : {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}) {
    const Json c = api.stored(resource, "", "gpu-admission");
    if (!c.is_object()) continue;
    for (const auto& hook : c["webhooks"])
      out.push_back(base64_decode(hook["clientConfig"].value("caBundle", "")).value_or(""));
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int writes_to(const FakeApiServer& api, const std::string& method, const std::string& part, int status) {
  int n = 0;
  for (const auto& w : api.writes())
    if (w.method == method && w.path.find(part) != std::string::npos && w.status == status) ++n;
  return n;
}

// A Secret whose certificates were made `ago` seconds before now with these lifetimes.
void put_aged_secret(FakeApiServer& api, std::int64_t ago, std::int64_t ca_lifetime, std::int64_t serving_lifetime) {
  cl::CertSettings settings = keeper_options().settings;
  settings.ca_lifetime = ca_lifetime;
  settings.serving_lifetime = serving_lifetime;
  const std::int64_t then = ::time(nullptr) - ago;
  const cl::SecretContents none;
  const cl::Renewed made = cl::renew(none, cl::plan_renewal(none, settings, then, false), settings, then);
  REQUIRE(made.ok());
  REQUIRE(api.put("secrets", cl::secret_with(Json(), kSecret, kNs, made.material)));
}

}  // namespace

TEST_CASE("cert keeper: creates the Secret, writes every caBundle, installs the certificate", "[cluster][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 2));
  api.put("mutatingwebhookconfigurations", configuration("gpu-admission", 1));
  REQUIRE(api.start());
  Installed installed;
  gpu_admission::webhook::Metrics metrics;
  auto keeper = keeper_for(api, installed, &metrics);
  CHECK(keeper->not_ready_reason().find("waiting for the self-managed certificate in Secret gpu-admission/") == 0);
  REQUIRE(keeper->sync());
  CHECK(keeper->not_ready_reason().empty());

  const Json secret = api.stored("secrets", kNs, kSecret);
  REQUIRE(secret.is_object());
  CHECK(secret["type"] == "kubernetes.io/tls");
  const std::string ca = secret_data(api, "ca.crt");
  CHECK(certs::issued_by(secret_data(api, "tls.crt"), ca));
  CHECK(installed.last() == certs::certificate_serial_hex(secret_data(api, "tls.crt")));
  const auto all = bundles(api);
  REQUIRE(all.size() == 3);
  for (const auto& bundle : all) CHECK(bundle == ca);
  CHECK(writes_to(api, "POST", "/secrets", 201) == 1);
  CHECK(writes_to(api, "PUT", "webhookconfigurations/gpu-admission", 200) == 2);

  // A second round finds everything in place and writes nothing.
  const size_t writes = api.writes().size();
  REQUIRE(keeper->sync());
  CHECK(api.writes().size() == writes);
  CHECK(installed.count() == 1);
  const std::string text = metrics.serialize();
  CHECK(text.find("gpu_admission_certificate_operations_total{operation=\"create\",result=\"success\"} 1") !=
        std::string::npos);
  CHECK(text.find("gpu_admission_certificate_operations_total{operation=\"ca-bundle\",result=\"success\"} 2") !=
        std::string::npos);
  CHECK(text.find("gpu_admission_certificate_reloads_total{result=\"success\"} 1") != std::string::npos);
}

TEST_CASE("cert keeper: two replicas racing at first start end with one Secret and one certificate",
          "[cluster][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 1));
  api.put("mutatingwebhookconfigurations", configuration("gpu-admission", 1));
  api.get_delay_ms = 100;  // both read "absent" before either creates
  REQUIRE(api.start());
  Installed a, b;
  auto first = keeper_for(api, a);
  auto second = keeper_for(api, b);
  std::atomic<bool> ok_a{false}, ok_b{false};
  std::thread ta([&] { ok_a = first->sync(); });
  std::thread tb([&] { ok_b = second->sync(); });
  ta.join();
  tb.join();
  CHECK(ok_a);
  CHECK(ok_b);
  CHECK(writes_to(api, "POST", "/secrets", 201) == 1);
  CHECK(writes_to(api, "POST", "/secrets", 409) == 1);  // the loser read the winner's
  CHECK(a.last() == b.last());
  CHECK(a.last() == certs::certificate_serial_hex(secret_data(api, "tls.crt")));
  for (const auto& bundle : bundles(api)) CHECK(bundle == secret_data(api, "ca.crt"));
}

TEST_CASE("cert keeper: renews the serving certificate with the same CA, conditionally", "[cluster][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 1));
  put_aged_secret(api, 700, 100000, 900);  // past two thirds of 900 s
  REQUIRE(api.start());
  const std::string old_serial = certs::certificate_serial_hex(secret_data(api, "tls.crt"));
  const std::string ca = secret_data(api, "ca.crt");
  Installed a, b;
  auto first = keeper_for(api, a);
  auto second = keeper_for(api, b);
  api.get_delay_ms = 100;
  std::thread ta([&] { first->sync(); });
  std::thread tb([&] { second->sync(); });
  ta.join();
  tb.join();
  const std::string serial = certs::certificate_serial_hex(secret_data(api, "tls.crt"));
  CHECK(serial != old_serial);
  CHECK(secret_data(api, "ca.crt") == ca);  // the same CA
  CHECK(writes_to(api, "PUT", "/secrets/", 200) == 1);
  CHECK(writes_to(api, "PUT", "/secrets/", 409) == 1);  // the loser's stale resourceVersion
  CHECK(a.last() == serial);
  CHECK(b.last() == serial);
  for (const auto& bundle : bundles(api)) CHECK(bundle == ca);
}

TEST_CASE("cert keeper: rotates the CA, the caBundle trusting both before the new certificate is served",
          "[cluster][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 2));
  api.put("mutatingwebhookconfigurations", configuration("gpu-admission", 1));
  put_aged_secret(api, 2100, 3000, 2000);  // past two thirds of the CA's 3000 s
  REQUIRE(api.start());
  const std::string old_ca = secret_data(api, "ca.crt");
  Installed installed;
  auto keeper = keeper_for(api, installed);
  REQUIRE(keeper->sync());
  const std::vector<std::string> trusted = certs::split_certificates(secret_data(api, "ca.crt"));
  REQUIRE(trusted.size() == 2);
  CHECK(trusted[1] == old_ca);
  CHECK(certs::issued_by(secret_data(api, "tls.crt"), trusted[0]));
  for (const auto& bundle : bundles(api)) CHECK(bundle == trusted[0] + trusted[1]);
  CHECK(installed.last() == certs::certificate_serial_hex(secret_data(api, "tls.crt")));
  // The caBundles were written before the certificate was installed: the PUTs came first.
  CHECK(writes_to(api, "PUT", "webhookconfigurations/gpu-admission", 200) == 2);
}

TEST_CASE("cert keeper: a configuration created later or losing its caBundle gets it back", "[cluster][certs]") {
  FakeApiServer api;
  REQUIRE(api.start());
  Installed installed;
  auto keeper = keeper_for(api, installed);
  REQUIRE(keeper->sync());  // no configuration yet: the certificate is served anyway
  CHECK(installed.count() == 1);
  CHECK(bundles(api).empty());
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 1));
  REQUIRE(keeper->sync());
  CHECK(bundles(api) == std::vector<std::string>{secret_data(api, "ca.crt")});
  // `helm upgrade` or a GitOps sync wipes it: written again on the next round.
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 1));
  CHECK(bundles(api) == std::vector<std::string>{""});
  REQUIRE(keeper->sync());
  CHECK(bundles(api) == std::vector<std::string>{secret_data(api, "ca.crt")});
  CHECK(installed.count() == 1);
}

TEST_CASE("cert keeper: RBAC refusals name the verb and the resource", "[cluster][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration("gpu-admission", 1));
  REQUIRE(api.start());
  TempDir dir;
  const int log_fd = ::open(dir.file("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(log_fd >= 0);
  gpu_admission::webhook::Logger logger(gpu_admission::webhook::LogLevel::Info, log_fd);
  Installed installed;
  auto keeper = keeper_for(api, installed, nullptr, &logger);
  api.forbid("create", "secrets");
  CHECK_FALSE(keeper->sync());
  const std::string reason = keeper->not_ready_reason();
  CHECK(reason.find("may not create secrets \"gpu-admission-certs\" in namespace gpu-admission") != std::string::npos);
  CHECK(reason.find("grant create on secrets in a Role of namespace gpu-admission") != std::string::npos);
  CHECK(installed.count() == 0);
  api.permit("create", "secrets");

  // The first certificate is served although no caBundle could be written (nothing trusted was
  // served before); the error names the verb, the resource and its name.
  api.forbid("update", "validatingwebhookconfigurations");
  CHECK_FALSE(keeper->sync());
  CHECK(installed.count() == 1);
  CHECK(keeper->not_ready_reason().empty());
  api.permit("update", "validatingwebhookconfigurations");
  api.forbid("get", "secrets");
  CHECK_FALSE(keeper->sync());
  api.permit("get", "secrets");
  CHECK(keeper->sync());
  CHECK(bundles(api) == std::vector<std::string>{secret_data(api, "ca.crt")});
  ::close(log_fd);
  const std::string log = read_file(dir.file("log"));
  CHECK(log.find("may not update validatingwebhookconfigurations.admissionregistration.k8s.io \\\"gpu-admission\\\"") !=
        std::string::npos);
  CHECK(log.find("resourceNames: [gpu-admission] in a ClusterRole") != std::string::npos);
  CHECK(log.find("may not get secrets") != std::string::npos);
  CHECK(log.find("caBundle written into ValidatingWebhookConfiguration gpu-admission") != std::string::npos);
}
