// caBundle writes into the webhook's own configurations (webhook_ca_bundle.h).
#include "webhook/cluster/webhook_ca_bundle.h"

#include "policy/base/json.h"
#include "webhook/cluster/kube_config.h"
#include "webhook/ops/base64.h"

namespace gpu_admission::webhook::cluster {
namespace {

constexpr const char* kGroup = "admissionregistration.k8s.io";

std::string path_of(WebhookKind kind, const std::string& name) {
  return "/apis/admissionregistration.k8s.io/v1/" + std::string(resource_of(kind)) + "/" + name;
}

// Sets every webhook's caBundle to `encoded`; true when any changed. `count`: the webhooks.
bool set_bundles(Json& configuration, const std::string& encoded, int& count) {
  bool changed = false;
  count = 0;
  auto webhooks = configuration.find("webhooks");
  if (webhooks == configuration.end() || !webhooks->is_array()) return false;
  for (Json& webhook : *webhooks) {
    if (!webhook.is_object()) continue;
    ++count;
    Json& client_config = webhook["clientConfig"];
    if (!client_config.is_object()) client_config = Json::object();
    const auto current = client_config.find("caBundle");
    if (current != client_config.end() && current->is_string() && *current == encoded) continue;
    client_config["caBundle"] = encoded;
    changed = true;
  }
  return changed;
}

CaBundleWrite failed(std::string error) {
  CaBundleWrite out;
  out.error = std::move(error);
  return out;
}

}  // namespace

std::string_view resource_of(WebhookKind kind) {
  return kind == WebhookKind::Validating ? "validatingwebhookconfigurations" : "mutatingwebhookconfigurations";
}

std::string_view kind_name(WebhookKind kind) {
  return kind == WebhookKind::Validating ? "ValidatingWebhookConfiguration" : "MutatingWebhookConfiguration";
}

std::string api_error(const HttpResult& result) {
  if (result.status == 0) return result.describe();
  const Json body = Json::parse(result.body, nullptr, false);
  if (body.is_object() && body.contains("message") && body["message"].is_string())
    return "HTTP " + std::to_string(result.status) + ": " + body["message"].get<std::string>();
  return result.describe();
}

std::string forbidden_hint(std::string_view verb, std::string_view resource, std::string_view group,
                           std::string_view name, std::string_view ns) {
  std::string out = "RBAC: the service account may not " + std::string(verb) + " " + std::string(resource);
  if (!group.empty()) out += "." + std::string(group);
  out += " \"" + std::string(name) + "\"";
  if (!ns.empty()) out += " in namespace " + std::string(ns);
  out += "; grant " + std::string(verb) + " on " + std::string(resource);
  if (!group.empty()) out += " (apiGroups: [" + std::string(group) + "])";
  out += verb == "create" ? "" : " with resourceNames: [" + std::string(name) + "]";
  out += ns.empty() ? " in a ClusterRole" : " in a Role of namespace " + std::string(ns);
  out += " (the chart's certs.mode self-managed does)";
  return out;
}

CaBundleWrite write_ca_bundle(const KubeClient& client, WebhookKind kind, const std::string& name,
                              const std::string& bundle_pem, std::chrono::milliseconds timeout, int attempts) {
  const std::string path = path_of(kind, name);
  const std::string encoded = base64_encode(bundle_pem);
  const std::string what = std::string(kind_name(kind)) + " " + name;
  CaBundleWrite out;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const HttpResult got = client.get(path, timeout, 4u << 20);
    if (got.status == 404) {
      out.outcome = CaBundleWrite::Outcome::Absent;
      return out;
    }
    if (got.status == 403) return failed(forbidden_hint("get", resource_of(kind), kGroup, name, ""));
    if (!got.ok()) return failed("cannot read " + what + ": " + api_error(got));
    Json configuration = Json::parse(got.body, nullptr, false);
    if (!configuration.is_object()) return failed("cannot read " + what + ": the answer is not a JSON object");
    if (!set_bundles(configuration, encoded, out.webhooks)) {
      out.outcome = CaBundleWrite::Outcome::Current;
      return out;
    }
    const HttpResult put = client.send("PUT", path, configuration.dump(), timeout);
    if (put.ok()) {
      out.outcome = CaBundleWrite::Outcome::Written;
      return out;
    }
    if (put.status == 409) {  // another writer came first: read it again
      ++out.conflicts;
      continue;
    }
    if (put.status == 403) return failed(forbidden_hint("update", resource_of(kind), kGroup, name, ""));
    if (put.status == 404) {
      out.outcome = CaBundleWrite::Outcome::Absent;
      return out;
    }
    return failed("cannot write the caBundle of " + what + ": " + api_error(put));
  }
  CaBundleWrite gave_up = failed("cannot write the caBundle of " + what + ": " + std::to_string(out.conflicts) +
                                 " conflicting writes in a row");
  gave_up.conflicts = out.conflicts;
  return gave_up;
}

}  // namespace gpu_admission::webhook::cluster
