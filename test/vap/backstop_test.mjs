// The backstop (`gpu-admission policy export --format vap`) evaluated by a real CEL engine, with
// ValidatingAdmissionPolicy semantics (vap.mjs), against what the webhook decides (`gpu-admission
// check`, which mutates each pod as /mutate would and judges the result as /validate does):
//   - every exported expression parses, and evaluates without an error on every input;
//   - the backstop never denies what the webhook admits: every rule fixture and every example
//     manifest (as /mutate leaves it, and as written: the API server's view when both webhooks are
//     down), UPDATE cases (kubectl debug, annotations, labels) and a policy with tenants in
//     other modes, exceptions and exemptions (cases.mjs), and host and mount paths spelled at random
//     (paths.mjs);
//   - it denies, by the rule's own policy, every fail fixture of the rules it exports, apart from
//     the differences listed in kGaps (each with why), which must stay differences.
//
//   node test/vap/backstop_test.mjs --binary build/gpu-admission --modules DIR [--source DIR]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { admit, Engine, expressionsOf, loadCel, loadRe2, loadYaml } from "./vap.mjs";
import { attributes, check, exportPolicy, Log, run, sourceFile, yamlFiles } from "./harness.mjs";
import { runUpdateCases, runPolicyCases } from "./cases.mjs";
import { runPathDifferential } from "./paths.mjs";

let YAML = null;
const kCoreKinds = ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob"];  // the yaml package, installed beside the CEL engine

const kRules = ["privileged", "host-namespaces", "gpu-device-access", "gpu-tolerations", "gpu-cap", "tenant-pool", "tenant-label"];
// The security rules: at least 90% of their fail fixtures whose offending part the object shows
// must be denied (those listed in kGaps below are the ones it does not: claims, PodGroups).
const kSecurityRules = ["privileged", "host-namespaces", "gpu-device-access"];

// Fail fixtures of the security rules that the backstop admits, and why: the webhook needs something
// the object alone does not show. Each must still be one (a fixture the backstop comes to deny must
// leave this list). The other rules' differences are listed in the output.
const kGaps = {
  "gpu-device-access/fail/pod-claim-template-toleration.yaml": "the device toleration is in a claim template (judged when it is created)",
  "gpu-device-access/fail/pod-shared-claim-v1beta1-toleration.yaml": "the device toleration is in a shared claim (judged when it is created)",
  "gpu-device-access/fail/runtime-class-dra-claim.yaml": "a GPU pod only through a DRA claim the request does not show",
  // IMEX requests for every channel of a compute domain: in a claim the pod refers to (a claim on
  // its own shows no pool; the webhook judges it with its pod).
  ...Object.fromEntries(["imex-v1-claim-allocation-mode-all", "imex-v1-daemon-config", "imex-v1-first-available-all",
    "imex-v1-template-compute-domain-all", "imex-v1beta1-flat-config-all", "imex-v1beta2-template-channel-range"]
    .map((f) => [`gpu-device-access/fail/${f}.yaml`, "the IMEX channels are asked for in a claim the request does not show"])),
  "gpu-device-access/fail/podgroup-v1alpha2-admin-access.yaml": "a PodGroup's claims are judged by the webhook (the backstop matches no PodGroups)",
  "gpu-device-access/fail/podgroup-v1beta1-pod-admin-access.yaml": "the adminAccess is in a claim of the pod's PodGroup (judged when it is created)",
};

// Why the other rules' fail fixtures may be left to the webhook (each missed one must match a reason).
const kDifferences = [
  [/^gpu-cap\/fail\/(a30-|mig-|rtx-pro-|quantity-fractional-mig)/, "MIG slices are not counted"],
  [/^gpu-cap\/fail\/claim-/, "a ResourceClaim's or template's GPUs are not counted (DRA claims are left to the webhook)"],
  [/^gpu-cap\/fail\/pod-(claim|template)-/, "a pod's DRA claims are not counted (DRA claims are left to the webhook)"],
  [/^gpu-cap\/fail\/review-update-/, "UPDATEs of workloads are not judged (their pods are, when they are created)"],
  [/^(gpu-tolerations|tenant-pool)\/fail\/annotation-gpu-/, "a GPU pod only through a scheduler's GPU-sharing annotation (gpuSharingAnnotations are not exported)"],
  [/^gpu-cap\/fail\/podgroup-/, "a PodGroup's claims, and those a pod gets from its group, are left to the webhook"],
  [/^gpu-cap\/fail\/(quantity-|dra-extres-fractional)/, "a GPU quantity that is not a whole number (the API server refuses it for extended resources)"],
  [/^gpu-cap\/fail\/sidecar-before-init/, "an init container is counted without the sidecars started before it"],
  [/^gpu-cap\/fail\/two-pools-/, "whole GPUs of a pod that names a mixed MIG pool count as the MIG slices they may become"],
  [/^tenant-pool\/fail\/.*(unpinned|no-default-pool|selector-contradicts)/, "a GPU pod not pinned to a pool (pool-selector pins it)"],
  [/^tenant-label\/fail\/review-create-without-labels/, "a pod that lacks its tenant's labels (tenant-labels adds them)"],
];

