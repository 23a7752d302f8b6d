// Writing a CA bundle into the caBundle of every webhook of one of the webhook's own
// configurations (admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration or
// MutatingWebhookConfiguration, by name), as `serve --certs self-managed` does: GET, and when any
// webhook's clientConfig.caBundle differs, PUT of the object read with every caBundle set (its
// resourceVersion makes the write conditional; a 409 Conflict reads it again). Several replicas
// writing the same bundle converge; one that finds it written writes nothing.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "webhook/cluster/kube_client.h"

namespace gpu_admission::webhook::cluster {

enum class WebhookKind { Validating, Mutating };
std::string_view resource_of(WebhookKind kind);  // "validatingwebhookconfigurations", ...
std::string_view kind_name(WebhookKind kind);    // "ValidatingWebhookConfiguration", ...

struct CaBundleWrite {
  enum class Outcome { Current, Written, Absent, Failed };
  Outcome outcome = Outcome::Failed;
  int conflicts = 0;      // 409s met (each followed by a fresh read)
  int webhooks = 0;       // webhooks in the configuration
  std::string error;      // Failed: what went wrong and, for a 403, which permission is missing
};

// Makes every caBundle of configuration `name` hold `bundle_pem` (base64-encoded there).
// Absent: no such configuration (nothing written). At most `attempts` reads.
CaBundleWrite write_ca_bundle(const KubeClient& client, WebhookKind kind, const std::string& name,
                              const std::string& bundle_pem, std::chrono::milliseconds timeout, int attempts = 5);

// The message of a Status body ("" when the body is none), else the transport error.
std::string api_error(const HttpResult& result);

// What a 403 means to the operator: `verb` on `resource` ("secrets", "validatingwebhookconfigurations"),
// named `name` (in `ns`: "" for cluster-scoped ones), and where that permission comes from.
std::string forbidden_hint(std::string_view verb, std::string_view resource, std::string_view group,
                           std::string_view name, std::string_view ns);

}  // namespace gpu_admission::webhook::cluster
