// Certificate generation, inspection and writing (see certs.h). OpenSSL objects are held in
// unique_ptrs; OpenSSL's per-thread error queue is drained into the returned error strings.
#include "certs/certs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

namespace gpu_admission::certs {
namespace {

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

constexpr long kBackdateSeconds = 5 * 60;  // tolerate clocks a little behind ours
constexpr std::size_t kMaxCommonName = 64;  // ub-common-name (RFC 5280)

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

std::string errno_message(int err) { return std::generic_category().message(err); }

BioPtr memory_bio(std::string_view data) {
  if (data.size() > static_cast<std::size_t>(INT_MAX)) return nullptr;
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return len > 0 ? std::string(data, static_cast<std::size_t>(len)) : std::string();
}

// Never prompt for a passphrase: encrypted keys are refused instead.
int no_passphrase(char*, int, int, void*) { return -1; }

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

// A positive random serial of 128 bits.
bool set_random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[15] |= 1;  // never zero
  BnPtr bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  return bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) != nullptr;
}

struct Extension {
  int nid;
  std::string value;  // OpenSSL config syntax, e.g. "critical,CA:TRUE"
};

// What one certificate should contain; `issuer`/`issuer_key` null means self-signed.
struct CertSpec {
  std::string common_name;
  EVP_PKEY* key = nullptr;  // the subject's key (public part is certified)
  X509* issuer = nullptr;
  EVP_PKEY* issuer_key = nullptr;
  std::time_t now = 0;
  int days = kDefaultDays;
  std::vector<Extension> extensions;
};

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

  if (!ASN1_TIME_adj(X509_getm_notBefore(cert.get()), spec.now, 0, -kBackdateSeconds) ||
      !ASN1_TIME_adj(X509_getm_notAfter(cert.get()), spec.now, spec.days, 0))
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

KeyPair pair_error(std::string error) {
  KeyPair failed;
  failed.error = std::move(error);
  return failed;
}

std::time_t resolve_now(std::time_t now) { return now != 0 ? now : std::time(nullptr); }

// Writes all of `data` to `fd`, retrying short writes; false with errno set on failure.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string random_suffix() {
  unsigned char bytes[6];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // Fall back to the pid: O_EXCL still guarantees we never reuse someone else's file.
    return std::to_string(::getpid());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

struct Target {
  std::string path;
  std::string_view data;
  mode_t mode;
  std::string temp;  // set once the temporary file exists
};

}  // namespace

bool is_dns1123_label(std::string_view text) {
  if (text.empty() || text.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : text)
    if (!alnum(c) && c != '-') return false;
  return alnum(text.front()) && alnum(text.back());
}

bool is_dns1035_label(std::string_view text) {
  return is_dns1123_label(text) && text.front() >= 'a' && text.front() <= 'z';
}

std::vector<std::string> service_dns_names(std::string_view service, std::string_view ns) {
  std::string base = std::string(service) + "." + std::string(ns);
  return {std::string(service), base, base + ".svc", base + ".svc.cluster.local"};
}

ServingBundle generate_serving_bundle(const ServingOptions& options) {
  auto fail = [](std::string error) {
    ServingBundle failed;
    failed.error = std::move(error);
    return failed;
  };
  if (!is_dns1035_label(options.service))
    return fail("invalid service name \"" + options.service + "\"");
  if (!is_dns1123_label(options.ns)) return fail("invalid namespace \"" + options.ns + "\"");
  if (options.days < 1 || options.days > kMaxDays)
    return fail("days must be between 1 and " + std::to_string(kMaxDays));

  ERR_clear_error();
  const std::time_t now = resolve_now(options.now);
  std::string error;

  // The CA: self-signed, only for signing the serving certificate.
  PKeyPtr ca_key = new_p256_key();
  if (!ca_key) return fail(openssl_error("generating the CA key"));
  CertSpec ca_spec;
  ca_spec.common_name = "gpu-admission-ca@" + std::to_string(static_cast<long long>(now));
  ca_spec.key = ca_key.get();
  ca_spec.now = now;
  ca_spec.days = options.days;
  ca_spec.extensions = {
      {NID_basic_constraints, "critical,CA:TRUE"},
      {NID_key_usage, "critical,keyCertSign,cRLSign"},
      {NID_subject_key_identifier, "hash"},
  };
  X509Ptr ca = build_cert(ca_spec, error);
  if (!ca) return fail("CA certificate: " + error);

  // The serving certificate for the Service's four DNS names.
  std::vector<std::string> names = service_dns_names(options.service, options.ns);
  std::string san;
  for (const std::string& name : names) san += (san.empty() ? "DNS:" : ",DNS:") + name;
  PKeyPtr key = new_p256_key();
  if (!key) return fail(openssl_error("generating the serving key"));
  CertSpec leaf_spec;
  leaf_spec.common_name = names[2].size() <= kMaxCommonName ? names[2] : names[0];
  leaf_spec.key = key.get();
  leaf_spec.issuer = ca.get();
  leaf_spec.issuer_key = ca_key.get();
  leaf_spec.now = now;
  leaf_spec.days = options.days;
  leaf_spec.extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth"},
      {NID_subject_alt_name, san},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
  };
  X509Ptr leaf = build_cert(leaf_spec, error);
  if (!leaf) return fail("serving certificate: " + error);

  ServingBundle out;
  out.ca_cert_pem = cert_to_pem(ca.get(), error);
  out.cert_pem = cert_to_pem(leaf.get(), error);
  out.key_pem = key_to_pem(key.get(), error);
  if (!error.empty()) return fail(error);
  out.dns_names = std::move(names);
  out.not_after = static_cast<std::int64_t>(now) + static_cast<std::int64_t>(options.days) * 86400;
  return out;
}