function reasonOf(key) {
  if (kGaps[key]) return kGaps[key];
  const d = kDifferences.find(([re]) => re.test(key));
  return d ? d[1] : null;
}

function parseArgs(argv) {
  const out = { source: path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..") };
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  if (!out.binary || !out.modules) throw new Error("usage: backstop_test.mjs --binary B --modules DIR [--source DIR]");
  out.binary = path.resolve(out.binary);
  return out;
}

// The regular expressions of `expression`'s .matches() calls on raw or plain string literals. The
// API server compiles constant patterns with the policy (RE2): an invalid one rejects the whole
// ValidatingAdmissionPolicy, so each must compile here too, whether or not a case reaches it.
function regexLiterals(expression) {
  const out = [];
  for (const m of expression.matchAll(/\.matches\(\s*(r?)'((?:[^'\\]|\\.)*)'\s*\)/g))
    out.push(m[1] === "r" ? m[2] : m[2].replace(/\\(.)/g, "$1"));
  return out;
}

// Every expression parses, its regular expressions compile, and it was evaluated to a value in
// some admission of the test.
function checkExpressions(ctx, objects, label) {
  for (const { at, expression } of expressionsOf(objects)) {
    try { ctx.engine.compile(expression); } catch (e) { ctx.log.fail(`${label}: ${at} does not parse: ${e.message}`); continue; }
    for (const pattern of regexLiterals(expression)) {
      try { ctx.re2.compile(pattern); } catch (e) { ctx.log.fail(`${label}: ${at}: the pattern /${pattern}/ does not compile: ${e.message}`); }
    }
    if (!ctx.evaluatedOk.has(expression)) ctx.log.fail(`${label}: ${at} was never evaluated to a value by the cases`);
  }
}

// The YAML export reads back as the JSON one (the YAML writer's literal blocks keep every expression).
function checkYamlExport(ctx, policyFile, objects, label) {
  const args = ["policy", "export", "--format", "vap"];
  if (policyFile) args.push("--policy", policyFile);
  const r = run(ctx.binary, args, { cwd: ctx.source });
  if (!ctx.log.expect(r.status === 0, `${label}: policy export (YAML) exited ${r.status}`)) return;
  const docs = YAML.parseAllDocuments(r.stdout).map((d) => d.toJSON()).filter((d) => d !== null);
  ctx.log.expect(JSON.stringify(docs) === JSON.stringify(objects), `${label}: the YAML export differs from the JSON one`);
  for (const n of ["mps-adversarial", "mig-profile", "gpu-sharing"])
    ctx.log.expect(r.stderr.includes(`- ${n}: not exported`), `${label}: stderr does not list ${n} as not exported`);
}

// Records the evaluation errors of an admission and the expressions it evaluated.
function judge(ctx, objects, attrs, what) {
  const r = admit(ctx.engine, objects, attrs);
  for (const p of r.byPolicy)
    for (const f of p.failures) if (f.error) ctx.log.fail(`${what}: ${p.name}: evaluation error: ${f.error}`);
  for (const e of r.evaluated) if (e.error === undefined) ctx.evaluatedOk.add(e.expression);
  return r;
}

// The AdmissionReview a file holds, if it holds one: check judges it as /validate would (its
// operation, user and oldObject), and so must the backstop.
function reviewOf(file, cache) {
  if (!cache.has(file)) {
    let review = null;
    try {
      const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => d.toJSON());
      review = docs.find((d) => d && d.kind === "AdmissionReview")?.request || null;
    } catch { review = null; }
    cache.set(file, review);
  }
  return cache.get(file);
}

