// OpenSSL plumbing shared by the certs/ units (openssl_util.h).
#include "certs/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <climits>

namespace gpu_admission::certs::detail {

// `what`, followed by the reasons OpenSSL queued on this thread (the queue is emptied).
std::string openssl_error(std::string_view what) {
  std::string out(what);
  const char* sep = ": ";
  while (unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    char buf[256];
    if (reason == nullptr) {
      ERR_error_string_n(code, buf, sizeof buf);
      reason = buf;
    }
    out += sep;
    out += reason;
    sep = "; ";
  }
  return out;
}

BioPtr memory_bio(std::string_view data) {
  if (data.size() > static_cast<std::size_t>(INT_MAX)) return nullptr;
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return len > 0 ? std::string(data, static_cast<std::size_t>(len)) : std::string();
}

namespace {

// Never prompt for a passphrase: encrypted keys are refused instead.
int no_passphrase(char*, int, int, void*) { return -1; }

}  // namespace

X509Ptr parse_cert(std::string_view pem, std::string& error) {
  ERR_clear_error();
  BioPtr bio = memory_bio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!cert) error = openssl_error("no PEM certificate found");
  return cert;
}

PKeyPtr parse_key(std::string_view pem, std::string& error) {
  ERR_clear_error();
  if (pem.find("ENCRYPTED") != std::string_view::npos) {
    error = "encrypted private keys are not supported";
    return nullptr;
  }
  BioPtr bio = memory_bio(pem);
  PKeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!key) error = openssl_error("no PEM private key found");
  return key;
}

std::int64_t asn1_to_unix(const ASN1_TIME* time, bool& ok) {
  struct tm tm {};
  ok = ASN1_TIME_to_tm(time, &tm) == 1;
  return ok ? static_cast<std::int64_t>(timegm(&tm)) : 0;
}

PKeyPtr new_p256_key() { return PKeyPtr(EVP_EC_gen("P-256")); }

namespace {

// A positive random serial of 128 bits.
bool set_random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[15] |= 1;  // never zero
  BnPtr bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  return bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) != nullptr;
}



}  // namespace

X509Ptr build_cert(const CertSpec& spec, std::string& error) {
  X509Ptr cert(X509_new());
  auto fail = [&](std::string_view what) {
    error = openssl_error(what);
    return nullptr;
  };
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) return fail("creating a certificate");
  if (!set_random_serial(cert.get())) return fail("choosing a serial number");

  X509_NAME* subject = X509_get_subject_name(cert.get());
  const auto* cn = reinterpret_cast<const unsigned char*>(spec.common_name.c_str());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, cn, -1, -1, 0) != 1)
    return fail("setting the subject");
  X509_NAME* issuer_name = spec.issuer ? X509_get_subject_name(spec.issuer) : subject;
  if (X509_set_issuer_name(cert.get(), issuer_name) != 1) return fail("setting the issuer");

  std::int64_t not_after = static_cast<std::int64_t>(spec.now) + spec.lifetime_seconds;
  if (spec.not_after_cap > 0 && not_after > spec.not_after_cap) not_after = spec.not_after_cap;
  if (!ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<std::time_t>(spec.now - spec.backdate_seconds)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), static_cast<std::time_t>(not_after)))
    return fail("setting the validity period");
  if (X509_set_pubkey(cert.get(), spec.key) != 1) return fail("setting the public key");

  // Extensions in order: subjectKeyIdentifier is added before authorityKeyIdentifier needs it.
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, spec.issuer ? spec.issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const Extension& ext : spec.extensions) {
    ExtPtr made(X509V3_EXT_conf_nid(nullptr, &ctx, ext.nid, ext.value.c_str()));
    if (!made || X509_add_ext(cert.get(), made.get(), -1) != 1)
      return fail(std::string("adding extension ") + OBJ_nid2sn(ext.nid));
  }

  EVP_PKEY* signer = spec.issuer_key ? spec.issuer_key : spec.key;
  if (X509_sign(cert.get(), signer, EVP_sha256()) <= 0) return fail("signing the certificate");
  return cert;
}

std::string cert_to_pem(X509* cert, std::string& error) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    error = openssl_error("encoding a certificate");
    return {};
  }
  return bio_contents(bio.get());
}

// PKCS#8 ("BEGIN PRIVATE KEY"), unencrypted.
std::string key_to_pem(EVP_PKEY* key, std::string& error) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    error = openssl_error("encoding a private key");
    return {};
  }
  return bio_contents(bio.get());
}

std::time_t resolve_now(std::time_t now) { return now != 0 ? now : std::time(nullptr); }

std::vector<Extension> serving_extensions(const std::vector<std::string>& dns_names) {
  std::string san;
  for (const std::string& name : dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + name;
  return {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth"},
      {NID_subject_alt_name, san},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
  };
}

}  // namespace gpu_admission::certs::detail
