// The content of the Secret in which `serve --certs self-managed` keeps its certificates, and the
// decisions about it, without any I/O (cert_keeper.h does the API calls): what a Secret holds,
// whether and why it must be renewed, the renewed material, and the Secret object to write.
//
// The Secret (type kubernetes.io/tls) holds tls.crt and tls.key (the serving pair), ca.crt (the
// CAs to trust, the signing CA first, then earlier CAs that are still valid: exactly what every
// caBundle gets) and ca.key (the signing CA's key). Renewal follows two thirds of a lifetime:
// a serving certificate is re-issued by the same CA when two thirds of its lifetime have passed
// (or it is unusable, not signed by the CA, or for other DNS names); the CA is replaced when two
// thirds of its lifetime have passed, with a new serving certificate, and ca.crt then holds the
// new and the old CA until the old one expires, so clients holding either keep trusting replicas
// that serve either certificate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "certs/authority.h"
#include "policy/base/json.h"

namespace gpu_admission::webhook::cluster {

inline constexpr std::int64_t kDefaultCaLifetime = 5 * 365 * 86400LL;   // 5 years
inline constexpr std::int64_t kDefaultServingLifetime = 365 * 86400LL;  // 1 year

// What the certificates are for and how long they live.
struct CertSettings {
  std::string service;  // the Service's name and namespace: the serving certificate's DNS names
  std::string ns;
  std::int64_t ca_lifetime = kDefaultCaLifetime;
  std::int64_t serving_lifetime = kDefaultServingLifetime;
};

// Usable certificates: a CA with its key, the CAs to trust, and a serving pair.
struct CertMaterial {
  certs::Authority ca;               // the signing CA (the first of `trusted`)
  std::vector<std::string> trusted;  // PEM certificates, the signing CA first
  std::string cert_pem;              // serving certificate
  std::string key_pem;               // its key
  certs::Validity serving;

  std::string bundle() const;        // `trusted` concatenated: ca.crt and every caBundle
  std::string serial() const;        // of the serving certificate, upper-case hex ("" when unreadable)
};

// What a Secret holds. `material` is set when its CA is usable; `serving_problem` says why its
// serving pair is not (then it is renewed); without material, `problem` says why, and `kept_cas`
// lists the CAs of its ca.crt still valid (a replacement keeps trusting them).
struct SecretContents {
  std::optional<CertMaterial> material;
  std::string problem;
  std::string serving_problem;
  std::vector<std::string> kept_cas;
};
SecretContents read_secret(const Json& secret, const CertSettings& settings, std::int64_t now);

enum class Renewal { None, Create, Replace, RotateCa, RenewServing, Prune };
std::string_view renewal_name(Renewal renewal);  // "create", "replace", "rotate-ca", "renew", "prune"

struct RenewalPlan {
  Renewal what = Renewal::None;
  std::string why;  // for the log: "two thirds of the serving certificate's lifetime have passed"
};
// What to do with a Secret (`exists` false: there is none).
RenewalPlan plan_renewal(const SecretContents& contents, const CertSettings& settings, std::int64_t now, bool exists);

struct Renewed {
  CertMaterial material;
  std::string error;
  bool ok() const { return error.empty(); }
};
// The material after `plan` (not None).
Renewed renew(const SecretContents& contents, const RenewalPlan& plan, const CertSettings& settings, std::int64_t now);

// When something must next be done: two thirds of the serving certificate's or the CA's
// lifetime, or the expiry of a trusted CA (pruned then).
std::int64_t next_renewal(const CertMaterial& material);

// The Secret to write: `base` (the object read, for an update: its metadata is kept, with
// resourceVersion for optimistic concurrency; null for a create) with the material as its data.
Json secret_with(const Json& base, const std::string& name, const std::string& ns, const CertMaterial& material);

}  // namespace gpu_admission::webhook::cluster
