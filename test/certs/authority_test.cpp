// A CA that keeps its key (certs/authority.h): read back only when its key belongs to it and it is
// a CA; the serving certificates it issues, checked by issuer, names, serial and validity; PEM
// bundles split into their certificates.
#include <catch2/catch.hpp>

#include "certs/authority.h"
#include "certs/certs.h"

namespace certs = gpu_admission::certs;

namespace {

constexpr std::time_t kNow = 1'800'000'000;  // a fixed issue time

certs::Authority make_ca(std::int64_t lifetime = 3000) {
  certs::Authority ca = certs::generate_authority(lifetime, kNow);
  REQUIRE(ca.error == "");
  return ca;
}

}  // namespace

TEST_CASE("authority: read back only with its own key, and only a CA", "[certs][authority]") {
  const certs::Authority ca = make_ca();
  const certs::Authority other = make_ca();
  CHECK(certs::load_authority(ca.cert_pem, ca.key_pem).ok());
  CHECK(certs::load_authority(ca.cert_pem, ca.key_pem).validity.not_after == ca.validity.not_after);
  CHECK(certs::load_authority(ca.cert_pem, other.key_pem).error == "the CA key does not belong to the CA certificate");
  CHECK(certs::load_authority("", ca.key_pem).error.rfind("CA certificate: no PEM certificate found", 0) == 0);
  CHECK(certs::load_authority(ca.cert_pem, "").error.rfind("CA key: no PEM private key found", 0) == 0);
  // A serving certificate with its key is a pair, but no CA.
  const certs::KeyPair leaf = certs::issue_serving_certificate(ca, "gpu-admission", "gpu-system", 1000, kNow);
  REQUIRE(leaf.ok());
  CHECK(certs::load_authority(leaf.cert_pem, leaf.key_pem).error == "the CA certificate is not a CA");
}

TEST_CASE("authority: issued certificates name the Service and their issuer", "[certs][authority]") {
  const certs::Authority ca = make_ca();
  const certs::Authority other = make_ca();
  const certs::KeyPair leaf = certs::issue_serving_certificate(ca, "gpu-admission", "gpu-system", 1200, kNow);
  REQUIRE(leaf.ok());
  CHECK(certs::issued_by(leaf.cert_pem, ca.cert_pem));
  CHECK_FALSE(certs::issued_by(leaf.cert_pem, other.cert_pem));
  CHECK_FALSE(certs::issued_by("garbage", ca.cert_pem));
  CHECK(certs::certificate_dns_names(leaf.cert_pem) == certs::service_dns_names("gpu-admission", "gpu-system"));
  CHECK(certs::certificate_dns_names("garbage").empty());
  const std::string serial = certs::certificate_serial_hex(leaf.cert_pem);
  CHECK(serial.size() >= 30);
  CHECK(serial.find_first_not_of("0123456789ABCDEF") == std::string::npos);
  CHECK(serial != certs::certificate_serial_hex(ca.cert_pem));
  // Backdated by a tenth of a short lifetime; renewal due at two thirds of it.
  const certs::Validity validity = certs::certificate_validity(leaf.cert_pem);
  CHECK(validity.not_before == kNow - 120);
  CHECK(validity.not_after == kNow + 1200);
  CHECK(validity.renew_at() == validity.not_before + (1200 + 120) * 2 / 3);
  CHECK_FALSE(certs::certificate_validity("garbage").ok());
  // Bad names are refused, not issued.
  CHECK(certs::issue_serving_certificate(ca, "Bad_Name", "gpu-system", 1200, kNow).error ==
        "invalid service name \"Bad_Name\"");
  CHECK(certs::issue_serving_certificate(ca, "svc", "ns.", 1200, kNow).error == "invalid namespace \"ns.\"");
}

TEST_CASE("authority: a PEM bundle splits into its certificates, in order", "[certs][authority]") {
  const certs::Authority a = make_ca();
  const certs::Authority b = make_ca();
  const std::vector<std::string> both = certs::split_certificates("# comment\n" + a.cert_pem + "junk\n" + b.cert_pem);
  REQUIRE(both.size() == 2);
  CHECK(both[0] == a.cert_pem);
  CHECK(both[1] == b.cert_pem);
  CHECK(certs::split_certificates("").empty());
  // A block without its end is dropped.
  CHECK(certs::split_certificates(a.cert_pem.substr(0, 40)).empty());
}
