// The fake API server's Secrets and admissionregistration.k8s.io/v1 webhook configurations (see
// fake_apiserver.h): what `serve --certs self-managed` writes. Both are writable with the real
// server's checks that matter to it: a kubernetes.io/tls Secret needs tls.crt and tls.key, data
// values and caBundles are base64 (the API server decodes them as bytes), webhooks have names.

#include "test/fake_apiserver/fake_apiserver.h"
#include "webhook/ops/base64.h"

namespace cluster_test {
namespace {

using Problems = std::vector<std::string>;

// As the API server reads a []byte field: Go's base64.StdEncoding.
bool is_base64(const std::string& text) { return gpu_admission::webhook::base64_decode_strict(text).has_value(); }

Problems secret_problems(Json& secret) {
  Problems problems;
  const Json data = secret.value("data", Json::object());
  if (!data.is_object()) return {"data: Invalid value: must be a map of base64 strings"};
  for (const auto& [key, value] : data.items())
    if (!value.is_string() || !is_base64(value.get<std::string>()))
      problems.push_back("data[" + key + "]: Invalid value: illegal base64 data");
  if (secret.value("type", "") == "kubernetes.io/tls")
    for (const char* key : {"tls.crt", "tls.key"})
      if (!data.contains(key)) problems.push_back(std::string("data[") + key + "]: Required value");
  return problems;
}

Problems webhook_configuration_problems(Json& configuration) {
  Problems problems;
  if (!configuration.contains("webhooks")) return problems;
  const Json& webhooks = configuration["webhooks"];
  if (!webhooks.is_array()) return {"webhooks: Invalid value: must be a list"};
  for (size_t i = 0; i < webhooks.size(); ++i) {
    const std::string at = "webhooks[" + std::to_string(i) + "]";
    if (!webhooks[i].is_object() || !webhooks[i].contains("name")) {
      problems.push_back(at + ".name: Required value");
      continue;
    }
    const Json bundle = webhooks[i].value("clientConfig", Json::object()).value("caBundle", Json());
    if (!bundle.is_null() && (!bundle.is_string() || !is_base64(bundle.get<std::string>())))
      problems.push_back(at + ".clientConfig.caBundle: Invalid value: illegal base64 data");
  }
  return problems;
}

}  // namespace

std::vector<ResourceType> admission_resources() {
  ResourceType secrets{"", "v1", "secrets", "Secret", true, {}, {}, true, secret_problems};
  ResourceType validating{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                          "ValidatingWebhookConfiguration", false, {}, {"api-extensions"}, true,
                          webhook_configuration_problems};
  ResourceType mutating = validating;
  mutating.resource = "mutatingwebhookconfigurations";
  mutating.kind = "MutatingWebhookConfiguration";
  return {secrets, validating, mutating};
}

}  // namespace cluster_test
