// TlsIdentity (certificate chain + key from PEM) and the server's TLS context with its
// per-handshake certificate callback; see tls_identity.h.
#include "webhook/server/tls_identity.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <ctime>
#include <memory>

namespace gpu_admission::webhook {

using detail::openssl_errors;

namespace {

int refuse_password(char*, int, int, void*) { return -1; }  // never prompt for a passphrase

struct BioCloser {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioCloser>;

BioPtr memory_bio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

TlsIdentity::~TlsIdentity() {
  if (leaf_ != nullptr) X509_free(leaf_);
  if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
  if (key_ != nullptr) EVP_PKEY_free(key_);
}

std::shared_ptr<const TlsIdentity> TlsIdentity::from_pem(std::string_view cert_pem, std::string_view key_pem,
                                                         std::string source, std::string& error) {
  ERR_clear_error();
  std::shared_ptr<TlsIdentity> identity(new TlsIdentity());
  identity->source_ = std::move(source);
  BioPtr cert_bio = memory_bio(cert_pem);
  if (!cert_bio || (identity->leaf_ = PEM_read_bio_X509(cert_bio.get(), nullptr, refuse_password, nullptr)) == nullptr) {
    error = "no PEM certificate found: " + openssl_errors();
    return nullptr;
  }
  identity->chain_ = sk_X509_new_null();
  if (identity->chain_ == nullptr) {
    error = "out of memory";
    return nullptr;
  }
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, refuse_password, nullptr)) {
    if (sk_X509_push(identity->chain_, extra) == 0) {
      X509_free(extra);
      error = "out of memory";
      return nullptr;
    }
  }
  ERR_clear_error();  // the loop above ends with a "no start line" error
  BioPtr key_bio = memory_bio(key_pem);
  if (!key_bio || (identity->key_ = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, refuse_password, nullptr)) == nullptr) {
    error = "no usable PEM private key found (encrypted keys are not supported): " + openssl_errors();
    return nullptr;
  }
  if (X509_check_private_key(identity->leaf_, identity->key_) != 1) {
    ERR_clear_error();
    error = "the private key does not belong to the certificate";
    return nullptr;
  }
  std::tm expiry{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(identity->leaf_), &expiry) != 1) {
    error = "cannot read the certificate's notAfter";
    return nullptr;
  }
  identity->not_after_ = static_cast<int64_t>(timegm(&expiry));
  return identity;
}

std::string TlsIdentity::serial_hex() const {
  std::string text;
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf_), nullptr);
  if (serial != nullptr) {
    if (char* hex = BN_bn2hex(serial)) {
      text = hex;
      OPENSSL_free(hex);
    }
    BN_free(serial);
  }
  return text;
}

std::string TlsIdentity::key_type() const {
  switch (EVP_PKEY_get_base_id(key_)) {
    case EVP_PKEY_EC: return "ECDSA";
    case EVP_PKEY_RSA: return "RSA";
    case EVP_PKEY_ED25519: return "Ed25519";
    default: return "other";
  }
}

namespace detail {

std::string openssl_errors() {
  std::string text;
  unsigned long code;
  while ((code = ERR_get_error()) != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!text.empty()) text += "; ";
    text += buffer;
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

namespace {

// TLS 1.2 suites with forward secrecy and AEAD only; TLS 1.3 uses OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// OpenSSL certificate callback: runs for every handshake, before cipher selection, and
// installs the identity that is current at that moment.
int select_certificate(SSL* ssl, void* arg) {
  const TlsIdentityPtr identity = static_cast<IdentityHolder*>(arg)->load();
  if (!identity) return 0;
  if (SSL_use_certificate(ssl, identity->leaf()) != 1) return 0;
  if (SSL_use_PrivateKey(ssl, identity->key()) != 1) return 0;
  if (sk_X509_num(identity->chain()) > 0 && SSL_set1_chain(ssl, identity->chain()) != 1) return 0;
  return 1;
}

}  // namespace

SSL_CTX* create_tls_context(IdentityHolder* holder, std::string& error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    error = "cannot create the TLS context: " + openssl_errors();
    return nullptr;
  }
  static const unsigned char kSessionContext[] = "gpu-admission";
  const bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
                  SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) == 1 &&
                  SSL_CTX_set1_groups_list(ctx, "X25519:P-256:P-384") == 1 &&
                  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1) == 1;
  if (!ok) {
    error = "cannot configure the TLS context: " + openssl_errors();
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // No SSL_MODE_RELEASE_BUFFERS: it frees and reallocates OpenSSL's two 16 KiB record buffers
  // on every request (~3% of a keep-alive request's CPU). The engine gives them back instead
  // once a connection has been idle a while (EngineConfig::tls_buffers_idle).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);  // a record header and its body in one read(2)
  SSL_CTX_set_cert_cb(ctx, select_certificate, holder);
  return ctx;
}

}  // namespace detail

}  // namespace gpu_admission::webhook
