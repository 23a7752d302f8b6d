// Cases beyond the fixtures, each an AdmissionReview judged by the webhook (`gpu-admission check`
// judges a review exactly as /validate would) and by the backstop with the same request:
//   - UPDATEs with the fixture policy: kubectl debug adding an ephemeral container (privileged,
//     with a device env var, clean), annotations and tenant labels changed on a running pod;
//   - test/vap/policy.yaml, whose tenants act in other modes (warn, audit), turn rules off, are
//     chosen by namespace labels, and whose exceptions and exemptions select by namespace glob,
//     tenant, username and pod labels.
// Each case names what the backstop must do (deny, warn, audit, or admit), and the backstop must
// never deny what the webhook admits.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { attributes, check, exportPolicy } from "./harness.mjs";

function pod(name, ns, spec, meta = {}) {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: ns, ...meta }, spec };
}

const alphaLabels = { "gpu-admission.io/tenant": "alpha", "cost-center": "cc-1042" };
const app = { name: "app", image: "registry.example.com/app:1.0" };

function debugged(base, container) {
  return { ...base, spec: { ...base.spec, ephemeralContainers: [...(base.spec.ephemeralContainers || []), container] } };
}

// UPDATE cases with the fixture policy: [name, old, new, subresource, expect].
function updateCases() {
  const running = pod("web", "team-alpha", { containers: [app] }, { labels: alphaLabels });
  const legacy = pod("legacy", "team-alpha", { containers: [{ ...app, securityContext: { privileged: true } }] }, { labels: alphaLabels });
  const dbg = { name: "debugger", image: "busybox:1.36", targetContainerName: "app" };
  return [
    ["kubectl debug --profile=sysadmin (privileged)", running, debugged(running, { ...dbg, securityContext: { privileged: true } }),
     "ephemeralcontainers", "deny"],
    ["kubectl debug with NVIDIA_VISIBLE_DEVICES=all", running, debugged(running, { ...dbg, env: [{ name: "NVIDIA_VISIBLE_DEVICES", value: "all" }] }),
     "ephemeralcontainers", "deny"],
    ["kubectl debug mounting a device list", running,
     debugged(running, { ...dbg, volumeMounts: [{ name: "x", mountPath: "/var/run/nvidia-container-devices/all" }] }),
     "ephemeralcontainers", "deny"],
    ["kubectl debug, a clean container", running, debugged(running, dbg), "ephemeralcontainers", "admit"],
    ["kubectl debug, a clean container in a pod privileged before", legacy, debugged(legacy, dbg), "ephemeralcontainers", "admit"],
    ["an update adds a CDI annotation", running,
     { ...running, metadata: { ...running.metadata, annotations: { "cdi.k8s.io/gpu": "nvidia.com/gpu=all" } } }, "", "deny"],
    ["an update changes another annotation", running,
     { ...running, metadata: { ...running.metadata, annotations: { "example.com/owner": "ml" } } }, "", "admit"],
    ["an update claims another tenant", running,
     { ...running, metadata: { ...running.metadata, labels: { ...alphaLabels, "gpu-admission.io/tenant": "beta" } } }, "", "deny"],
    ["an update removes cost-center", running,
     { ...running, metadata: { ...running.metadata, labels: { "gpu-admission.io/tenant": "alpha" } } }, "", "deny"],
    ["an update adds an unrelated label", running,
     { ...running, metadata: { ...running.metadata, labels: { ...alphaLabels, app: "web" } } }, "", "admit"],
  ];
}

function review(name, ns, object, oldObject, { operation = "UPDATE", subResource = "", username = "bob@example.com" } = {}) {
  const gvk = { group: "", version: "v1", kind: "Pod" };
  const request = {
    uid: "0f0f0f0f-0000-4000-8000-000000000000", kind: gvk, resource: { group: "", version: "v1", resource: "pods" },
    name, namespace: ns, operation, userInfo: { username }, object,
  };
  if (oldObject) request.oldObject = oldObject;
  if (subResource) request.subResource = subResource;
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request };
}

// Writes the reviews, asks the webhook, evaluates the backstop; checks the expectations.
function runReviews(ctx, objects, policyFile, cases, label, extraFiles = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-admission-vap-"));
  const files = cases.map((c, i) => {
    const f = path.join(dir, `case-${String(i).padStart(3, "0")}.json`);
    fs.writeFileSync(f, JSON.stringify(c.review));
    return f;
  });
  const report = check(ctx.binary, policyFile, [...extraFiles, ...files], dir);
  const bySource = new Map(report.results.map((r) => [r.source.replace(/:\d+$/, ""), r]));
  cases.forEach((c, i) => {
    const res = bySource.get(files[i]);
    if (!ctx.log.expect(res, `${label}: ${c.name}: check gave no result`)) return;
    const rq = c.review.request;
    const attrs = attributes(rq.object, {
      namespace: rq.namespace, operation: rq.operation, oldObject: rq.oldObject || null, subResource: rq.subResource || "",
      username: rq.userInfo.username, namespaceLabels: c.namespaceLabels || {},
    });
    const b = ctx.judge(ctx, objects, attrs, `${label}: ${c.name}`);
    ctx.evaluations++;
    const got = b.denied ? "deny" : b.warnings.length ? "warn" : b.audits.length ? "audit" : "admit";
    ctx.log.expect(got === c.expect, `${label}: ${c.name}: the backstop should ${c.expect}, it does: ${got}`);
    if (res.allowed && b.denied) ctx.log.fail(`${label}: ${c.name}: the webhook admits it, the backstop denies it`);
    if (c.webhook) ctx.log.expect((res.allowed ? "admit" : "deny") === c.webhook,
                                  `${label}: ${c.name}: the webhook should ${c.webhook} (check says allowed=${res.allowed})`);
  });
  fs.rmSync(dir, { recursive: true, force: true });
}

