// The OpenSSL plumbing certs.cpp and authority.cpp share (internal to certs/): owning pointers,
// PEM parsing and encoding, OpenSSL's error queue as text, and building one X.509 certificate
// from a CertSpec. Nothing here throws; failures are values or null pointers with an error string.
#pragma once

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::certs::detail {

template <auto Free>
struct Deleter {
  template <class T>
  void operator()(T* p) const { Free(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

constexpr std::int64_t kBackdateSeconds = 5 * 60;  // tolerate clocks a little behind ours
constexpr std::size_t kMaxCommonName = 64;         // ub-common-name (RFC 5280)

// `what`, followed by the reasons OpenSSL queued on this thread (the queue is emptied).
std::string openssl_error(std::string_view what);
BioPtr memory_bio(std::string_view data);
std::string bio_contents(BIO* bio);

// The first certificate / private key of a PEM text; null with `error` set when there is none.
// Encrypted keys are refused (never a passphrase prompt).
X509Ptr parse_cert(std::string_view pem, std::string& error);
PKeyPtr parse_key(std::string_view pem, std::string& error);

std::int64_t asn1_to_unix(const ASN1_TIME* time, bool& ok);
PKeyPtr new_p256_key();
std::time_t resolve_now(std::time_t now);  // 0: the current time

struct Extension {
  int nid;
  std::string value;  // OpenSSL config syntax, e.g. "critical,CA:TRUE"
};

// What one certificate should contain; `issuer`/`issuer_key` null means self-signed. Valid from
// `now - backdate_seconds` until `now + lifetime_seconds`, capped at `not_after_cap` when set.
struct CertSpec {
  std::string common_name;
  EVP_PKEY* key = nullptr;  // the subject's key (public part is certified)
  X509* issuer = nullptr;
  EVP_PKEY* issuer_key = nullptr;
  std::time_t now = 0;
  std::int64_t lifetime_seconds = 0;
  std::int64_t backdate_seconds = kBackdateSeconds;
  std::int64_t not_after_cap = 0;
  std::vector<Extension> extensions;
};

// Random 128-bit serial, SHA-256 signature. Null with `error` set on failure.
X509Ptr build_cert(const CertSpec& spec, std::string& error);

std::string cert_to_pem(X509* cert, std::string& error);
std::string key_to_pem(EVP_PKEY* key, std::string& error);  // PKCS#8, unencrypted

// The extensions of a serving certificate for `dns_names` (serverAuth, digitalSignature).
std::vector<Extension> serving_extensions(const std::vector<std::string>& dns_names);

}  // namespace gpu_admission::certs::detail
