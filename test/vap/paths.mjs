// Host paths and mount paths spelled at random, judged by the webhook (one pod holds many of them,
// each finding names its volume or mount) and by the backstop's gpu-device-access policy (one pod
// per path): the backstop must never deny a path the webhook admits, must deny every path without
// ".." that the webhook denies, and reports how many of those with ".." it follows.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { attributes, check } from "./harness.mjs";

const kSegments = ["", ".", "..", "dev", "nvidia0", "nvidia-uvm", "nvidiactl", "dri", "var", "run", "lib", "kubelet",
  "plugins", "device-plugins", "plugins_registry", "pod-resources", "etc", "cdi", "usr", "local", "nvidia", "proc", "1",
  "root", "sys", "x", "run2", "...", "..x", ".x", "nvidia-container-devices", "nvidia-container-devicesall", "all",
  "tmp", "data", "char", "vfio", "containerd", "docker.sock", "nvidia-container-runtime", "runx", "ru", "r"];

// A deterministic generator (mulberry32), so a failure can be reproduced.
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomPaths(count, seed) {
  const next = rng(seed);
  const pick = (list) => list[Math.floor(next() * list.length)];
  // Mostly paths that start like the protected ones, so that denials are frequent.
  const starts = ["/dev", "/var/run", "/run", "/var/lib/kubelet", "/etc", "/usr/local", "/proc", "/sys", "/", "", "/var", "/tmp",
    "/var/run/nvidia-container-devices", "/run/nvidia-container-devices", "/var/lib/../run"];
  const out = new Set();
  while (out.size < count) {
    let p = pick(starts);
    const n = 1 + Math.floor(next() * 5);
    for (let i = 0; i < n; i++) p += (p.endsWith("/") && next() < 0.5 ? "" : "/") + pick(kSegments);
    if (next() < 0.2) p += "/";
    if (next() < 0.1) p = p.replace(/^\//, "");
    out.add(p || "/");
  }
  return [...out];
}

const labels = { "gpu-admission.io/tenant": "alpha", "cost-center": "cc-1042" };

function carrierPods(paths) {
  const pods = [];
  for (let i = 0; i < paths.length; i += 100) {
    const chunk = paths.slice(i, i + 100);
    pods.push({
      apiVersion: "v1", kind: "Pod",
      metadata: { name: `paths-${i / 100}`, namespace: "team-alpha", labels },
      spec: {
        containers: [{ name: "app", image: "registry.example.com/app:1.0",
                       volumeMounts: chunk.map((p, j) => ({ name: "scratch", mountPath: p || `/empty-${j}` })) }],
        volumes: [{ name: "scratch", emptyDir: {} }, ...chunk.map((p, j) => ({ name: `h${j}`, hostPath: { path: p } }))],
      },
    });
  }
  return pods;
}

// Per path: does the webhook deny it as a hostPath, as a mountPath?
function webhookVerdicts(ctx, policyFile, paths) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-admission-vap-paths-"));
  const file = path.join(dir, "pods.json");
  fs.writeFileSync(file, JSON.stringify({ apiVersion: "v1", kind: "List", items: carrierPods(paths) }));
  const report = check(ctx.binary, policyFile, [file], dir);
  fs.rmSync(dir, { recursive: true, force: true });
  const host = new Array(paths.length).fill(false), mount = new Array(paths.length).fill(false);
  for (const r of report.results) {
    const base = 100 * Number(r.name.replace("paths-", ""));
    for (const v of r.violations) {
      if (v.rule !== "gpu-device-access") continue;
      let m = v.field.match(/^spec\.volumes\[(\d+)\]\.hostPath\.path$/);
      if (m) host[base + Number(m[1]) - 1] = true;  // volumes[0] is the emptyDir
      m = v.field.match(/^spec\.containers\[0\]\.volumeMounts\[(\d+)\]\.mountPath$/);
      if (m) mount[base + Number(m[1])] = true;
    }
  }
  return { host, mount };
}

function backstopDenies(ctx, policy, spec) {
  const object = { apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "team-alpha", labels }, spec };
  return ctx.judge(ctx, [policy, ...ctx.bindings], attributes(object), "paths").denied;
}

export function runPathDifferential(ctx, objects, policyFile) {
  const policy = objects.find((o) => o.kind === "ValidatingAdmissionPolicy" && o.metadata.name === "gpu-admission-gpu-device-access");
  if (!ctx.log.expect(policy, "paths: no gpu-admission-gpu-device-access policy in the export")) return;
  ctx.bindings = objects.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding");
  const paths = randomPaths(1500, 20260101);
  const webhook = webhookVerdicts(ctx, policyFile, paths);
  const tally = { host: [0, 0, 0, 0], mount: [0, 0, 0, 0] };  // simple denied, simple followed, "..": denied, followed
  paths.forEach((p, i) => {
    const dotdot = p.split("/").includes("..") ? 2 : 0;
    const app = { name: "app", image: "registry.example.com/app:1.0" };
    const asHost = backstopDenies(ctx, policy, { containers: [app], volumes: [{ name: "h", hostPath: { path: p } }] });
    const asMount = p === "" ? false : backstopDenies(ctx, policy, {
      containers: [{ ...app, volumeMounts: [{ name: "s", mountPath: p }] }], volumes: [{ name: "s", emptyDir: {} }] });
    ctx.evaluations += 2;
    for (const [what, denied, web] of [["host", asHost, webhook.host[i]], ["mount", asMount, webhook.mount[i]]]) {
      if (denied && !web) ctx.log.fail(`paths: the backstop denies ${what} path ${JSON.stringify(p)}, the webhook admits it`);
      if (!web) continue;
      tally[what][dotdot]++;
      if (denied) tally[what][dotdot + 1]++;
      else if (!dotdot) ctx.log.fail(`paths: the webhook denies ${what} path ${JSON.stringify(p)} (no ".."), the backstop does not`);
    }
  });
  for (const what of ["host", "mount"]) {
    const t = tally[what];
    ctx.log.note(`random ${what} paths the webhook denies: the backstop follows ${t[1]}/${t[0]} without "..", ` +
                 `${t[3]}/${t[2]} with ".."`);
  }
}