export function runUpdateCases(ctx, objects, policyFile) {
  const cases = updateCases().map(([name, old, now, sub, expect]) => ({
    name, expect, webhook: expect === "deny" ? "deny" : "admit",
    review: review(now.metadata.name, now.metadata.namespace, now, old, { subResource: sub }),
  }));
  runReviews(ctx, objects, policyFile, cases, "UPDATE cases");
}

// test/vap/policy.yaml: tenants in other modes, rules off, exceptions and exemptions.
export function runPolicyCases(ctx) {
  const policyFile = path.join(ctx.source, "test", "vap", "policy.yaml");
  const objects = exportPolicy(ctx.binary, policyFile, ctx.source);
  const priv = { containers: [{ ...app, securityContext: { privileged: true } }] };
  const hostNet = { hostNetwork: true, containers: [app] };
  const gpu = (extra = {}) => ({
    containers: [{ ...app, resources: { limits: { "nvidia.com/gpu": 1 } } }],
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists" }], nodeSelector: { "example.com/pool": "main" }, ...extra,
  });
  const c = (name, ns, spec, expect, { labels = {}, username, namespaceLabels, webhook } = {}) => ({
    name, expect, webhook, namespaceLabels,
    review: review(name, ns, pod(name, ns, spec, { labels }), null, { operation: "CREATE", username }),
  });
  const cases = [
    c("enforcing tenant, privileged", "prod", priv, "deny", { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "deny" }),
    c("warn tenant, privileged", "trial", priv, "warn", { labels: { "gpu-admission.io/tenant": "trial" }, webhook: "admit" }),
    c("audit tenant, privileged", "shadow-1", priv, "audit", { labels: { "gpu-admission.io/tenant": "shadow" }, webhook: "admit" }),
    c("tenant with privileged off", "lab", priv, "admit", { labels: { "gpu-admission.io/tenant": "lab" }, webhook: "admit" }),
    c("tenant with host-namespaces on warn", "lab", hostNet, "warn", { labels: { "gpu-admission.io/tenant": "lab" }, webhook: "admit" }),
    c("tenant chosen by namespace labels", "team-x", priv, "warn",
      { labels: { "gpu-admission.io/tenant": "labelled" }, namespaceLabels: { "example.com/tenant": "labelled" }, webhook: "admit" }),
    c("exempt namespace glob", "infra-logging", priv, "admit", { webhook: "admit" }),
    c("exempt namespace", "kube-system", priv, "admit", { webhook: "admit" }),
    c("exempt username glob", "prod", priv, "admit",
      { labels: { "gpu-admission.io/tenant": "prod" }, username: "system:serviceaccount:ops:break-glass-1", webhook: "admit" }),
    c("exception by namespace glob", "prod-monitoring", hostNet, "admit", { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "admit" }),
    c("exception by namespace glob, another rule", "prod-monitoring", priv, "deny", { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "deny" }),
    c("exception by pod labels", "prod", hostNet, "admit",
      { labels: { "gpu-admission.io/tenant": "prod", "example.com/role": "node-exporter" }, webhook: "admit" }),
    c("exception by pod labels, label missing", "prod", hostNet, "deny", { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "deny" }),
    c("exception by username", "prod", priv, "admit",
      { labels: { "gpu-admission.io/tenant": "prod" }, username: "alice@example.com", webhook: "admit" }),
    c("exception that expired", "prod", { ...gpu(), hostPID: true }, "deny", { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "deny" }),
    c("GPU pod in a namespace of no tenant", "scratch", gpu(), "deny", { webhook: "deny" }),
    c("GPU pod over its tenant's cap", "prod", gpu({ containers: [{ ...app, resources: { limits: { "nvidia.com/gpu": 3 } } }] }), "deny",
      { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "deny" }),
    c("GPU pod within its tenant's cap", "prod", gpu({ containers: [{ ...app, resources: { limits: { "nvidia.com/gpu": 2 } } }] }), "admit",
      { labels: { "gpu-admission.io/tenant": "prod" }, webhook: "admit" }),
  ];
  // The namespace of the label-selected tenant, as check learns its labels.
  const nsDir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-admission-vap-ns-"));
  const nsFile = path.join(nsDir, "namespace.yaml");
  fs.writeFileSync(nsFile, JSON.stringify({ apiVersion: "v1", kind: "Namespace",
                                            metadata: { name: "team-x", labels: { "example.com/tenant": "labelled" } } }));
  runReviews(ctx, objects, policyFile, cases, "test/vap/policy.yaml", [nsFile]);
  fs.rmSync(nsDir, { recursive: true, force: true });
  return objects;
}
