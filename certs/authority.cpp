// Certificate authorities that keep their key, and the serving certificates they issue
// (authority.h).
#include "certs/authority.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "certs/openssl_util.h"

namespace gpu_admission::certs {
namespace {

using namespace detail;

constexpr std::int64_t kMinLifetime = 10;  // seconds: tests let certificates expire

std::int64_t backdate_for(std::int64_t lifetime) { return std::min<std::int64_t>(kBackdateSeconds, lifetime / 10); }

Validity validity_of(X509* cert) {
  Validity out;
  bool before_ok = false, after_ok = false;
  out.not_before = asn1_to_unix(X509_get0_notBefore(cert), before_ok);
  out.not_after = asn1_to_unix(X509_get0_notAfter(cert), after_ok);
  if (!before_ok || !after_ok) out.error = openssl_error("unreadable validity period");
  return out;
}

Authority authority_error(std::string error) {
  Authority out;
  out.error = std::move(error);
  return out;
}

}  // namespace

Authority generate_authority(std::int64_t lifetime_seconds, std::time_t now_in) {
  if (lifetime_seconds < kMinLifetime)
    return authority_error("the CA lifetime must be at least " + std::to_string(kMinLifetime) + " seconds");
  ERR_clear_error();
  const std::time_t now = resolve_now(now_in);
  PKeyPtr key = new_p256_key();
  if (!key) return authority_error(openssl_error("generating the CA key"));
  CertSpec spec;
  spec.common_name = "gpu-admission-ca@" + std::to_string(static_cast<long long>(now));
  spec.key = key.get();
  spec.now = now;
  spec.lifetime_seconds = lifetime_seconds;
  spec.backdate_seconds = backdate_for(lifetime_seconds);
  spec.extensions = {
      {NID_basic_constraints, "critical,CA:TRUE"},
      {NID_key_usage, "critical,keyCertSign,cRLSign"},
      {NID_subject_key_identifier, "hash"},
  };
  std::string error;
  X509Ptr cert = build_cert(spec, error);
  if (!cert) return authority_error("CA certificate: " + error);
  Authority out;
  out.cert_pem = cert_to_pem(cert.get(), error);
  out.key_pem = key_to_pem(key.get(), error);
  out.validity = validity_of(cert.get());
  if (!error.empty()) return authority_error(error);
  return out;
}

Authority load_authority(std::string_view cert_pem, std::string_view key_pem) {
  std::string error;
  X509Ptr cert = parse_cert(cert_pem, error);
  if (!cert) return authority_error("CA certificate: " + error);
  if (X509_check_ca(cert.get()) == 0) return authority_error("the CA certificate is not a CA");
  PKeyPtr key = parse_key(key_pem, error);
  if (!key) return authority_error("CA key: " + error);
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return authority_error("the CA key does not belong to the CA certificate");
  }
  Authority out;
  out.cert_pem = std::string(cert_pem);
  out.key_pem = std::string(key_pem);
  out.validity = validity_of(cert.get());
  if (!out.validity.ok()) return authority_error("CA certificate: " + out.validity.error);
  return out;
}

KeyPair issue_serving_certificate(const Authority& ca, std::string_view service, std::string_view ns,
                                  std::int64_t lifetime_seconds, std::time_t now_in) {
  KeyPair out;
  auto fail = [&](std::string error) {
    out = KeyPair{};
    out.error = std::move(error);
    return out;
  };
  if (!is_dns1035_label(service)) return fail("invalid service name \"" + std::string(service) + "\"");
  if (!is_dns1123_label(ns)) return fail("invalid namespace \"" + std::string(ns) + "\"");
  if (lifetime_seconds < kMinLifetime)
    return fail("the serving certificate lifetime must be at least " + std::to_string(kMinLifetime) + " seconds");
  std::string error;
  X509Ptr ca_cert = parse_cert(ca.cert_pem, error);
  if (!ca_cert) return fail("CA certificate: " + error);
  PKeyPtr ca_key = parse_key(ca.key_pem, error);
  if (!ca_key) return fail("CA key: " + error);

  ERR_clear_error();
  const std::time_t now = resolve_now(now_in);
  const std::vector<std::string> names = service_dns_names(service, ns);
  PKeyPtr key = new_p256_key();
  if (!key) return fail(openssl_error("generating the serving key"));
  CertSpec spec;
  spec.common_name = names[2].size() <= kMaxCommonName ? names[2] : names[0];
  spec.key = key.get();
  spec.issuer = ca_cert.get();
  spec.issuer_key = ca_key.get();
  spec.now = now;
  spec.lifetime_seconds = lifetime_seconds;
  spec.backdate_seconds = backdate_for(lifetime_seconds);
  spec.not_after_cap = validity_of(ca_cert.get()).not_after;
  spec.extensions = serving_extensions(names);
  X509Ptr leaf = build_cert(spec, error);
  if (!leaf) return fail("serving certificate: " + error);
  out.cert_pem = cert_to_pem(leaf.get(), error);
  out.key_pem = key_to_pem(key.get(), error);
  if (!error.empty()) return fail(error);
  const Validity validity = validity_of(leaf.get());
  out.not_before = validity.not_before;
  out.not_after = validity.not_after;
  return out;
}

Validity certificate_validity(std::string_view cert_pem) {
  Validity out;
  X509Ptr cert = parse_cert(cert_pem, out.error);
  if (!cert) return out;
  return validity_of(cert.get());
}

bool issued_by(std::string_view cert_pem, std::string_view ca_pem) {
  std::string error;
  X509Ptr cert = parse_cert(cert_pem, error);
  X509Ptr ca = parse_cert(ca_pem, error);
  if (!cert || !ca) return false;
  EVP_PKEY* ca_key = X509_get0_pubkey(ca.get());
  const bool ok = ca_key != nullptr && X509_NAME_cmp(X509_get_issuer_name(cert.get()), X509_get_subject_name(ca.get())) == 0 &&
                  X509_verify(cert.get(), ca_key) == 1;
  ERR_clear_error();
  return ok;
}

std::string certificate_serial_hex(std::string_view cert_pem) {
  std::string error;
  X509Ptr cert = parse_cert(cert_pem, error);
  if (!cert) return "";
  BnPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr));
  char* hex = bn ? BN_bn2hex(bn.get()) : nullptr;
  std::string out = hex ? hex : "";
  OPENSSL_free(hex);
  return out;
}

std::vector<std::string> certificate_dns_names(std::string_view cert_pem) {
  std::vector<std::string> out;
  std::string error;
  X509Ptr cert = parse_cert(cert_pem, error);
  if (!cert) return out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_DNS) continue;
    const ASN1_STRING* text = name->d.dNSName;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                     static_cast<size_t>(ASN1_STRING_length(text)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::vector<std::string> split_certificates(std::string_view pem_bundle) {
  static constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  static constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  std::vector<std::string> out;
  for (size_t at = pem_bundle.find(kBegin); at != std::string_view::npos; at = pem_bundle.find(kBegin, at)) {
    const size_t end = pem_bundle.find(kEnd, at);
    if (end == std::string_view::npos) break;
    out.emplace_back(pem_bundle.substr(at, end + kEnd.size() - at));
    out.back() += '\n';
    at = end + kEnd.size();
  }
  return out;
}

}  // namespace gpu_admission::certs
