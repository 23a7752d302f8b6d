// Helpers for the certificate tests: temporary directories, output capture, and independent
// OpenSSL checks (chain verification, SAN listing, an in-memory TLS handshake) that do not go
// through the code under test.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace certs_test {

template <auto Free>
struct Deleter {
  template <class T>
  void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Deleter<SSL_free>>;

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/gpu-admission-certs-XXXXXX";
    if (char* made = ::mkdtemp(templ)) path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

inline void spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

inline unsigned file_mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0xFFFFu;
  return static_cast<unsigned>(st.st_mode & 07777);
}

inline X509Ptr parse_cert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

inline PKeyPtr parse_key(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PKeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

inline std::int64_t to_unix(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return -1;
  return static_cast<std::int64_t>(timegm(&tm));
}

// Verifies `leaf` against the trust anchor `ca` as a TLS server certificate for `host` (a DNS
// name, or an IP address when `ip` is set) at time `at` (0: now), with X509_V_FLAG_X509_STRICT.
// Returns the X509_V_* result code.
inline int verify(const X509Ptr& ca, const X509Ptr& leaf, const std::string& host, bool ip = false,
                  std::time_t at = 0) {
  StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca.get());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (ip)
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  else
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  if (at != 0) X509_VERIFY_PARAM_set_time(param, at);
  int rc = X509_verify_cert(ctx.get());
  int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return rc == 1 ? X509_V_OK : (err == X509_V_OK ? -1 : err);
}

// The subjectAltName entries as "DNS:name" / "IP:address", in order.
inline std::vector<std::string> sans(const X509Ptr& cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS) {
      const ASN1_IA5STRING* s = name->d.dNSName;
      out.push_back("DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                         static_cast<std::size_t>(ASN1_STRING_length(s))));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = "?";
      int len = ASN1_STRING_length(ip);
      if (len == 4 || len == 16) inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(ip), text, sizeof text);
      out.push_back(std::string("IP:") + text);
    } else {
      out.push_back("other");
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

inline std::string common_name(const X509Ptr& cert) {
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, buf, sizeof buf);
  return buf;
}

inline bool ext_critical(const X509Ptr& cert, int nid) {
  int idx = X509_get_ext_by_NID(cert.get(), nid, -1);
  return idx >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert.get(), idx)) == 1;
}

inline bool has_ext(const X509Ptr& cert, int nid) { return X509_get_ext_by_NID(cert.get(), nid, -1) >= 0; }

inline std::string group_name(EVP_PKEY* key) {
  char name[64] = {};
  std::size_t len = 0;
  if (EVP_PKEY_get_group_name(key, name, sizeof name, &len) != 1) return {};
  return std::string(name, len);
}

// A TLS handshake over an in-memory BIO pair: the server presents cert/key, the client trusts
// only `trust_pem` and checks `host` (DNS name or IP). Empty on success, else why it failed.
inline std::string tls_handshake(const std::string& cert_pem, const std::string& key_pem,
                                 const std::string& trust_pem, const std::string& host, bool ip = false) {
  SslCtxPtr server_ctx(SSL_CTX_new(TLS_server_method()));
  SslCtxPtr client_ctx(SSL_CTX_new(TLS_client_method()));
  X509Ptr cert = parse_cert(cert_pem);
  PKeyPtr key = parse_key(key_pem);
  X509Ptr trust = parse_cert(trust_pem);
  if (!server_ctx || !client_ctx || !cert || !key || !trust) return "setup failed";
  SSL_CTX_set_min_proto_version(server_ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate(server_ctx.get(), cert.get()) != 1 ||
      SSL_CTX_use_PrivateKey(server_ctx.get(), key.get()) != 1)
    return "server rejected its certificate or key";
  X509_STORE_add_cert(SSL_CTX_get_cert_store(client_ctx.get()), trust.get());
  SSL_CTX_set_verify(client_ctx.get(), SSL_VERIFY_PEER, nullptr);

  SslPtr client(SSL_new(client_ctx.get()));
  SslPtr server(SSL_new(server_ctx.get()));
  if (ip)
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(client.get()), host.c_str());
  else
    SSL_set1_host(client.get(), host.c_str());
  BIO* client_bio = nullptr;
  BIO* server_bio = nullptr;
  BIO_new_bio_pair(&client_bio, 0, &server_bio, 0);
  SSL_set_bio(client.get(), client_bio, client_bio);
  SSL_set_bio(server.get(), server_bio, server_bio);
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(server.get());

  bool client_done = false, server_done = false;
  for (int round = 0; round < 50 && !(client_done && server_done); ++round) {
    for (auto [ssl, done] : {std::pair{client.get(), &client_done}, std::pair{server.get(), &server_done}}) {
      if (*done) continue;
      int rc = SSL_do_handshake(ssl);
      if (rc == 1) {
        *done = true;
        continue;
      }
      int err = SSL_get_error(ssl, rc);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        long verify = SSL_get_verify_result(client.get());
        ERR_clear_error();
        return std::string(ssl == client.get() ? "client" : "server") +
               " handshake failed: " + X509_verify_cert_error_string(verify);
      }
    }
  }
  ERR_clear_error();
  if (!(client_done && server_done)) return "handshake did not finish";
  return {};
}

struct Captured {
  int rc = -1;
  std::string out;
  std::string err;
};

// Runs `fn` with file descriptors 1 and 2 redirected to temporary files.
inline Captured capture(const std::function<int()>& fn) {
  Captured result;
  std::fflush(stdout);
  std::fflush(stderr);
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  int saved_out = ::dup(1), saved_err = ::dup(2);
  ::dup2(::fileno(out), 1);
  ::dup2(::fileno(err), 2);
  result.rc = fn();
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  for (auto [file, text] : {std::pair{out, &result.out}, std::pair{err, &result.err}}) {
    std::rewind(file);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) text->append(buf, n);
    std::fclose(file);
  }
  return result;
}

}  // namespace certs_test