KeyPair generate_localhost_pair(int days, std::time_t now_in) {
  KeyPair out;
  if (days < 1 || days > kMaxDays) {
    out.error = "days must be between 1 and " + std::to_string(kMaxDays);
    return out;
  }
  ERR_clear_error();
  const std::time_t now = resolve_now(now_in);
  PKeyPtr key = new_p256_key();
  if (!key) {
    out.error = openssl_error("generating the localhost key");
    return out;
  }
  // A self-signed end-entity certificate: clients trust it by being given the certificate
  // itself (curl --cacert), so it needs no CA powers.
  CertSpec spec;
  spec.common_name = "localhost";
  spec.key = key.get();
  spec.now = now;
  spec.days = days;
  spec.extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth"},
      {NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"},
      {NID_subject_key_identifier, "hash"},
  };
  std::string error;
  X509Ptr cert = build_cert(spec, error);
  if (!cert) {
    out.error = "localhost certificate: " + error;
    return out;
  }
  out.cert_pem = cert_to_pem(cert.get(), error);
  out.key_pem = key_to_pem(key.get(), error);
  if (!error.empty()) return pair_error(error);
  out.not_after = static_cast<std::int64_t>(now) + static_cast<std::int64_t>(days) * 86400;
  return out;
}

Expiry certificate_not_after(std::string_view cert_pem) {
  Expiry out;
  X509Ptr cert = parse_cert(cert_pem, out.error);
  if (!cert) return out;
  bool ok = false;
  out.not_after = asn1_to_unix(X509_get0_notAfter(cert.get()), ok);
  if (!ok) out.error = openssl_error("unreadable notAfter time");
  return out;
}

std::string check_key_matches(std::string_view cert_pem, std::string_view key_pem) {
  std::string error;
  X509Ptr cert = parse_cert(cert_pem, error);
  if (!cert) return "certificate: " + error;
  PKeyPtr key = parse_key(key_pem, error);
  if (!key) return "private key: " + error;
  // X509_check_private_key compares the certificate's public key with the key's (EVP_PKEY_eq).
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return "the private key does not belong to the certificate";
  }
  return {};
}

