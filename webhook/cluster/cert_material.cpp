// The self-managed certificates' Secret content and renewal decisions (cert_material.h).
#include "webhook/cluster/cert_material.h"

#include <algorithm>

#include "certs/certs.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/ops/base64.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr const char* kCaCert = "ca.crt";
constexpr const char* kCaKey = "ca.key";
constexpr const char* kTlsCert = "tls.crt";
constexpr const char* kTlsKey = "tls.key";

// A data key of the Secret, base64-decoded ("" when absent or not base64).
std::string data_of(const Json& secret, const char* key) {
  const auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) return "";
  const auto value = data->find(key);
  if (value == data->end() || !value->is_string()) return "";
  return base64_decode(value->get<std::string>()).value_or("");
}

bool expired(const std::string& cert_pem, std::int64_t now) {
  const certs::Validity validity = certs::certificate_validity(cert_pem);
  return !validity.ok() || now >= validity.not_after;
}

// The certificates of `trusted` still valid at `now`, without repeats, in order.
std::vector<std::string> still_valid(const std::vector<std::string>& trusted, std::int64_t now) {
  std::vector<std::string> out;
  for (const auto& pem : trusted)
    if (!expired(pem, now) && std::find(out.begin(), out.end(), pem) == out.end()) out.push_back(pem);
  return out;
}

// Why the serving pair cannot be served as it is ("" when it can).
std::string serving_problem(const CertMaterial& m, const CertSettings& settings) {
  if (m.cert_pem.empty() || m.key_pem.empty()) return "the Secret has no tls.crt or tls.key";
  if (!m.serving.ok()) return "tls.crt cannot be read: " + m.serving.error;
  if (std::string mismatch = certs::check_key_matches(m.cert_pem, m.key_pem); !mismatch.empty())
    return "tls.crt and tls.key: " + mismatch;
  if (!certs::issued_by(m.cert_pem, m.ca.cert_pem)) return "tls.crt is not signed by the CA of ca.crt";
  std::vector<std::string> names = certs::certificate_dns_names(m.cert_pem);
  std::vector<std::string> wanted = certs::service_dns_names(settings.service, settings.ns);
  std::sort(names.begin(), names.end());
  std::sort(wanted.begin(), wanted.end());
  if (names != wanted) return "tls.crt is not for Service " + settings.service + "." + settings.ns;
  return "";
}

std::string when(std::int64_t unix_seconds) { return certs::format_utc(unix_seconds); }

}  // namespace

std::string CertMaterial::bundle() const {
  std::string out;
  for (const auto& pem : trusted) out += pem;
  return out;
}

std::string CertMaterial::serial() const { return certs::certificate_serial_hex(cert_pem); }

SecretContents read_secret(const Json& secret, const CertSettings& settings, std::int64_t now) {
  SecretContents out;
  const std::vector<std::string> trusted = certs::split_certificates(data_of(secret, kCaCert));
  out.kept_cas = still_valid(trusted, now);
  if (trusted.empty()) {
    out.problem = "the Secret has no CA certificate (ca.crt)";
    return out;
  }
  certs::Authority ca = certs::load_authority(trusted.front(), data_of(secret, kCaKey));
  if (!ca.ok()) {
    out.problem = "its CA cannot sign (ca.crt, ca.key): " + ca.error;
    return out;
  }
  CertMaterial m;
  m.ca = std::move(ca);
  m.trusted = trusted;
  m.cert_pem = data_of(secret, kTlsCert);
  m.key_pem = data_of(secret, kTlsKey);
  m.serving = certs::certificate_validity(m.cert_pem);
  out.serving_problem = serving_problem(m, settings);
  out.material = std::move(m);
  return out;
}

std::string_view renewal_name(Renewal renewal) {
  switch (renewal) {
    case Renewal::None: return "none";
    case Renewal::Create: return "create";
    case Renewal::Replace: return "replace";
    case Renewal::RotateCa: return "rotate-ca";
    case Renewal::RenewServing: return "renew";
    case Renewal::Prune: return "prune";
  }
  return "none";
}

