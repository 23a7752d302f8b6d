// The self-managed certificates' decisions without an API server (webhook/cluster/cert_material.h):
// what a Secret holds, when and why it is renewed (two thirds of a lifetime, unusable or foreign
// content), what a renewal keeps trusting, and the Secret written back.
#include <catch2/catch.hpp>

#include "certs/authority.h"
#include "certs/certs.h"
#include "cluster_test_support.h"
#include "webhook/cluster/cert_material.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/ops/base64.h"

namespace {

using namespace cluster_test;
namespace certs = gpu_admission::certs;
using gpu_admission::webhook::base64_decode;
using gpu_admission::webhook::base64_encode;

constexpr std::int64_t kT0 = 1'900'000'000;  // a fixed issue time

cl::CertSettings settings() {
  cl::CertSettings s;
  s.service = "gpu-admission";
  s.ns = "gpu-system";
  s.ca_lifetime = 3000;
  s.serving_lifetime = 900;
  return s;
}

// The Secret a first renewal (a create) at `now` writes.
Json created_secret(const cl::CertSettings& with = settings(), std::int64_t now = kT0) {
  const cl::SecretContents none;
  const cl::Renewed made = cl::renew(none, cl::plan_renewal(none, with, now, false), with, now);
  REQUIRE(made.ok());
  return cl::secret_with(Json(), "certs", "gpu-system", made.material);
}

std::string data(const Json& secret, const char* key) {
  return base64_decode(secret["data"][key].get<std::string>()).value_or("");
}

}  // namespace

TEST_CASE("cert material: a created Secret holds a CA that signed a serving pair for the Service",
          "[cluster][certs]") {
  const Json secret = created_secret();
  CHECK(secret["type"] == "kubernetes.io/tls");
  CHECK(secret["metadata"]["name"] == "certs");
  CHECK(secret["metadata"]["namespace"] == "gpu-system");
  const std::string ca = data(secret, "ca.crt"), cert = data(secret, "tls.crt"), key = data(secret, "tls.key");
  CHECK(certs::split_certificates(ca).size() == 1);
  CHECK(certs::issued_by(cert, ca));
  CHECK(certs::check_key_matches(cert, key).empty());
  CHECK(certs::load_authority(ca, data(secret, "ca.key")).ok());
  std::vector<std::string> names = certs::certificate_dns_names(cert);
  CHECK(names == certs::service_dns_names("gpu-admission", "gpu-system"));
  const certs::Validity serving = certs::certificate_validity(cert);
  CHECK(serving.not_after == kT0 + 900);
  CHECK(serving.not_before == kT0 - 90);  // backdated a tenth of a short lifetime
  CHECK(certs::certificate_validity(ca).not_after == kT0 + 3000);

  // Read back: usable, nothing to do until two thirds of the serving lifetime.
  const cl::SecretContents read = cl::read_secret(secret, settings(), kT0 + 10);
  REQUIRE(read.material);
  CHECK(read.serving_problem.empty());
  CHECK(cl::plan_renewal(read, settings(), kT0 + 10, true).what == cl::Renewal::None);
  CHECK(cl::next_renewal(*read.material) == serving.renew_at());
  CHECK(serving.renew_at() == kT0 - 90 + 990 * 2 / 3);
}

