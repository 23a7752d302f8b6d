// `serve --certs self-managed` as the chart runs it, against the stand-in API server, read back
// with kubectl as the reference client: two replicas racing at first start end with one Secret and
// serve the same certificate, verified for the Service's name against the caBundle the API server
// would use; readiness waits for the certificate (an RBAC refusal keeps it unready, named);
// renewal and CA rotation with short lifetimes reach both replicas without a restart.
#include <catch2/catch.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "certs/authority.h"
#include "kubeconfig_test_support.h"
#include "serve_child.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/server/server_test_support.h"
#include "webhook/ops/base64.h"

namespace {

using namespace cluster_test;
namespace certs = gpu_admission::certs;
using gpu_admission::webhook::base64_decode;
using gpu_admission::webhook::base64_encode;

constexpr const char* kNs = "gpu-admission";
constexpr const char* kSecret = "gpu-admission-certs";
constexpr const char* kServiceHost = "gpu-admission.gpu-admission.svc";

Json configuration(const std::vector<std::string>& paths) {
  Json list = Json::array();
  for (size_t i = 0; i < paths.size(); ++i)
    list.push_back({{"name", "hook" + std::to_string(i) + ".gpu-admission.io"},
                    {"clientConfig", {{"service", {{"name", "gpu-admission"}, {"namespace", kNs}, {"path", paths[i]}}}}},
                    {"admissionReviewVersions", {"v1"}},
                    {"sideEffects", "None"}});
  return {{"metadata", {{"name", "gpu-admission"}}}, {"webhooks", list}};
}

std::vector<std::string> serve_args(const std::string& kubeconfig, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"serve", "--certs", "self-managed", "--certs-secret", kSecret, "--certs-namespace",
                                   kNs, "--service", "gpu-admission", "--validating-webhook-configuration",
                                   "gpu-admission", "--mutating-webhook-configuration", "gpu-admission",
                                   "--kubeconfig", kubeconfig, "--cluster", "off", "--listen", "127.0.0.1:0",
                                   "--metrics-listen", "127.0.0.1:0", "--grace-period", "1", "--certs-resync", "2s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string secret_data(const FakeApiServer& api, const char* key) {
  const Json secret = api.stored("secrets", kNs, kSecret);
  if (!secret.is_object() || !secret["data"].contains(key)) return "";
  return base64_decode(secret["data"][key].get<std::string>()).value_or("");
}

std::string served_serial(int port) {
  server_test::TlsClient client;
  return client.connect(port) ? client.peer_serial() : "";
}

// Whether a TLS client trusting only `ca_bundle` accepts the server on `port` as `host`, the way
// the API server calls a webhook Service.
bool verifies(int port, const std::string& ca_bundle, const std::string& host) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const std::string& pem : certs::split_certificates(ca_bundle)) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (cert) X509_STORE_add_cert(store, cert);
    X509_free(cert);
    BIO_free(bio);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int fd = server_test::raw_connect(port);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, host.c_str());
  SSL_set1_host(ssl, host.c_str());
  const bool ok = fd >= 0 && SSL_connect(ssl) == 1 && SSL_get_verify_result(ssl) == X509_V_OK;
  SSL_free(ssl);
  if (fd >= 0) ::close(fd);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

// Every caBundle of both configurations, decoded.
std::vector<std::string> bundles(const FakeApiServer& api) {
  std::vector<std::string> out;
  for (const char* resource : {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}) {
    const Json configuration = api.stored(resource, "", "gpu-admission");  // outlives the loop below
    if (!configuration.is_object()) continue;
    for (const auto& hook : configuration["webhooks"])
      out.push_back(base64_decode(hook["clientConfig"].value("caBundle", "")).value_or(""));
  }
  return out;
}

int readyz(int port) {
  server_test::TlsClient client;
  return client.connect(port) ? client.request("GET", "/readyz").status : 0;
}

