// A certificate authority that keeps its key, and the serving certificates it issues: what
// `serve --certs self-managed` keeps in its Secret and renews (webhook/cluster/cert_keeper.h), and
// what generate_serving_bundle (certs.h) builds its throw-away CA with. Lifetimes are seconds, so
// tests can let certificates expire in seconds. ECDSA P-256 and SHA-256 as in certs.h; every
// function reports failure as a value (`error`), none throws.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "certs/certs.h"

namespace gpu_admission::certs {

// Validity of a certificate, unix seconds.
struct Validity {
  std::int64_t not_before = 0;
  std::int64_t not_after = 0;
  std::string error;
  bool ok() const { return error.empty(); }
  // When two thirds of the lifetime have passed: the time to renew.
  std::int64_t renew_at() const { return not_before + (not_after - not_before) * 2 / 3; }
};

// A self-signed CA certificate (CA:TRUE, keyCertSign) and its private key (PKCS#8 PEM).
struct Authority {
  std::string cert_pem;
  std::string key_pem;
  Validity validity;
  std::string error;
  bool ok() const { return error.empty(); }
};

// A new CA valid for `lifetime_seconds` (at least 10 seconds) from `now` (0: the current time), backdated
// by 5 minutes or a tenth of its lifetime, whichever is less, for clocks a little behind ours.
// Its common name is "gpu-admission-ca@<now>".
Authority generate_authority(std::int64_t lifetime_seconds, std::time_t now = 0);

// A CA read back (a Secret's ca.crt and ca.key): an error unless the key belongs to the
// certificate and the certificate is a CA.
Authority load_authority(std::string_view cert_pem, std::string_view key_pem);

// A serving certificate for the Service's four DNS names (service_dns_names), signed by `ca`, valid
// for `lifetime_seconds` (at least 10 seconds) but never past the CA's own notAfter. KeyPair::not_before and
// not_after are set.
KeyPair issue_serving_certificate(const Authority& ca, std::string_view service, std::string_view ns,
                                  std::int64_t lifetime_seconds, std::time_t now = 0);

// notBefore and notAfter of the first certificate of `cert_pem`.
Validity certificate_validity(std::string_view cert_pem);

// True when the first certificate of `cert_pem` was signed by the first of `ca_pem` (issuer name
// and signature).
bool issued_by(std::string_view cert_pem, std::string_view ca_pem);

// The serial number of the first certificate of `cert_pem`, upper-case hex ("" when unreadable).
std::string certificate_serial_hex(std::string_view cert_pem);

// The subjectAltName DNS names of the first certificate of `cert_pem` (empty when unreadable).
std::vector<std::string> certificate_dns_names(std::string_view cert_pem);

// Each "-----BEGIN CERTIFICATE-----" ... "-----END CERTIFICATE-----" block of a PEM bundle, with a
// final newline, in order; anything between blocks is dropped.
std::vector<std::string> split_certificates(std::string_view pem_bundle);

}  // namespace gpu_admission::certs
