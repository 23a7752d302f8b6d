// Shared plumbing of the backstop tests: running the gpu-admission binary (policy export, check),
// the admission attributes the API server would hand a ValidatingAdmissionPolicy for an object,
// and a small assertion log that the tests report through.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export function run(binary, args, { cwd, input } = {}) {
  const r = spawnSync(binary, args, { cwd, input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// The exported objects (policies and bindings) of `policyFile` ("" for the built-in default).
export function exportPolicy(binary, policyFile, cwd) {
  const args = ["policy", "export", "--format", "vap", "--output", "json"];
  if (policyFile) args.push("--policy", policyFile);
  const r = run(binary, args, { cwd });
  if (r.status !== 0) throw new Error(`policy export ${policyFile} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout).items;
}

// `gpu-admission check -o json` of `files` with `policyFile`: { results, skipped, errors }.
export function check(binary, policyFile, files, cwd) {
  const args = ["check", "-o", "json", "--fail-on", "none"];
  if (policyFile) args.push("--policy", policyFile);
  const r = run(binary, [...args, ...files], { cwd });
  if (r.status !== 0) throw new Error(`check exited ${r.status}: ${r.stderr}\n${r.stdout.slice(0, 2000)}`);
  const report = JSON.parse(r.stdout);
  report.results ||= [];
  return report;
}

const kPlurals = {
  Pod: "pods", Deployment: "deployments", StatefulSet: "statefulsets", DaemonSet: "daemonsets",
  ReplicaSet: "replicasets", ReplicationController: "replicationcontrollers", Job: "jobs", CronJob: "cronjobs",
  PodTemplate: "podtemplates", ResourceClaim: "resourceclaims", ResourceClaimTemplate: "resourceclaimtemplates",
  Namespace: "namespaces", ConfigMap: "configmaps",
};

export function groupVersion(apiVersion) {
  const at = (apiVersion || "").indexOf("/");
  return at < 0 ? { group: "", version: apiVersion || "" } : { group: apiVersion.slice(0, at), version: apiVersion.slice(at + 1) };
}

export function resourceOf(object) {
  const { group, version } = groupVersion(object.apiVersion);
  const kind = object.kind || "";
  return { group, version, resource: kPlurals[kind] || kind.toLowerCase() + "s" };
}

export function namespaceObject(name, labels = {}) {
  return {
    apiVersion: "v1", kind: "Namespace",
    metadata: { name, labels: { "kubernetes.io/metadata.name": name, ...labels } },
  };
}

// The AdmissionRequest (as the API server converts it for CEL: empty fields left out) and the
// other attributes for `object`.
export function attributes(object, { namespace, operation = "CREATE", oldObject = null, subResource = "",
                                     username = "tenant-user@example.com", namespaceLabels = {} } = {}) {
  const ns = namespace || object?.metadata?.namespace || "default";
  const { group, version, resource: plural } = resourceOf(object || oldObject);
  const gvk = { group, version, kind: (object || oldObject).kind };
  const gvr = { group, version, resource: plural };
  const request = {
    uid: "00000000-0000-4000-8000-000000000000", kind: gvk, resource: gvr, requestKind: gvk, requestResource: gvr,
    name: (object || oldObject)?.metadata?.name || "", namespace: ns, operation,
    userInfo: { username, groups: ["system:authenticated"] },
  };
  if (subResource) { request.subResource = subResource; request.requestSubResource = subResource; }
  return {
    resource: gvr, subResource, operation, request, object, oldObject,
    namespaceObject: namespaceObject(ns, namespaceLabels),
  };
}

// The failures of the test, with context; printed at the end.
export class Log {
  constructor() { this.failures = []; this.notes = []; }
  fail(msg) { this.failures.push(msg); }
  note(msg) { this.notes.push(msg); }
  expect(cond, msg) { if (!cond) this.fail(msg); return cond; }
}

export function yamlFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => path.join(dir, f));
}

// The source file of a check result ("file.yaml:12" -> "file.yaml").
export function sourceFile(result) {
  return (result.source || "").replace(/:\d+$/, "");
}