function attributesOf(res, review) {
  if (!review) return attributes(res.object, { namespace: res.namespace });
  return attributes(res.object, {
    namespace: review.namespace || res.namespace, operation: review.operation || "CREATE",
    oldObject: review.oldObject || null, subResource: review.subResource || "",
    username: review.userInfo?.username,
  });
}

// Soundness over a check report (an object the webhook admits is one whose every result, one per
// pod template, is allowed), and the rule coverage of fixtures (when `fixtures` is set).
function judgeReport(ctx, report, objects, label, { fixtures = false } = {}) {
  const { log, coverage } = ctx;
  const byObject = new Map();  // source "file:line" -> results
  for (const res of report.results) {
    if (!byObject.has(res.source)) byObject.set(res.source, []);
    byObject.get(res.source).push(res);
  }
  const lastOfFile = new Map();
  for (const source of byObject.keys()) lastOfFile.set(sourceFile(byObject.get(source)[0]), source);
  for (const [source, results] of byObject) {
    const res = results[0], file = sourceFile(res);
    const attrs = attributesOf(res, reviewOf(file, ctx.reviews));
    const b = judge(ctx, objects, attrs, `${label} ${source}`);
    ctx.evaluations++;
    // The same verdict from the validations alone, with a request that says only the namespace and
    // operation (and a core kind without its apiVersion): what a bare evaluator gives.
    const bareObject = { ...attrs.object };
    if (kCoreKinds.includes(bareObject.kind)) delete bareObject.apiVersion;
    const bare = judge(ctx, objects, { ...attrs, bare: true, object: bareObject, namespaceObject: null,
                                       request: { namespace: attrs.request.namespace, operation: attrs.operation } },
                       `${label} ${source} (bare)`);
    if (bare.denied !== b.denied)
      log.fail(`${label}: ${source}: denied=${b.denied} as the API server evaluates it, ${bare.denied} from the validations alone`);
    const allowed = results.every((r) => r.allowed);
    if (allowed && b.denied) {
      const by = b.byPolicy.filter((p) => p.actions.includes("Deny") && p.failures.length).map((p) => p.name);
      log.fail(`${label}: ${source} (${res.kind} ${res.name}): the webhook admits it, the backstop denies it (${by.join(", ")})`);
    }
    if (!fixtures || lastOfFile.get(file) !== source) continue;
    const rel = path.relative(path.join(ctx.source, "test", "fixtures"), file);
    const [rule, verdict] = rel.split(path.sep);
    if (verdict !== "fail" || !kRules.includes(rule)) continue;
    const own = b.byPolicy.some((p) => p.name.startsWith(`gpu-admission-${rule}`) && p.actions.includes("Deny") && p.failures.length);
    const key = rel.split(path.sep).join("/");
    const c = (coverage[rule] ||= { denied: 0, total: 0, missed: [] });
    c.total++;
    if (own) c.denied++;
    else c.missed.push(key);
    if (!kSecurityRules.includes(rule)) {
      if (!own && !reasonOf(key)) log.fail(`${label}: ${key}: the webhook denies it by ${rule}, the backstop does not, for no known reason`);
      continue;
    }
    if (!own && !kGaps[key]) log.fail(`${label}: ${key}: the webhook denies it by ${rule}, the backstop does not`);
    if (own && kGaps[key]) log.fail(`${label}: ${key} is listed in kGaps but the backstop now denies it: remove it`);
  }
}

// The objects of files the webhook admits whole, as they were written (before the mutating webhook,
// as the API server holds them while it is down): the backstop must not deny them either.
function judgeUnmutated(ctx, report, objects, label) {
  const allowed = new Map();
  for (const res of report.results) allowed.set(sourceFile(res), (allowed.get(sourceFile(res)) ?? true) && res.allowed);
  for (const [file, ok] of allowed) {
    if (!ok || reviewOf(file, ctx.reviews)) continue;
    const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => d.toJSON()).filter((d) => d && d.kind);
    for (const d of docs) {
      const ns = d.metadata?.namespace || "default";
      const b = judge(ctx, objects, attributes(d, { namespace: ns }), `${label} ${file} (unmutated)`);
      ctx.evaluations++;
      if (b.denied) {
        const by = b.byPolicy.filter((p) => p.actions.includes("Deny") && p.failures.length).map((p) => p.name);
        ctx.log.fail(`${label}: ${file} (${d.kind} ${d.metadata?.name}) as written: the webhook admits it, the backstop denies it (${by.join(", ")})`);
      }
    }
  }
}

