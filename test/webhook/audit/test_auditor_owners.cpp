// The audit reports a pod once, at the object a person edits (the top of its chain of
// controllers), with its pods counted; objects below the top are judged through their pods.
#include "audit_test_support.h"

using namespace audit_test;

namespace {

const std::string kPrivileged = "securityContext: {privileged: true}";

std::string deployment(const std::string& name, const std::string& uid, const std::string& extra) {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: team-alpha, uid: " + uid +
         "}\nspec:\n  selector: {matchLabels: {app: " + name + "}}\n  template:\n    metadata: {labels: {app: " + name +
         "}}\n    spec:\n" + container_spec("      ", extra) + "---\n";
}

std::string replicaset(const std::string& name, const std::string& uid, const std::string& owner, const std::string& owner_uid,
                       const std::string& extra) {
  return "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: " + name + ", namespace: team-alpha, uid: " + uid + ", " +
         owner_ref("apps/v1", "Deployment", owner, owner_uid) + "}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n" +
         "    metadata: {labels: {app: x}}\n    spec:\n" + container_spec("      ", extra) + "---\n";
}

std::string pod(const std::string& name, const std::string& uid, const std::string& owner_line, const std::string& extra,
                const std::string& ns = "team-alpha", const std::string& phase = "Running") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns + ", uid: " + uid + labels_for(ns) +
         (owner_line.empty() ? "" : ", " + owner_line) + "}\nspec:\n" + container_spec("  ", extra) +
         "status: {phase: " + phase + "}\n---\n";
}

}  // namespace

TEST_CASE("audit: pods of a Deployment are reported once, at the Deployment, with their count", "[audit]") {
  std::string yaml = deployment("web", "d-1", kPrivileged) + replicaset("web-1", "r-1", "web", "d-1", kPrivileged);
  for (int i = 0; i < 3; ++i)
    yaml += pod("web-1-" + std::to_string(i), "p-" + std::to_string(i),
                owner_ref("apps/v1", "ReplicaSet", "web-1", "r-1"), kPrivileged);
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  const AuditSubject& s = r.subjects[0];
  CHECK(s.ref.kind == "Deployment");
  CHECK(s.ref.name == "web");
  CHECK(s.ref.uid == "d-1");
  CHECK(s.pods == 3);
  CHECK(s.violating_pods == 3);
  CHECK(s.tenant == "alpha");
  REQUIRE(s.findings.size() == 1);  // the template's and the pods' findings are the same one
  CHECK(s.findings[0].field.rfind("spec.template.", 0) == 0);  // where the person edits it
  const AuditTotal* t = find_total(r, "alpha", "privileged");
  REQUIRE(t);
  CHECK(t->objects == 1);
  CHECK(t->pods == 3);
  CHECK(r.skipped.at("workloads with a controller (judged through their pods)") == 1);
}

TEST_CASE("audit: a fixed Deployment leaves the report though its old ReplicaSet is kept", "[audit]") {
  // The fix rolled out: the old ReplicaSet (privileged template, scaled to 0) stays for rollback.
  const std::string yaml = deployment("web", "d-1", "") + replicaset("web-old", "r-old", "web", "d-1", kPrivileged) +
                           replicaset("web-new", "r-new", "web", "d-1", "") +
                           pod("web-new-a", "p-a", owner_ref("apps/v1", "ReplicaSet", "web-new", "r-new"), "");
  const AuditResult r = audit_yaml(yaml);
  CHECK(r.subjects.empty());
  CHECK(r.namespaces.at("team-alpha").passed == 1);  // the Deployment, with its pod
}

TEST_CASE("audit: a pod still running from before the fix keeps its Deployment in the report", "[audit]") {
  const std::string yaml = deployment("web", "d-1", "") + replicaset("web-old", "r-old", "web", "d-1", kPrivileged) +
                           pod("web-old-a", "p-a", owner_ref("apps/v1", "ReplicaSet", "web-old", "r-old"), kPrivileged) +
                           replicaset("web-new", "r-new", "web", "d-1", "") +
                           pod("web-new-a", "p-b", owner_ref("apps/v1", "ReplicaSet", "web-new", "r-new"), "");
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].ref.kind == "Deployment");
  CHECK(r.subjects[0].pods == 2);
  CHECK(r.subjects[0].violating_pods == 1);
}