struct Replica {
  Child child;
  int port = 0;
  int metrics_port = 0;
  Replica(const std::vector<std::string>& args, const std::string& log) : child(args, log) {
    const Json serving = child.log_line("gpu-admission serving");
    if (serving.is_object()) {
      port = serving["port"];
      metrics_port = serving["metrics_port"];
    }
  }
};

}  // namespace

TEST_CASE("serve --certs self-managed: two replicas racing at first start share one Secret; kubectl reads it back",
          "[cluster][binary][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration({"/validate", "/validate"}));
  api.put("mutatingwebhookconfigurations", configuration({"/mutate"}));
  api.get_delay_ms = 50;  // both replicas find no Secret before either creates one
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));
  Replica a(serve_args(dir.file("kubeconfig")), dir.file("a.log"));
  Replica b(serve_args(dir.file("kubeconfig")), dir.file("b.log"));
  INFO(a.child.log() + b.child.log());
  REQUIRE(a.port > 0);
  REQUIRE(b.port > 0);
  CHECK(eventually([&] { return readyz(a.port) == 200 && readyz(b.port) == 200; }, 20s));

  // One Secret, created once; both serve its certificate, which the caBundles verify.
  int created = 0;
  for (const auto& w : api.writes()) created += w.method == "POST" && w.path.find("/secrets") != std::string::npos && w.status == 201;
  CHECK(created == 1);
  const std::string ca = secret_data(api, "ca.crt");
  const std::string serial = certs::certificate_serial_hex(secret_data(api, "tls.crt"));
  REQUIRE_FALSE(ca.empty());
  CHECK(served_serial(a.port) == serial);
  CHECK(served_serial(b.port) == serial);
  CHECK(eventually([&] {
    const auto all = bundles(api);
    return all.size() == 3 && std::all_of(all.begin(), all.end(), [&](const std::string& x) { return x == ca; });
  }));
  CHECK(verifies(a.port, ca, kServiceHost));
  CHECK(verifies(b.port, ca, kServiceHost));
  CHECK_FALSE(verifies(a.port, ca, "other.gpu-admission.svc"));
  CHECK(a.child.log().find("serving the self-managed certificate of Secret gpu-admission/gpu-admission-certs") !=
        std::string::npos);
  const std::string metrics = scrape(a.metrics_port) + scrape(b.metrics_port);
  CHECK(metrics.find("gpu_admission_certificate_operations_total{operation=\"create\",result=\"success\"} 1") !=
        std::string::npos);

  // kubectl, the reference client, reads the same Secret and caBundle.
  if (!have_kubectl()) {
    WARN("kubectl is not installed: the read-back with kubectl is skipped");
    return;
  }
  const std::string flags = "--kubeconfig " + dir.file("kubeconfig") + " ";
  const KubectlRun secret = kubectl(flags + "get secret " + kSecret + " -n " + kNs + " -o json", dir.path.string());
  INFO(secret.output);
  REQUIRE(secret.status == 0);
  const Json read = Json::parse(secret.output, nullptr, false);
  REQUIRE(read.is_object());
  CHECK(read["type"] == "kubernetes.io/tls");
  CHECK(base64_decode(read["data"]["ca.crt"].get<std::string>()).value_or("") == ca);
  CHECK(certs::certificate_serial_hex(base64_decode(read["data"]["tls.crt"].get<std::string>()).value_or("")) ==
        serial);
  const KubectlRun vwc =
      kubectl(flags + "get validatingwebhookconfiguration gpu-admission -o jsonpath={.webhooks[*].clientConfig.caBundle}",
              dir.path.string());
  INFO(vwc.output);
  REQUIRE(vwc.status == 0);
  const std::string encoded = base64_encode(ca);
  CHECK(vwc.output == encoded + " " + encoded);
  const KubectlRun listed = kubectl(flags + "get validatingwebhookconfiguration", dir.path.string());
  CHECK(listed.output.find("gpu-admission") != std::string::npos);
}

