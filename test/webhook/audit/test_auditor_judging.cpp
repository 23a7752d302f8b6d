// What the audit judges with: DRA claims and templates resolved from the same input (claims
// generated for a pod are judged through their template), namespace labels choosing tenants,
// exceptions, list items without apiVersion and kind, and objects that cannot be read.
#include "audit_test_support.h"

#include <simdjson.h>

#include "webhook/io/policy_file.h"

using namespace audit_test;

namespace {

const std::string kEightGpuTemplate = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: eight-gpus, namespace: team-alpha, uid: t-1}
spec:
  spec:
    devices:
      requests:
        - name: gpus
          exactly: {deviceClassName: gpu.nvidia.com, count: 8}
---
)";

std::string claim_pod(const std::string& name, const std::string& uid) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: team-alpha, uid: " + uid +
         labels_for("team-alpha") + "}\nspec:\n  resourceClaims: [{name: gpus, resourceClaimTemplateName: eight-gpus}]\n"
         "  containers: [{name: main, image: i, resources: {claims: [{name: gpus}]}}]\n---\n";
}

}  // namespace

TEST_CASE("audit: a pod's claim template is resolved from the same input", "[audit][dra]") {
  // The template alone asks for 8 GPUs in a tenant capped at 4: the claim is judged on its own
  // too. The pod refers to it; the claim generated for the pod (owned by it) is not judged again.
  const std::string generated = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: trainer-gpus-x1
  namespace: team-alpha
  uid: c-1
  ownerReferences: [{apiVersion: v1, kind: Pod, name: trainer, uid: p-1, controller: true}]
spec:
  devices:
    requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, count: 8}
---
)";
  const AuditResult r = audit_yaml(kEightGpuTemplate + generated + claim_pod("trainer", "p-1"));
  const AuditSubject* pod = find_subject(r, "Pod", "trainer");
  REQUIRE(pod);
  CHECK(has_rule(*pod, "gpu-cap"));
  CHECK(r.skipped.at("claims generated for a pod (judged through their template)") == 1);
  CHECK(r.judged.at("ResourceClaimTemplate") == 1);
  CHECK(r.judged.count("ResourceClaim") == 0);
}

TEST_CASE("audit: without its template, a claim pod is judged with the claim unresolved", "[audit][dra]") {
  const AuditResult r = audit_yaml(claim_pod("trainer", "p-1"));
  const AuditSubject* pod = find_subject(r, "Pod", "trainer");
  REQUIRE(pod);
  CHECK(has_rule(*pod, "gpu-cap"));  // a cap applies and the claim cannot be counted: fail closed
}

TEST_CASE("audit: tenants chosen by namespace labels come from the Namespace objects read", "[audit]") {
  const std::string policy_yaml = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: by-labels}
spec:
  rules: {privileged: warn}
  tenants:
    - name: research
      namespaceSelector: {matchLabels: {org: research}}
)";
  const std::string policy_path = write_temp(policy_yaml);
  PolicyLoad load = load_policy_file(policy_path);
  INFO(load.report());
  REQUIRE(load.ok());
  const std::string yaml = "apiVersion: v1\nkind: Namespace\nmetadata: {name: lab-1, labels: {org: research}}\n---\n"
                           "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: lab-1, uid: u}\nspec:\n" +
                           container_spec("  ", "securityContext: {privileged: true}");
  const AuditResult r = audit_yaml(yaml, *load.policy);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].tenant == "research");
  const AuditTotal* t = find_total(r, "research", "privileged", FindingLabel::Warn);
  REQUIRE(t);
  CHECK(t->objects == 1);
}

TEST_CASE("audit: an excepted finding is reported as excepted, never as a deny", "[audit]") {
  const std::string policy_yaml = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: excepted}
spec:
  rules: {privileged: deny}
  exceptions:
    - name: node-debugger
      reason: the node team's debugger needs it
      rules: [privileged]
      namespaces: [ops]
)";
  const std::string policy_path = write_temp(policy_yaml);
  PolicyLoad load = load_policy_file(policy_path);
  REQUIRE(load.ok());
  const AuditResult r = audit_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: dbg, namespace: ops, uid: u}\nspec:\n" +
                                       container_spec("  ", "securityContext: {privileged: true}"),
                                   *load.policy);
  CHECK(find_total(r, "none", "privileged", FindingLabel::Excepted));
  CHECK_FALSE(find_total(r, "none", "privileged", FindingLabel::Deny));
}

TEST_CASE("audit: list items without apiVersion and kind are judged as their list's kind", "[audit]") {
  const auto& policy = fixture_policy();
  Auditor auditor(policy, 1'800'000'000);
  AuditKind pod_kind;
  for (auto k : wanted_kinds(policy))
    if (k.is_pod()) pod_kind = k;
  pod_kind.version = "v1";
  pod_kind.resource = "pods";
  simdjson::dom::parser parser;
  const std::string item = R"({"metadata":{"name":"p","namespace":"team-alpha","uid":"u",)"
                           R"("labels":{"gpu-admission.io/tenant":"alpha","cost-center":"cc-1042"}},)"
                           R"("spec":{"containers":[{"name":"c","image":"i","securityContext":{"privileged":true}}]}})";
  simdjson::dom::element element;
  REQUIRE(!parser.parse(item).get(element));
  auditor.add(pod_kind, element);
  const AuditResult r = auditor.finish();
  REQUIRE(r.subjects.size() == 1);
  CHECK(has_rule(r.subjects[0], "privileged"));
  CHECK(r.subjects[0].ref.api_version == "v1");
}

TEST_CASE("audit: an object that cannot be read is an error subject, not a pass", "[audit]") {
  const AuditResult r = audit_yaml(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: broken, namespace: team-alpha, uid: u}\nspec: {containers: 7}\n");
  REQUIRE(r.subjects.size() == 1);
  CHECK_FALSE(r.subjects[0].error.empty());
  CHECK(r.subjects[0].error.find("spec.containers") != std::string::npos);
  CHECK(r.namespaces.at("team-alpha").errors == 1);
  CHECK(r.namespaces.at("team-alpha").passed == 0);
}

TEST_CASE("audit: a subject keeps distinct findings only, capped", "[audit]") {
  // 30 pods of one owner, each privileged in a differently named container: 30 distinct findings.
  std::string yaml;
  for (int i = 0; i < 30; ++i)
    yaml += "apiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) + ", namespace: team-alpha, uid: u" +
            std::to_string(i) + labels_for("team-alpha") + ", " + owner_ref("apps/v1", "StatefulSet", "db", "s-1") +
            "}\nspec:\n  containers: [{name: c" + std::to_string(i) +
            ", image: i, securityContext: {privileged: true}}]\n---\n";
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].findings.size() == kMaxSubjectFindings);
  CHECK(r.subjects[0].more_findings == 30 - kMaxSubjectFindings);
  CHECK(r.subjects[0].pods == 30);
  const AuditTotal* t = find_total(r, "alpha", "privileged");
  REQUIRE(t);
  CHECK(t->objects == 1);
  CHECK(t->pods == 30);
}