TEST_CASE("audit: CronJob -> Job -> Pod, finished Jobs and pods are not judged", "[audit]") {
  const std::string cronjob =
      "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: team-alpha, uid: c-1}\nspec:\n"
      "  schedule: '0 0 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" +
      container_spec("          ", kPrivileged) + "          restartPolicy: Never\n---\n";
  auto job = [](const std::string& name, const std::string& uid, const std::string& status) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + ", namespace: team-alpha, uid: " + uid + ", " +
           owner_ref("batch/v1", "CronJob", "nightly", "c-1") + "}\nspec:\n  template:\n    spec:\n" +
           container_spec("      ", kPrivileged) + "      restartPolicy: Never\n" + status + "---\n";
  };
  const std::string yaml =
      cronjob + job("nightly-1", "j-1", "status: {conditions: [{type: Complete, status: 'True'}]}\n") +
      job("nightly-2", "j-2", "") +
      pod("nightly-1-x", "p-1", owner_ref("batch/v1", "Job", "nightly-1", "j-1"), kPrivileged, "team-alpha", "Succeeded") +
      pod("nightly-2-x", "p-2", owner_ref("batch/v1", "Job", "nightly-2", "j-2"), kPrivileged);
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].ref.kind == "CronJob");
  CHECK(r.subjects[0].pods == 1);  // the finished pod is not counted
  CHECK(r.skipped.at("finished pods (Succeeded or Failed)") == 1);
  CHECK(r.judged.at("CronJob") == 1);
  CHECK(r.judged.count("Job") == 0);
}

TEST_CASE("audit: pods of an operator's resource are reported at it, even when it is not listed", "[audit]") {
  std::string yaml;
  for (int i = 0; i < 2; ++i)
    yaml += pod("predictor-" + std::to_string(i), "p-" + std::to_string(i),
                owner_ref("serving.kserve.io/v1beta1", "InferenceService", "llm", "isvc-1"), kPrivileged);
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].ref.kind == "InferenceService");
  CHECK(r.subjects[0].ref.api_version == "serving.kserve.io/v1beta1");
  CHECK(r.subjects[0].pods == 2);
}

TEST_CASE("audit: an ML job's templates and pods are one subject", "[audit]") {
  const std::string job =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: llama, namespace: team-alpha, uid: pt-1}\n"
      "spec:\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n" +
      container_spec("          ", kPrivileged) + "---\n";
  std::string yaml = job;
  for (int i = 0; i < 2; ++i)
    yaml += pod("llama-worker-" + std::to_string(i), "p-" + std::to_string(i),
                owner_ref("kubeflow.org/v1", "PyTorchJob", "llama", "pt-1"), kPrivileged);
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].ref.kind == "PyTorchJob");
  CHECK(r.subjects[0].pods == 2);
  CHECK(r.judged.at("PyTorchJob.kubeflow.org") == 1);
  CHECK(has_rule(r.subjects[0], "privileged"));
}

TEST_CASE("audit: passing pods of their own are counted, not kept; exempt namespaces are skipped", "[audit]") {
  std::string yaml;
  for (int i = 0; i < 50; ++i) yaml += pod("ok-" + std::to_string(i), "ok-" + std::to_string(i), "", "");
  yaml += pod("system", "sys-1", "", kPrivileged, "kube-system");
  const AuditResult r = audit_yaml(yaml);
  CHECK(r.subjects.empty());
  CHECK(r.namespaces.at("team-alpha").passed == 50);
  CHECK(r.namespaces.at("kube-system").exempt == 1);
  CHECK(r.judged.at("Pod") == 50);  // the exempt pod is not judged: counted by why
  CHECK(r.skipped.at("objects in exempt namespaces (spec.exemptions.namespaces)") == 1);
}

TEST_CASE("audit: an owner chain that loops ends, and every pod still counts once", "[audit]") {
  // Not something the API server makes; the audit must still end.
  const std::string yaml =
      "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: a, namespace: team-alpha, uid: u-a, " +
      owner_ref("apps/v1", "ReplicaSet", "b", "u-b") + "}\nspec: {template: {spec: {containers: [{name: c, image: i}]}}}\n---\n" +
      "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: b, namespace: team-alpha, uid: u-b, " +
      owner_ref("apps/v1", "ReplicaSet", "a", "u-a") + "}\nspec: {template: {spec: {containers: [{name: c, image: i}]}}}\n---\n" +
      pod("p", "p-1", owner_ref("apps/v1", "ReplicaSet", "a", "u-a"), kPrivileged);
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  CHECK(r.subjects[0].pods == 1);
}

TEST_CASE("audit: an ownerReference to another namespace's uid neither hides a pod nor frames that owner", "[audit]") {
  // beta-dev's privileged pod names team-alpha's ReplicaSet (whose Deployment is clean) by uid.
  const std::string yaml =
      deployment("web", "d-1", "") + replicaset("web-1", "r-1", "web", "d-1", "") +
      pod("web-1-a", "p-a", owner_ref("apps/v1", "ReplicaSet", "web-1", "r-1"), "") +
      pod("sneaky", "p-s", owner_ref("apps/v1", "ReplicaSet", "web-1", "r-1"), kPrivileged, "beta-dev");
  const AuditResult r = audit_yaml(yaml);
  REQUIRE(r.subjects.size() == 1);
  const AuditSubject& s = r.subjects[0];
  CHECK(s.namespace_name == "beta-dev");
  CHECK(s.ref.kind == "ReplicaSet");  // as its own reference says: no chain outside its namespace
  CHECK(s.tenant == "beta");
  CHECK(s.pods == 1);
  CHECK(find_total(r, "beta", "privileged"));
  CHECK_FALSE(find_total(r, "alpha", "privileged"));
  CHECK(r.namespaces.at("team-alpha").passed == 1);  // the Deployment with its one pod
}
