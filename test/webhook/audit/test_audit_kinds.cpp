// The kinds an audit reads and what discovery says of them: facts first and pods last, the
// policy's spec.workloads kinds among the ML kinds, sub-resources and unlistable resources left
// out of a group's resources.
#include "audit_test_support.h"

using namespace audit_test;

TEST_CASE("audit kinds: namespaces and claims first, pods last, spec.workloads included", "[audit]") {
  const std::string policy_yaml = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: custom}
spec:
  workloads:
    - {apiVersion: example.com/v1, kind: Trainer, templates: [spec.template]}
)";
  PolicyLoad load = load_policy_file(write_temp(policy_yaml));
  INFO(load.report());
  REQUIRE(load.ok());
  const auto kinds = wanted_kinds(*load.policy);
  REQUIRE(kinds.size() > 10);
  CHECK(kinds.front().role == KindRole::Namespace);
  CHECK(kinds[1].kind == "ResourceClaimTemplate");
  CHECK(kinds[2].kind == "ResourceClaim");
  CHECK(kinds.back().is_pod());
  auto has = [&](const std::string& group, const std::string& kind) {
    return std::any_of(kinds.begin(), kinds.end(), [&](const AuditKind& k) { return k.group == group && k.kind == kind; });
  };
  CHECK(has("example.com", "Trainer"));
  CHECK(has("kubeflow.org", "PyTorchJob"));
  CHECK(has("apps", "Deployment"));
  CHECK(has("batch", "CronJob"));
  CHECK(has("batch.volcano.sh", "Job"));
}

TEST_CASE("audit kinds: an APIResourceList gives the listable resources by kind", "[audit]") {
  ServedResources served;
  const std::string doc = R"({"kind":"APIResourceList","groupVersion":"kubeflow.org/v1","resources":[
    {"name":"pytorchjobs","singularName":"pytorchjob","namespaced":true,"kind":"PyTorchJob","verbs":["get","list","watch"]},
    {"name":"pytorchjobs/status","namespaced":true,"kind":"PyTorchJob","verbs":["get","patch"]},
    {"name":"tfjobs","namespaced":true,"kind":"TFJob","verbs":["get"]},
    {"name":"odd","kind":"Odd","verbs":[7,"list"]}]})";
  REQUIRE_FALSE(read_resource_list(doc, served));
  CHECK(served.group_version == "kubeflow.org/v1");
  REQUIRE(served.resource_of("PyTorchJob"));
  CHECK(*served.resource_of("PyTorchJob") == "pytorchjobs");
  CHECK_FALSE(served.resource_of("TFJob"));  // cannot be listed
  CHECK(served.resource_of("Odd"));
  CHECK(read_resource_list("{}", served).has_value());
  CHECK(read_resource_list("not json", served).has_value());
}

TEST_CASE("audit kinds: list paths, cluster-wide and per namespace", "[audit]") {
  AuditKind k;
  k.group = "apps";
  k.version = "v1";
  k.resource = "deployments";
  CHECK(k.list_path() == "/apis/apps/v1/deployments");
  CHECK(k.list_path("ns") == "/apis/apps/v1/namespaces/ns/deployments");
  k.group = "";
  k.resource = "pods";
  CHECK(k.list_path("ns") == "/api/v1/namespaces/ns/pods");
  CHECK(k.label() == "");  // no kind set
  k.kind = "Pod";
  CHECK(k.label() == "Pod");
  k.group = "kubeflow.org";
  k.kind = "PyTorchJob";
  CHECK(k.label() == "PyTorchJob.kubeflow.org");
}
