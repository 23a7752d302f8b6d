// `gpu-admission audit` on files, as a CI job or a person runs it: `kubectl get -A -o json`
// output and manifests in, text / JSON / PolicyReports out, exit codes 0 / 1 / 2, and unusable
// input named (the flag, the file and line, the missing cluster).
#include "cli_test_support.h"
#include "yaml_test_support.h"

#include <nlohmann/json.hpp>
#include "test_paths.h"

using namespace cli_test;
using nlohmann::json;

namespace {

const std::string kPolicy = std::string(test_paths::source_dir()) + "/test/fixtures/policy.yaml";

// What `kubectl get pods,deployments,replicasets -A -o json` prints: a List of full objects.
json kubectl_list() {
  auto pod = [](const std::string& name, const std::string& uid, bool privileged, const json& owner) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "team-alpha"},
                {"uid", uid},
                {"labels", {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1042"}}}}},
              {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "i"}}})}}},
              {"status", {{"phase", "Running"}}}};
    if (privileged) p["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
    if (!owner.is_null()) p["metadata"]["ownerReferences"] = json::array({owner});
    return p;
  };
  const json rs_owner = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web-1"}, {"uid", "rs-1"}, {"controller", true}};
  json deployment = {{"apiVersion", "apps/v1"},
                     {"kind", "Deployment"},
                     {"metadata", {{"name", "web"}, {"namespace", "team-alpha"}, {"uid", "dep-1"}}},
                     {"spec",
                      {{"selector", {{"matchLabels", {{"app", "web"}}}}},
                       {"template",
                        {{"metadata", {{"labels", {{"app", "web"}}}}},
                         {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "i"},
                                                                {"securityContext", {{"privileged", true}}}}})}}}}}}}};
  json replicaset = deployment;
  replicaset["kind"] = "ReplicaSet";
  replicaset["metadata"] = {{"name", "web-1"}, {"namespace", "team-alpha"}, {"uid", "rs-1"},
                            {"ownerReferences", json::array({{{"apiVersion", "apps/v1"}, {"kind", "Deployment"},
                                                              {"name", "web"}, {"uid", "dep-1"}, {"controller", true}}})}};
  return {{"apiVersion", "v1"},
          {"kind", "List"},
          {"items", json::array({pod("web-1-a", "p-1", true, rs_owner), pod("web-1-b", "p-2", true, rs_owner),
                                 pod("notebook", "p-3", false, nullptr), deployment, replicaset})}};
}

}  // namespace

TEST_CASE("cli audit: kubectl's JSON list in, the violating Deployment once with its pods, exit 1", "[cli][audit]") {
  TempFile input(kubectl_list().dump());
  const CliRun r = run_cli({"audit", "-p", kPolicy, input.path.string()});
  INFO(describe(r));
  CHECK(r.code == 1);
  CHECK(r.out.find("team-alpha/Deployment/web (tenant alpha, 2 pods, 2 violating)") != std::string::npos);
  CHECK(r.out.find("ReplicaSet/web-1") == std::string::npos);
  CHECK(r.out.find("notebook") == std::string::npos);
  CHECK(r.out.find("1 violating objects") != std::string::npos);

  const CliRun j = run_cli({"audit", "-p", kPolicy, "-o", "json", input.path.string()});
  REQUIRE(j.code == 1);
  const json out = json::parse(j.out);
  REQUIRE(out["totals"].size() == 1);
  CHECK(out["totals"][0]["rule"] == "privileged");
  CHECK(out["totals"][0]["objects"] == 1);
  CHECK(out["totals"][0]["pods"] == 2);
  CHECK(out["judged"]["Pod"] == 3);
  CHECK(out["judged"]["Deployment"] == 1);
}

TEST_CASE("cli audit: -o policyreport prints one PolicyReport per namespace with findings", "[cli][audit]") {
  TempFile input(kubectl_list().dump());
  const CliRun r = run_cli({"audit", "-p", kPolicy, "-o", "policyreport", input.path.string()});
  INFO(describe(r));
  REQUIRE(r.code == 1);
  const auto docs = YAML::LoadAll(r.out);
  REQUIRE(docs.size() == 1);
  const json report = yaml_to_json(docs[0]);
  CHECK(report["kind"] == "PolicyReport");
  CHECK(report["metadata"]["namespace"] == "team-alpha");
  CHECK(report["summary"]["fail"] == 1);
  CHECK(report["summary"]["pass"] == 1);  // the notebook
  CHECK(report["results"][0]["properties"]["pods"] == "2");
}

