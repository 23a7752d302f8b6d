// Certificate generation, inspection and writing (see certs.h). OpenSSL objects are held in
// unique_ptrs; OpenSSL's per-thread error queue is drained into the returned error strings.
#include "certs/certs.h"
#include "certs/authority.h"
#include "certs/openssl_util.h"

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
#include <optional>
#include <system_error>
#include <utility>

namespace gpu_admission::certs {
namespace {

using namespace detail;

std::string errno_message(int err) { return std::generic_category().message(err); }

KeyPair pair_error(std::string error) {
  KeyPair failed;
  failed.error = std::move(error);
  return failed;
}

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

  // The CA signs the serving certificate and is forgotten: its key leaves this function never.
  const std::time_t now = resolve_now(options.now);
  const std::int64_t lifetime = static_cast<std::int64_t>(options.days) * 86400;
  const Authority ca = generate_authority(lifetime, now);
  if (!ca.ok()) return fail(ca.error);
  KeyPair leaf = issue_serving_certificate(ca, options.service, options.ns, lifetime, now);
  if (!leaf.ok()) return fail(leaf.error);

  ServingBundle out;
  out.ca_cert_pem = ca.cert_pem;
  out.cert_pem = std::move(leaf.cert_pem);
  out.key_pem = std::move(leaf.key_pem);
  out.dns_names = service_dns_names(options.service, options.ns);
  out.not_after = leaf.not_after;
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
  spec.lifetime_seconds = static_cast<std::int64_t>(days) * 86400;
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
  out.not_before = static_cast<std::int64_t>(now) - kBackdateSeconds;
  out.not_after = static_cast<std::int64_t>(now) + spec.lifetime_seconds;
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

namespace {

// Why writing the serving files stopped: the message, and whether the command line is to blame.
struct WriteError {
  std::string message;
  bool usage = false;
};

// The directory: created when missing, and it must be one.
std::optional<WriteError> ready_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    return WriteError{"cannot create directory " + dir.string() + ": " + (ec ? ec.message() : errno_message(err)),
                      ec.value() == EEXIST || ec.value() == ENOTDIR || err == ENOTDIR};
  }
  if (!S_ISDIR(st.st_mode)) return WriteError{dir.string() + " is not a directory", true};
  return std::nullopt;
}

// Every target checked before anything is written: none a directory, none there without `force`.
std::optional<WriteError> check_targets(const std::vector<Target>& targets, bool force) {
  std::string existing;
  for (const Target& t : targets) {
    struct stat ts {};
    if (::lstat(t.path.c_str(), &ts) == 0) {
      if (S_ISDIR(ts.st_mode)) return WriteError{t.path + " is a directory", true};
      if (!force) existing += (existing.empty() ? "" : ", ") + t.path;
    } else if (errno != ENOENT) {
      return WriteError{"cannot check " + t.path + ": " + errno_message(errno), false};
    }
  }
  if (!existing.empty()) return WriteError{"refusing to overwrite " + existing + " (use --force to replace)", true};
  return std::nullopt;
}

void remove_temps(std::vector<Target>& targets) {
  for (Target& t : targets)
    if (!t.temp.empty()) ::unlink(t.temp.c_str());
}

// Writes each file under a temporary name in the same directory. O_EXCL creates a new inode with
// its final mode (0600 for the key) from the first byte on.
std::optional<WriteError> write_temps(const std::filesystem::path& dir, std::vector<Target>& targets) {
  for (Target& t : targets) {
    std::string temp = (dir / ("." + std::filesystem::path(t.path).filename().string() + ".tmp-" +
                               random_suffix())).string();
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, t.mode);
    if (fd < 0) {
      int err = errno;
      remove_temps(targets);
      return WriteError{"cannot create " + temp + ": " + errno_message(err), false};
    }
    t.temp = temp;
    bool ok = write_all(fd, t.data) && ::fsync(fd) == 0;
    int err = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = errno;
    }
    if (!ok) {
      remove_temps(targets);
      return WriteError{"cannot write " + temp + ": " + errno_message(err), false};
    }
  }
  return std::nullopt;
}

// Moves the temporary files into place. Without `force`, link() refuses to replace a file that
// appeared since the check; the files placed so far are then removed again.
std::optional<WriteError> place_targets(std::vector<Target>& targets, bool force, std::vector<std::string>& placed) {
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
      remove_temps(targets);
      if (!force)
        for (const std::string& p : placed) ::unlink(p.c_str());
      placed.clear();
      if (err == EEXIST) return WriteError{"refusing to overwrite " + t.path + " (use --force to replace)", true};
      return WriteError{"cannot write " + t.path + ": " + errno_message(err), false};
    }
    placed.push_back(t.path);
  }
  remove_temps(targets);  // the link() sources
  return std::nullopt;
}

}  // namespace

WriteResult write_serving_files(const std::string& dir_in, const ServingBundle& bundle, bool force) {
  WriteResult out;
  auto fail = [&](WriteError error) {
    out.written.clear();
    out.error = std::move(error.message);
    out.usage_error = error.usage;
    return out;
  };
  if (!bundle.ok() || bundle.ca_cert_pem.empty() || bundle.cert_pem.empty() || bundle.key_pem.empty())
    return fail({"nothing to write: the certificates were not generated", false});
  const std::filesystem::path dir = dir_in.empty() ? "." : dir_in;
  if (auto error = ready_directory(dir)) return fail(*error);
  std::vector<Target> targets = {
      {(dir / kCaFile).string(), bundle.ca_cert_pem, 0644, {}},
      {(dir / kCertFile).string(), bundle.cert_pem, 0644, {}},
      {(dir / kKeyFile).string(), bundle.key_pem, 0600, {}},
  };
  if (auto error = check_targets(targets, force)) return fail(*error);
  if (auto error = write_temps(dir, targets)) return fail(*error);
  std::vector<std::string> placed;
  if (auto error = place_targets(targets, force, placed)) return fail(*error);

  // Make the new directory entries durable too.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  out.written = std::move(placed);
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