TEST_CASE("cert material: the serving certificate is renewed by the same CA at two thirds of its lifetime",
          "[cluster][certs]") {
  const Json secret = created_secret();
  const std::int64_t due = certs::certificate_validity(data(secret, "tls.crt")).renew_at();
  const cl::SecretContents read = cl::read_secret(secret, settings(), due);
  CHECK(cl::plan_renewal(read, settings(), due - 1, true).what == cl::Renewal::None);
  const cl::RenewalPlan plan = cl::plan_renewal(read, settings(), due, true);
  CHECK(plan.what == cl::Renewal::RenewServing);
  CHECK(plan.why.find("two thirds of the serving certificate's lifetime") != std::string::npos);
  const cl::Renewed renewed = cl::renew(read, plan, settings(), due);
  REQUIRE(renewed.ok());
  CHECK(renewed.material.ca.cert_pem == read.material->ca.cert_pem);  // the same CA
  CHECK(renewed.material.trusted.size() == 1);
  CHECK(renewed.material.serial() != read.material->serial());
  CHECK(certs::issued_by(renewed.material.cert_pem, renewed.material.ca.cert_pem));
  CHECK(renewed.material.serving.not_after == due + 900);
  // Written over the Secret read: its metadata (resourceVersion for the update) stays.
  Json base = secret;
  base["metadata"]["resourceVersion"] = "42";
  base["metadata"]["labels"]["team"] = "platform";
  const Json written = cl::secret_with(base, "certs", "gpu-system", renewed.material);
  CHECK(written["metadata"]["resourceVersion"] == "42");
  CHECK(written["metadata"]["labels"]["team"] == "platform");
  CHECK(data(written, "tls.crt") == renewed.material.cert_pem);
}

TEST_CASE("cert material: the CA is rotated at two thirds of its lifetime, both CAs trusted until the old expires",
          "[cluster][certs]") {
  cl::CertSettings long_serving = settings();
  long_serving.serving_lifetime = 2500;  // still valid when the old CA expires
  const Json secret = created_secret(long_serving);
  const std::string old_ca = data(secret, "ca.crt");
  const std::int64_t due = certs::certificate_validity(old_ca).renew_at();
  const cl::SecretContents read = cl::read_secret(secret, long_serving, due);
  const cl::RenewalPlan plan = cl::plan_renewal(read, long_serving, due, true);
  CHECK(plan.what == cl::Renewal::RotateCa);
  CHECK(plan.why.find("two thirds of the CA's lifetime") != std::string::npos);
  const cl::Renewed rotated = cl::renew(read, plan, long_serving, due);
  REQUIRE(rotated.ok());
  REQUIRE(rotated.material.trusted.size() == 2);
  CHECK(rotated.material.trusted[0] == rotated.material.ca.cert_pem);  // the new signer first
  CHECK(rotated.material.trusted[1] == old_ca);
  CHECK(certs::issued_by(rotated.material.cert_pem, rotated.material.ca.cert_pem));
  CHECK_FALSE(certs::issued_by(rotated.material.cert_pem, old_ca));

  // The rotated Secret reads back with both; once the old CA expires it is pruned.
  const Json next = cl::secret_with(secret, "certs", "gpu-system", rotated.material);
  CHECK(certs::split_certificates(data(next, "ca.crt")).size() == 2);
  const std::int64_t old_expiry = certs::certificate_validity(old_ca).not_after;
  const cl::SecretContents later = cl::read_secret(next, long_serving, old_expiry);
  REQUIRE(later.material);
  CHECK(cl::plan_renewal(later, long_serving, old_expiry - 1, true).what == cl::Renewal::None);
  const cl::RenewalPlan prune = cl::plan_renewal(later, long_serving, old_expiry, true);
  CHECK(prune.what == cl::Renewal::Prune);
  const cl::Renewed pruned = cl::renew(later, prune, long_serving, old_expiry);
  REQUIRE(pruned.ok());
  CHECK(pruned.material.trusted.size() == 1);
  CHECK(pruned.material.serial() == rotated.material.serial());  // the serving pair stays
}