TEST_CASE("serve --certs self-managed: readyz waits for the certificate and names a missing permission",
          "[cluster][binary][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration({"/validate"}));
  api.forbid("create", "secrets");
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));
  Replica a(serve_args(dir.file("kubeconfig")), dir.file("a.log"));
  INFO(a.child.log());
  REQUIRE(a.port > 0);
  server_test::TlsClient client;
  REQUIRE(client.connect(a.port));
  CHECK(client.request("GET", "/healthz").status == 200);  // alive
  std::string body;
  CHECK(eventually([&] {
    auto response = client.request("GET", "/readyz");
    body = response.body;
    return response.status == 503 && body.find("may not create secrets") != std::string::npos;
  }));
  INFO(body);
  CHECK(a.child.log_line("RBAC: the service account may not create secrets").is_object());
  api.permit("create", "secrets");
  CHECK(eventually([&] { return readyz(a.port) == 200; }, 15s));
  CHECK(served_serial(a.port) == certs::certificate_serial_hex(secret_data(api, "tls.crt")));
}

TEST_CASE("serve --certs self-managed: renewal and CA rotation reach both replicas without a restart",
          "[cluster][binary][certs]") {
  FakeApiServer api;
  api.put("validatingwebhookconfigurations", configuration({"/validate", "/validate"}));
  api.put("mutatingwebhookconfigurations", configuration({"/mutate"}));
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));
  // Serving certificates renewed after about 6 s, the CA rotated after about 13 s (the old one valid until 20 s).
  const auto args = serve_args(dir.file("kubeconfig"), {"--certs-lifetime", "10s", "--certs-ca-lifetime", "20s"});
  Replica a(args, dir.file("a.log"));
  Replica b(args, dir.file("b.log"));
  INFO(a.child.log() + b.child.log());
  REQUIRE(a.port > 0);
  REQUIRE(b.port > 0);
  REQUIRE(eventually([&] { return readyz(a.port) == 200 && readyz(b.port) == 200; }, 20s));
  const std::string first_ca = secret_data(api, "ca.crt");
  const std::string first_serial = served_serial(a.port);

  // Renewed by the same CA: both serve the new certificate, the caBundle unchanged.
  std::string renewed;
  CHECK(eventually([&] {
    renewed = certs::certificate_serial_hex(secret_data(api, "tls.crt"));
    return renewed != first_serial && secret_data(api, "ca.crt") == first_ca && served_serial(a.port) == renewed &&
           served_serial(b.port) == renewed;
  }, 15s));
  CHECK((a.child.log() + b.child.log()).find("self-managed certificate renewed") != std::string::npos);

  // The CA rotated: the caBundle trusts the new and the old CA, both replicas serve a certificate
  // of the new one, which a client trusting the caBundle accepts.
  std::vector<std::string> trusted;
  CHECK(eventually([&] {
    trusted = certs::split_certificates(secret_data(api, "ca.crt"));
    const std::string serial = certs::certificate_serial_hex(secret_data(api, "tls.crt"));
    return trusted.size() == 2 && served_serial(a.port) == serial && served_serial(b.port) == serial;
  }, 20s));
  REQUIRE(trusted.size() == 2);
  CHECK(trusted[1] == first_ca);
  CHECK(certs::issued_by(secret_data(api, "tls.crt"), trusted[0]));
  for (const auto& bundle : bundles(api)) CHECK(bundle == trusted[0] + trusted[1]);
  CHECK(verifies(a.port, trusted[0] + trusted[1], kServiceHost));
  CHECK(verifies(b.port, trusted[0] + trusted[1], kServiceHost));
  CHECK((a.child.log() + b.child.log()).find("\"operation\":\"rotate-ca\"") != std::string::npos);
  // Nothing restarted: the same processes answer.
  CHECK(readyz(a.port) == 200);
  CHECK(readyz(b.port) == 200);
}
