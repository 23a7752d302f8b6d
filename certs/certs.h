// Certificates for the webhook, built on OpenSSL 3: the CA and serving pair that
// `gpu-admission certs` writes for a Kubernetes Service, the in-memory self-signed `localhost`
// pair `serve` uses when no --tls-cert is given, and the small inspection helpers the server's
// hot reload and expiry metric need. A CA that keeps its key (self-managed certificates) is in
// authority.h. Every function reports failure as a value (an `error`
// string naming what went wrong); none throws, and there is no global mutable state.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace gpu_admission::certs {

constexpr int kDefaultDays = 365;
constexpr int kMaxDays = 3650;

// True when `text` is a DNS-1123 label: 1-63 of [a-z0-9-], starting and ending alphanumeric.
bool is_dns1123_label(std::string_view text);
// True when `text` is a DNS-1035 label (a DNS-1123 label starting with a letter), the rule
// Kubernetes applies to Service names.
bool is_dns1035_label(std::string_view text);

// The four names a Service is reached by inside a cluster, in this order:
// NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local.
std::vector<std::string> service_dns_names(std::string_view service, std::string_view ns);

struct ServingOptions {
  std::string service;        // Service name (NAME)
  std::string ns;             // its namespace (NS)
  int days = kDefaultDays;    // validity of both certificates, 1..kMaxDays
  std::time_t now = 0;        // issue time; 0 means the current time
};

// A CA and a serving certificate it signed. The CA key is discarded after signing, so the CA
// can never sign anything else.
struct ServingBundle {
  std::string ca_cert_pem;          // self-signed CA, for the webhook's caBundle
  std::string cert_pem;             // serving certificate (tls.crt)
  std::string key_pem;              // its ECDSA P-256 key, PKCS#8 PEM (tls.key)
  std::vector<std::string> dns_names;
  std::int64_t not_after = 0;       // unix seconds, same for CA and serving certificate
  std::string error;                // non-empty on failure; the other fields are then empty
  bool ok() const { return error.empty(); }
};

// ECDSA P-256 keys, SHA-256 signatures, random 128-bit serials, valid from now - 5 minutes
// for `days` days. Serving certificate: CN NAME.NS.svc (NAME when that exceeds 64 bytes),
// SANs service_dns_names(), keyUsage digitalSignature, extendedKeyUsage serverAuth.
ServingBundle generate_serving_bundle(const ServingOptions& options);

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;              // PKCS#8 PEM
  std::int64_t not_before = 0;      // unix seconds (set by the generators, authority.h)
  std::int64_t not_after = 0;       // unix seconds
  std::string error;
  bool ok() const { return error.empty(); }
};

// A self-signed ECDSA P-256 certificate for `localhost` (SANs DNS:localhost, IP:127.0.0.1,
// IP:::1), for trying `serve` out without certificates. Nothing is written to disk.
KeyPair generate_localhost_pair(int days = kDefaultDays, std::time_t now = 0);

struct Expiry {
  std::int64_t not_after = 0;       // unix seconds
  std::string error;
  bool ok() const { return error.empty(); }
};

// notAfter of the first certificate in `cert_pem` (a chain may follow it).
Expiry certificate_not_after(std::string_view cert_pem);

// Empty when `key_pem` is the private key of the first certificate in `cert_pem`; otherwise
// why not (unparsable certificate or key, encrypted key, or a key of another certificate).
std::string check_key_matches(std::string_view cert_pem, std::string_view key_pem);

struct FileContents {
  std::string data;
  std::string error;                // e.g. `cannot read /etc/tls/tls.crt: No such file ...`
  bool ok() const { return error.empty(); }
};

// The whole file, refusing files larger than `max_bytes` (certificates and keys are small).
FileContents read_file(const std::string& path, std::size_t max_bytes = 1 << 20);

// Reads a certificate and key file and checks they belong together: what the server does on
// start and on every reload. On success `error` is empty and `not_after` is set; errors name
// the file at fault.
KeyPair load_key_pair(const std::string& cert_path, const std::string& key_path);

struct WriteResult {
  std::vector<std::string> written;  // paths, in the order ca.crt, tls.crt, tls.key
  std::string error;
  bool usage_error = false;          // the error is about the input (a file exists, the
                                     // directory is not one): exit code 2 rather than 1
  bool ok() const { return error.empty(); }
};

constexpr const char* kCaFile = "ca.crt";
constexpr const char* kCertFile = "tls.crt";
constexpr const char* kKeyFile = "tls.key";

// Writes ca.crt, tls.crt (0644 before umask) and tls.key (created 0600) into `dir`, creating
// it if missing. Without `force`, any existing target is an error and nothing is written.
// Each file is written to a temporary name first and moved into place, so no target is ever
// seen half-written.
WriteResult write_serving_files(const std::string& dir, const ServingBundle& bundle, bool force);

// `unix_seconds` as an RFC 3339 UTC timestamp, e.g. 2027-01-02T03:04:05Z.
std::string format_utc(std::int64_t unix_seconds);

}  // namespace gpu_admission::certs