TEST_CASE("cert material: unusable or foreign content is replaced or re-issued", "[cluster][certs]") {
  const Json secret = created_secret();
  SECTION("no CA key: a new CA, the old CA still trusted while valid") {
    Json broken = secret;
    broken["data"].erase("ca.key");
    const cl::SecretContents read = cl::read_secret(broken, settings(), kT0 + 5);
    CHECK_FALSE(read.material);
    CHECK(read.problem.find("ca.key") != std::string::npos);
    const cl::RenewalPlan plan = cl::plan_renewal(read, settings(), kT0 + 5, true);
    CHECK(plan.what == cl::Renewal::Replace);
    const cl::Renewed replaced = cl::renew(read, plan, settings(), kT0 + 5);
    REQUIRE(replaced.ok());
    CHECK(replaced.material.trusted.size() == 2);
    CHECK(replaced.material.trusted[1] == data(secret, "ca.crt"));
  }
  SECTION("a serving key of another certificate") {
    Json broken = secret;
    broken["data"]["tls.key"] = base64_encode(certs::generate_localhost_pair().key_pem);
    const cl::SecretContents read = cl::read_secret(broken, settings(), kT0 + 5);
    REQUIRE(read.material);
    CHECK(read.serving_problem.find("tls.key") != std::string::npos);
    CHECK(cl::plan_renewal(read, settings(), kT0 + 5, true).what == cl::Renewal::RenewServing);
  }
  SECTION("a serving certificate for another Service") {
    cl::CertSettings other = settings();
    other.service = "other";
    const cl::SecretContents read = cl::read_secret(secret, other, kT0 + 5);
    REQUIRE(read.material);
    CHECK(read.serving_problem.find("not for Service other.gpu-system") != std::string::npos);
    const cl::Renewed renewed = cl::renew(read, cl::plan_renewal(read, other, kT0 + 5, true), other, kT0 + 5);
    REQUIRE(renewed.ok());
    CHECK(certs::certificate_dns_names(renewed.material.cert_pem)[0] == "other");
  }
  SECTION("a serving certificate no CA of the Secret signed") {
    Json foreign = secret;
    const certs::ServingBundle other = certs::generate_serving_bundle({"gpu-admission", "gpu-system", 1, kT0});
    foreign["data"]["tls.crt"] = base64_encode(other.cert_pem);
    foreign["data"]["tls.key"] = base64_encode(other.key_pem);
    const cl::SecretContents read = cl::read_secret(foreign, settings(), kT0 + 5);
    CHECK(read.serving_problem.find("not signed by the CA") != std::string::npos);
  }
  SECTION("an empty Secret someone created") {
    const Json empty = {{"metadata", {{"name", "certs"}}}, {"type", "Opaque"}};
    const cl::SecretContents read = cl::read_secret(empty, settings(), kT0);
    CHECK(cl::plan_renewal(read, settings(), kT0, true).what == cl::Renewal::Replace);
    const cl::Renewed made = cl::renew(read, cl::plan_renewal(read, settings(), kT0, true), settings(), kT0);
    REQUIRE(made.ok());
    CHECK(cl::secret_with(empty, "certs", "gpu-system", made.material)["type"] == "Opaque");  // a type never changes
  }
}

TEST_CASE("certs: an authority's serving certificates never outlive it; short lifetimes are refused",
          "[cluster][certs]") {
  const certs::Authority ca = certs::generate_authority(600, kT0);
  REQUIRE(ca.ok());
  const certs::KeyPair pair = certs::issue_serving_certificate(ca, "svc", "ns", 3600, kT0);
  REQUIRE(pair.ok());
  CHECK(pair.not_after == ca.validity.not_after);
  CHECK_FALSE(certs::generate_authority(5, kT0).ok());
  CHECK_FALSE(certs::issue_serving_certificate(ca, "svc", "ns", 5, kT0).ok());
  CHECK_FALSE(certs::issue_serving_certificate(ca, "Not_A_Service", "ns", 600, kT0).ok());
  CHECK_FALSE(certs::load_authority(pair.cert_pem, pair.key_pem).ok());  // not a CA
  CHECK_FALSE(certs::load_authority(ca.cert_pem, pair.key_pem).ok());    // not its key
  CHECK(certs::certificate_serial_hex(pair.cert_pem).size() >= 16);
  CHECK(certs::split_certificates("junk" + ca.cert_pem + "\nmore junk\n" + pair.cert_pem).size() == 2);
}