TEST_CASE("cli audit: -o openreports prints the same reports as OpenReports Reports", "[cli][audit]") {
  TempFile input(kubectl_list().dump());
  const CliRun wg = run_cli({"audit", "-p", kPolicy, "-o", "policyreport", input.path.string()});
  const CliRun open = run_cli({"audit", "-p", kPolicy, "-o", "openreports", input.path.string()});
  INFO(describe(open));
  REQUIRE(open.code == 1);
  const auto docs = YAML::LoadAll(open.out);
  REQUIRE(docs.size() == 1);
  json report = yaml_to_json(docs[0]);
  CHECK(report["apiVersion"] == "openreports.io/v1alpha1");
  CHECK(report["kind"] == "Report");
  CHECK(report["source"] == "gpu-admission");
  CHECK(report["metadata"]["namespace"] == "team-alpha");
  // The same content as the PolicyReport (results' timestamps aside: each run has its own).
  json policy_report = yaml_to_json(YAML::LoadAll(wg.out).at(0));
  for (json* r : {&report, &policy_report}) {
    r->erase("apiVersion");
    r->erase("kind");
    r->erase("source");
    for (auto& result : (*r)["results"]) result.erase("timestamp");
  }
  CHECK(report == policy_report);
  const CliRun bad = run_cli({"audit", "-p", kPolicy, "-o", "openreport", input.path.string()});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("policyreport or openreports") != std::string::npos);
}

TEST_CASE("cli audit: nothing violating exits 0; standard input is read", "[cli][audit]") {
  TempFile input("apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: sandbox}\nspec:\n"
                 "  containers: [{name: c, image: i}]\n");
  const CliRun r = run_cli({"audit", "-p", kPolicy, "-"}, "", input.path.string());
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("no violations") != std::string::npos);
  CHECK(r.out.find("judged: 1 Pod") != std::string::npos);
}

TEST_CASE("cli audit: unusable input exits 2 and names what is wrong", "[cli][audit]") {
  TempFile bad_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"audit", "--frobnicate"}, "--frobnicate"},
      {{"audit", "-p", kPolicy, "/nonexistent/pods.yaml"}, "/nonexistent/pods.yaml"},
      {{"audit", "-p", kPolicy, bad_yaml.path.string()}, bad_yaml.path.string() + ":4:1: invalid YAML"},
      {{"audit", "-p", kPolicy, "--write-reports", bad_yaml.path.string()}, "give no FILEs"},
      {{"audit", "-p", kPolicy, "--interval", "soon"}, "--interval"},
      {{"audit", "-p", kPolicy, "-o", "xml", bad_yaml.path.string()}, "--output"},
      {{"audit", "-p", "/nonexistent/policy.yaml", bad_yaml.path.string()}, "/nonexistent/policy.yaml"},
      {{"audit", "-p", kPolicy, "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
  };
  for (const auto& c : cases) {
    const CliRun r = run_cli(c.args);
    INFO(c.args.back() << "\n" << describe(r));
    CHECK(r.code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

TEST_CASE("cli audit: without FILEs and without a cluster, it says how to give one", "[cli][audit]") {
  // No --kubeconfig and not in a pod (the tests do not run with KUBERNETES_SERVICE_HOST).
  if (std::getenv("KUBERNETES_SERVICE_HOST")) {
    WARN("skipped: running inside a pod");
    return;
  }
  const CliRun r = run_cli({"audit", "-p", kPolicy});
  INFO(describe(r));
  CHECK(r.code == 2);
  CHECK(r.err.find("no cluster to read") != std::string::npos);
  CHECK(r.err.find("--kubeconfig") != std::string::npos);
}

TEST_CASE("cli audit: objects of exempt namespaces are counted as not judged, never as violations", "[cli][audit]") {
  // kube-system and infra-* are exempt in the fixture policy; the privileged pod and Deployment
  // there are what an exempt namespace holds (a CNI agent, a log shipper).
  TempFile input(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: cni-agent, namespace: kube-system}\n"
      "spec: {hostNetwork: true, containers: [{name: c, image: i, securityContext: {privileged: true}}]}\n---\n"
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shipper, namespace: infra-logging}\n"
      "spec: {template: {spec: {containers: [{name: c, image: i, securityContext: {privileged: true}}]}}}\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: sandbox}\nspec: {containers: [{name: c, image: i}]}\n");
  const std::string why = "objects in exempt namespaces (spec.exemptions.namespaces)";
  const CliRun r = run_cli({"audit", "-p", kPolicy, input.path.string()});
  INFO(describe(r));
  CHECK(r.code == 0);
  CHECK(r.out.find("judged: 1 Pod\n") != std::string::npos);
  CHECK(r.out.find("not judged: 2 " + why) != std::string::npos);
  CHECK(r.out.find("no violations") != std::string::npos);
  CHECK(r.out.find("cni-agent") == std::string::npos);
  CHECK(r.out.find("privileged") == std::string::npos);

  const CliRun j = run_cli({"audit", "-p", kPolicy, "-o", "json", input.path.string()});
  REQUIRE(j.code == 0);
  const json out = json::parse(j.out);
  CHECK(out["judged"] == json{{"Pod", 1}});
  CHECK(out["skipped"][why] == 2);
  CHECK(out["objects"].empty());
  CHECK(out["violatingObjects"] == 0);
}