RenewalPlan plan_renewal(const SecretContents& contents, const CertSettings& settings, std::int64_t now, bool exists) {
  if (!exists) return {Renewal::Create, "the Secret does not exist"};
  if (!contents.material) return {Renewal::Replace, contents.problem};
  const CertMaterial& m = *contents.material;
  const certs::Validity& ca = m.ca.validity;
  if (now >= ca.renew_at())
    return {Renewal::RotateCa, "two thirds of the CA's lifetime have passed (it expires " + when(ca.not_after) + ")"};
  if (!contents.serving_problem.empty()) return {Renewal::RenewServing, contents.serving_problem};
  if (now >= m.serving.renew_at())
    return {Renewal::RenewServing, "two thirds of the serving certificate's lifetime have passed (it expires " +
                                       when(m.serving.not_after) + ")"};
  if (still_valid(m.trusted, now).size() != m.trusted.size())
    return {Renewal::Prune, "ca.crt holds an expired CA"};
  (void)settings;
  return {};
}

Renewed renew(const SecretContents& contents, const RenewalPlan& plan, const CertSettings& settings, std::int64_t now) {
  Renewed out;
  const bool new_ca = plan.what == Renewal::Create || plan.what == Renewal::Replace || plan.what == Renewal::RotateCa;
  CertMaterial& m = out.material;
  if (new_ca) {
    m.ca = certs::generate_authority(settings.ca_lifetime, now);
    if (!m.ca.ok()) {
      out.error = m.ca.error;
      return out;
    }
    m.trusted = {m.ca.cert_pem};
    // The CAs clients may still meet keep being trusted until they expire.
    const std::vector<std::string> earlier =
        contents.material ? still_valid(contents.material->trusted, now) : contents.kept_cas;
    for (const auto& pem : earlier) m.trusted.push_back(pem);
  } else if (contents.material) {
    m = *contents.material;
    m.trusted = still_valid(m.trusted, now);
    if (m.trusted.empty() || m.trusted.front() != m.ca.cert_pem) m.trusted.insert(m.trusted.begin(), m.ca.cert_pem);
  } else {
    out.error = "nothing to renew";
    return out;
  }
  if (plan.what == Renewal::Prune) return out;
  certs::KeyPair pair = certs::issue_serving_certificate(m.ca, settings.service, settings.ns, settings.serving_lifetime, now);
  if (!pair.ok()) {
    out.error = pair.error;
    return out;
  }
  m.cert_pem = std::move(pair.cert_pem);
  m.key_pem = std::move(pair.key_pem);
  m.serving = {pair.not_before, pair.not_after, ""};
  return out;
}

std::int64_t next_renewal(const CertMaterial& material) {
  std::int64_t next = std::min(material.serving.renew_at(), material.ca.validity.renew_at());
  for (const auto& pem : material.trusted) {
    const certs::Validity validity = certs::certificate_validity(pem);
    if (validity.ok()) next = std::min(next, validity.not_after);
  }
  return next;
}

Json secret_with(const Json& base, const std::string& name, const std::string& ns, const CertMaterial& material) {
  Json secret = base.is_object() ? base : Json::object();
  secret["apiVersion"] = "v1";
  secret["kind"] = "Secret";
  Json& metadata = secret["metadata"];
  if (!metadata.is_object()) metadata = Json::object();
  metadata["name"] = name;
  metadata["namespace"] = ns;
  metadata["labels"]["app.kubernetes.io/managed-by"] = "gpu-admission";
  metadata["labels"]["app.kubernetes.io/component"] = "webhook-certificates";
  Json& annotations = metadata["annotations"];
  annotations["gpu-admission.io/certificate-not-after"] = certs::format_utc(material.serving.not_after);
  annotations["gpu-admission.io/ca-not-after"] = certs::format_utc(material.ca.validity.not_after);
  // A Secret's type cannot change: one someone else created keeps its own.
  if (!secret.contains("type")) secret["type"] = "kubernetes.io/tls";
  secret["data"] = {{kCaCert, base64_encode(material.bundle())},
                    {kCaKey, base64_encode(material.ca.key_pem)},
                    {kTlsCert, base64_encode(material.cert_pem)},
                    {kTlsKey, base64_encode(material.key_pem)}};
  secret.erase("stringData");
  return secret;
}

}  // namespace gpu_admission::webhook::cluster