function fixtureFiles(source) {
  const root = path.join(source, "test", "fixtures");
  const out = [];
  for (const rule of fs.readdirSync(root).sort()) {
    for (const verdict of ["pass", "fail"]) out.push(...yamlFiles(path.join(root, rule, verdict)));
  }
  return out;
}

function exampleFiles(source) {
  const ex = path.join(source, "examples");
  return [
    ...yamlFiles(path.join(ex, "manifests")),
    ...yamlFiles(path.join(ex, "ml")).filter((f) => !f.endsWith("suite.yaml")),
    ...yamlFiles(path.join(ex, "dra")).filter((f) => !f.endsWith("suite.yaml")),
  ];
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const engine = new Engine(loadCel(args.modules));
  YAML = loadYaml(args.modules);
  const log = new Log();
  const ctx = { engine, re2: loadRe2(args.modules), log, source: args.source, coverage: {}, evaluations: 0,
                binary: args.binary, reviews: new Map(),
                evaluatedOk: new Set(), judge };
  const exports = [];

  // The rule fixtures with their policy.
  const fixturePolicy = path.join(args.source, "test", "fixtures", "policy.yaml");
  const fixtureExport = exportPolicy(args.binary, fixturePolicy, args.source);
  exports.push(["fixture policy", fixtureExport]);
  const fixtureReport = check(args.binary, fixturePolicy, fixtureFiles(args.source), args.source);
  judgeReport(ctx, fixtureReport, fixtureExport, "fixtures", { fixtures: true });
  judgeUnmutated(ctx, fixtureReport, fixtureExport, "fixtures");

  // The examples with the example policies, and the built-in default policy.
  for (const [label, policy] of [["examples/policy.yaml", "examples/policy.yaml"],
                                 ["examples/rollout/policy.yaml", "examples/rollout/policy.yaml"],
                                 ["default policy", ""]]) {
    const objects = exportPolicy(args.binary, policy && path.join(args.source, policy), args.source);
    exports.push([label, objects]);
    const examples = check(args.binary, policy && path.join(args.source, policy), exampleFiles(args.source), args.source);
    judgeReport(ctx, examples, objects, label);
    judgeUnmutated(ctx, examples, objects, label);
    judgeReport(ctx, check(args.binary, policy && path.join(args.source, policy), fixtureFiles(args.source), args.source),
                objects, `${label} on the fixtures`);
  }

  runUpdateCases(ctx, fixtureExport, fixturePolicy);
  const casesExport = runPolicyCases(ctx);
  exports.push(["test/vap/policy.yaml", casesExport]);
  runPathDifferential(ctx, fixtureExport, fixturePolicy);

  // Every expression of every export parses, and was evaluated (in some admission above).
  for (const [label, objects] of exports) checkExpressions(ctx, objects, label);
  checkYamlExport(ctx, fixturePolicy, fixtureExport, "fixture policy");
  checkYamlExport(ctx, "", exports.find(([l]) => l === "default policy")[1], "default policy");

  console.log(`backstop: ${ctx.evaluations} admissions evaluated with @bufbuild/cel`);
  for (const rule of kRules) {
    const c = ctx.coverage[rule];
    if (!c) continue;
    const pct = Math.round((100 * c.denied) / c.total);
    console.log(`  ${rule}: the backstop denies ${c.denied}/${c.total} fail fixtures (${pct}%)`);
    for (const m of c.missed) console.log(`    left to the webhook: ${m} (${reasonOf(m)})`);
    if (kSecurityRules.includes(rule)) {
      const visible = c.total - c.missed.filter((m) => kGaps[m]).length;
      log.expect(c.denied * 10 >= visible * 9, `${rule}: under 90% of the fail fixtures the object shows denied (${c.denied}/${visible})`);
    }
  }
  for (const n of log.notes) console.log(`  ${n}`);
  if (log.failures.length) {
    console.log(`FAIL: ${log.failures.length} problem(s):`);
    for (const f of log.failures.slice(0, 200)) console.log(`  - ${f}`);
    process.exit(1);
  }
  console.log("PASS");
}

main();