FileContents read_file(const std::string& path, std::size_t max_bytes) {
  FileContents out;
  auto fail = [&](const std::string& why) {
    out.data.clear();
    out.error = "cannot read " + path + ": " + why;
    return out;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno_message(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail("is a directory");
  }
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return fail(errno_message(err));
    }
    if (n == 0) break;
    out.data.append(buf, static_cast<std::size_t>(n));
    if (out.data.size() > max_bytes) {
      ::close(fd);
      return fail("larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return out;
}

KeyPair load_key_pair(const std::string& cert_path, const std::string& key_path) {
  KeyPair out;
  FileContents cert = read_file(cert_path);
  if (!cert.ok()) return pair_error(cert.error);
  FileContents key = read_file(key_path);
  if (!key.ok()) return pair_error(key.error);

  Expiry expiry = certificate_not_after(cert.data);
  if (!expiry.ok()) return pair_error(cert_path + ": " + expiry.error);
  std::string error;
  if (!parse_key(key.data, error)) return pair_error(key_path + ": " + error);
  std::string mismatch = check_key_matches(cert.data, key.data);
  if (!mismatch.empty()) return pair_error(key_path + " and " + cert_path + ": " + mismatch);

  out.cert_pem = std::move(cert.data);
  out.key_pem = std::move(key.data);
  out.not_after = expiry.not_after;
  return out;
}

WriteResult write_serving_files(const std::string& dir_in, const ServingBundle& bundle, bool force) {
  WriteResult out;
  auto fail = [&](std::string error, bool usage) {
    out.written.clear();
    out.error = std::move(error);
    out.usage_error = usage;
    return out;
  };
  if (!bundle.ok() || bundle.ca_cert_pem.empty() || bundle.cert_pem.empty() || bundle.key_pem.empty())
    return fail("nothing to write: the certificates were not generated", false);

  // The directory: created when missing, and it must be one.
  const std::filesystem::path dir = dir_in.empty() ? "." : dir_in;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    return fail("cannot create directory " + dir.string() + ": " + (ec ? ec.message() : errno_message(err)),
                ec.value() == EEXIST || ec.value() == ENOTDIR || err == ENOTDIR);
  }
  if (!S_ISDIR(st.st_mode)) return fail(dir.string() + " is not a directory", true);

  std::vector<Target> targets = {
      {(dir / kCaFile).string(), bundle.ca_cert_pem, 0644, {}},
      {(dir / kCertFile).string(), bundle.cert_pem, 0644, {}},
      {(dir / kKeyFile).string(), bundle.key_pem, 0600, {}},
  };

  // Check every target before writing anything.
  std::string existing;
  for (const Target& t : targets) {
    struct stat ts {};
    if (::lstat(t.path.c_str(), &ts) == 0) {
      if (S_ISDIR(ts.st_mode)) return fail(t.path + " is a directory", true);
      if (!force) existing += (existing.empty() ? "" : ", ") + t.path;
    } else if (errno != ENOENT) {
      return fail("cannot check " + t.path + ": " + errno_message(errno), false);
    }
  }
  if (!existing.empty())
    return fail("refusing to overwrite " + existing + " (use --force to replace)", true);

  auto remove_temps = [&]() {
    for (Target& t : targets)
      if (!t.temp.empty()) ::unlink(t.temp.c_str());
  };

  // Write each file under a temporary name in the same directory. O_EXCL creates a new inode
  // with its final mode (0600 for the key) from the first byte on.
  for (Target& t : targets) {
    std::string temp = (dir / ("." + std::filesystem::path(t.path).filename().string() + ".tmp-" +
                               random_suffix())).string();
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, t.mode);
    if (fd < 0) {
      int err = errno;
      remove_temps();
      return fail("cannot create " + temp + ": " + errno_message(err), false);
    }
    t.temp = temp;
    bool ok = write_all(fd, t.data) && ::fsync(fd) == 0;
    int err = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = errno;
    }
    if (!ok) {
      remove_temps();
      return fail("cannot write " + temp + ": " + errno_message(err), false);
    }
  }

  // Move them into place. Without --force, link() refuses to replace a file that appeared
  // since the check; the files placed so far are then removed again.
  std::vector<std::string> placed;
  for (Target& t : targets) {
    int rc = 0;
    if (force) {
      rc = ::rename(t.temp.c_str(), t.path.c_str());
      if (rc == 0) t.temp.clear();
    } else {
      rc = ::link(t.temp.c_str(), t.path.c_str());
      if (rc != 0 && (errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP || errno == ENOSYS)) {
        rc = ::rename(t.temp.c_str(), t.path.c_str());  // no hard links here; checked above
        if (rc == 0) t.temp.clear();
      }
    }
    if (rc != 0) {
      int err = errno;
      remove_temps();
      if (!force)
        for (const std::string& p : placed) ::unlink(p.c_str());
      if (err == EEXIST) return fail("refusing to overwrite " + t.path + " (use --force to replace)", true);
      return fail("cannot write " + t.path + ": " + errno_message(err), false);
    }
    placed.push_back(t.path);
  }
  remove_temps();  // the link() sources

  // Make the new directory entries durable too.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  out.written = std::move(placed);
  return out;
}

std::string base64_encode(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    auto n = (static_cast<unsigned char>(data[i]) << 16) | (static_cast<unsigned char>(data[i + 1]) << 8) |
             static_cast<unsigned char>(data[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (std::size_t rest = data.size() - i; rest > 0) {
    unsigned n = static_cast<unsigned char>(data[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(data[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string format_utc(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  struct tm tm {};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return std::to_string(unix_seconds);
  return buf;
}

}  // namespace gpu_admission::certs
