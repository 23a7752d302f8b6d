// The real `gpu-admission serve` checks its own policy ConfigMap on /validate, as the chart
// registers it (CREATE and UPDATE of configmaps labelled gpu-admission.io/policy: "true"): a good
// policy is allowed, a broken one refused with lint's errors at their lines inside the data key
// (what `kubectl apply` and `helm upgrade` then print), warnings come back as warnings, and a
// ConfigMap without the label is allowed untouched. The policy serve runs with stays as it was.
#include <catch2/catch.hpp>

#include <string>

#include "webhook/cluster/serve_child.h"
#include "webhook/server/server_test_support.h"

namespace {

using gpu_admission::Json;
using namespace std::chrono_literals;

// Line 9 of the value (`pools: [b100]`) names a pool that does not exist.
constexpr const char* kBroken = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: broken}
spec:
  pools:
    - {name: a100, nodeSelector: {pool: a100}, trust: adversarial, gpuModel: A100, sharing: none}
  tenants:
    - name: alpha
      pools: [b100]
      namespaces: [team-alpha]
)";

constexpr const char* kGood = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: good}
spec:
  pools:
    - {name: a100, nodeSelector: {pool: a100}, trust: adversarial, gpuModel: A100, sharing: none}
  tenants:
    - {name: alpha, pools: [a100], defaultPool: a100, namespaces: [team-alpha]}
)";

std::string review(const std::string& uid, const std::string& policy, bool labelled,
                   const std::string& operation = "CREATE", const std::string& extra_policy_text = "") {
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "gpu-admission-policy"}, {"namespace", "gpu-admission"}}},
             {"data", {{"policy.yaml", policy + extra_policy_text}}}};
  if (labelled) cm["metadata"]["labels"] = {{"gpu-admission.io/policy", "true"}};
  Json request = {{"uid", uid},
                  {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "ConfigMap"}}},
                  {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "configmaps"}}},
                  {"name", "gpu-admission-policy"},
                  {"namespace", "gpu-admission"},
                  {"operation", operation},
                  {"userInfo", {{"username", "helm"}}},
                  {"object", cm}};
  if (operation == "UPDATE") request["oldObject"] = cm;
  return Json({{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}}).dump();
}

}  // namespace

TEST_CASE("serve binary: /validate refuses a broken policy ConfigMap and keeps its own policy",
          "[server][binary][policy-configmap]") {
  cluster_test::TempDir dir;
  cluster_test::write_text(dir.file("policy.yaml"), kGood);
  cluster_test::Child serve({"serve", "--policy", dir.file("policy.yaml"), "--cluster", "off", "--listen",
                             "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--grace-period", "1"},
                            dir.file("stderr.log"));
  const Json serving = serve.log_line("gpu-admission serving");
  INFO(serve.log());
  REQUIRE(serving.is_object());
  server_test::TlsClient client;
  REQUIRE(client.connect(serving["port"].get<int>()));

  // A good policy: allowed, nothing said.
  auto response = client.request("POST", "/validate", review("good", kGood, true));
  REQUIRE(response.status == 200);
  Json answer = Json::parse(response.body);
  CHECK(answer["response"]["uid"] == "good");
  CHECK(answer["response"]["allowed"] == true);
  CHECK_FALSE(answer["response"].contains("warnings"));

  // A broken one, on CREATE and on UPDATE: refused with the error at line 9 of key policy.yaml.
  for (const char* operation : {"CREATE", "UPDATE"}) {
    response = client.request("POST", "/validate", review("broken", kBroken, true, operation));
    answer = Json::parse(response.body);
    INFO(response.body);
    CHECK(answer["response"]["allowed"] == false);
    CHECK(answer["response"]["status"]["code"] == 403);
    const std::string message = answer["response"]["status"]["message"];
    CHECK(message.find("key policy.yaml") != std::string::npos);
    CHECK(message.find("policy.yaml:9:") != std::string::npos);
    CHECK(message.find("unknown pool") != std::string::npos);
  }
  CHECK(serve.log_line("policy ConfigMap refused")["errors"].size() == 1);

  // The same broken policy in a ConfigMap without the label: not the webhook's business.
  response = client.request("POST", "/validate", review("other", kBroken, false));
  answer = Json::parse(response.body);
  CHECK(answer["response"]["allowed"] == true);
  CHECK_FALSE(answer["response"].contains("status"));
  CHECK_FALSE(answer["response"].contains("warnings"));

  // Lint's warnings come back as warnings, each one line under 120 characters.
  response = client.request("POST", "/validate",
                            review("warned", kGood, true, "CREATE", "  rules: {gpu-cap: warn}\n"));
  answer = Json::parse(response.body);
  INFO(response.body);
  CHECK(answer["response"]["allowed"] == true);
  REQUIRE(answer["response"]["warnings"].size() == 1);
  const std::string warning = answer["response"]["warnings"][0];
  CHECK(warning.size() < 120);
  CHECK(warning.rfind("policy.yaml:9:", 0) == 0);

  // serve still runs its own policy: checking a ConfigMap changes nothing it enforces.
  const std::string metrics = cluster_test::scrape(serving["metrics_port"].get<int>());
  CHECK(metrics.find("gpu_admission_policy_info{hash=") != std::string::npos);
  CHECK(metrics.find("name=\"good\"") != std::string::npos);
  CHECK(metrics.find("kind=\"ConfigMap\"") != std::string::npos);
}
