// ValidatingAdmissionPolicy semantics (admissionregistration.k8s.io/v1) around a real CEL engine,
// @bufbuild/cel (install.sh puts it in a build-tree folder): what the API server does with a policy
// and its bindings for one admission request, for the tests of gpu-admission's exported backstop
// (backstop_test.mjs) and of the chart's CEL (cel_eval.mjs). Nothing here interprets CEL: every
// expression is parsed, planned and evaluated by the engine.
//
// Inputs are JSON values, converted to CEL as the API server converts objects: maps, lists,
// strings, booleans, int64 for whole numbers and double for the rest; null fields are dropped (the
// API server never hands a typed object's null field to CEL).
import { createRequire } from "node:module";
import path from "node:path";

export function loadCel(modulesDir) {
  const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
  return require("@bufbuild/cel");
}

// The RE2 implementation the engine's matches() uses (a dependency of @bufbuild/cel): patterns
// are checked with the same syntax the API server's RE2 accepts.
export function loadRe2(modulesDir) {
  const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
  return require("@bufbuild/re2").RE2JS;
}

// The yaml package installed beside the engine (for reading YAML the tests are given).
export function loadYaml(modulesDir) {
  const require = createRequire(path.join(path.resolve(modulesDir), "package.json"));
  return require("yaml");
}

// JSON -> CEL input.
export function toCel(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(toCel);
  if (typeof v === "object") {
    const m = new Map();
    for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) m.set(k, toCel(x));
    return m;
  }
  return v;
}

// CEL result -> JSON (for reports): lists and maps become arrays and objects, ints numbers.
export function fromCel(cel, v) {
  if (typeof v === "bigint") return Number(v);
  if (cel.isCelList && cel.isCelList(v)) return [...v].map((x) => fromCel(cel, x));
  if (cel.isCelMap && cel.isCelMap(v)) {
    const out = {};
    for (const [k, x] of v) out[String(k)] = fromCel(cel, x);
    return out;
  }
  return v;
}

export class Engine {
  constructor(cel) {
    this.cel = cel;
    this.env = cel.celEnv({});
    this.plans = new Map();
  }

  // Parses and plans `expr` once; throws on a syntax error.
  compile(expr) {
    let p = this.plans.get(expr);
    if (!p) {
      p = this.cel.plan(this.env, this.cel.parse(expr));
      this.plans.set(expr, p);
    }
    return p;
  }

  // { value } or { error } (a CelError, or an exception of the engine, as a message).
  eval(expr, bindings) {
    try {
      const r = this.compile(expr)(bindings);
      if (this.cel.isCelError(r)) return { error: r.message };
      return { value: r };
    } catch (e) {
      return { error: String(e && e.message ? e.message : e) };
    }
  }
}

// ---- matching (matchConstraints) ----

function listMatches(list, value) {
  return Array.isArray(list) && (list.includes("*") || list.includes(value));
}

// A resourceRule: groups, versions, operations, and resources ("pods", "pods/ephemeralcontainers",
// "*" for every resource without subresources, "*/*" for all).
function ruleMatches(rule, attrs) {
  if (!listMatches(rule.apiGroups, attrs.resource.group)) return false;
  if (!listMatches(rule.apiVersions, attrs.resource.version)) return false;
  if (!(rule.operations || []).some((o) => o === "*" || o === attrs.operation)) return false;
  const name = attrs.subResource ? `${attrs.resource.resource}/${attrs.subResource}` : attrs.resource.resource;
  return (rule.resources || []).some((r) => {
    if (r === name || r === "*/*") return true;
    if (r === "*") return !attrs.subResource;
    const [res, sub] = r.split("/");
    if (sub === "*") return res === attrs.resource.resource && !!attrs.subResource;
    if (res === "*") return sub === attrs.subResource;
    return false;
  });
}

// A label selector (matchLabels, matchExpressions) on a label map.
export function selectorMatches(sel, labels) {
  if (!sel) return true;
  labels = labels || {};
  for (const [k, v] of Object.entries(sel.matchLabels || {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions || []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    switch (e.operator) {
      case "In": if (!has || !e.values.includes(labels[e.key])) return false; break;
      case "NotIn": if (has && e.values.includes(labels[e.key])) return false; break;
      case "Exists": if (!has) return false; break;
      case "DoesNotExist": if (has) return false; break;
      default: throw new Error(`unsupported selector operator ${e.operator}`);
    }
  }
  return true;
}

function constraintsMatch(mc, attrs) {
  if (!mc) return false;
  for (const unsupported of ["objectSelector", "excludeResourceRules"])
    if (mc[unsupported]) throw new Error(`matchConstraints.${unsupported} is not modelled here`);
  if (!(mc.resourceRules || []).some((r) => ruleMatches(r, attrs))) return false;
  const nsLabels = attrs.namespaceObject?.metadata?.labels;
  return selectorMatches(mc.namespaceSelector, nsLabels);
}

// ---- one policy ----

// The outcome of `policy` for a request: not matched, or the failed validations (each with its
// message, or the error that failed it).
export function evaluatePolicy(engine, policy, attrs) {
  const spec = policy.spec || {};
  const out = { name: policy.metadata.name, matched: false, failures: [], evaluated: [] };
  // attrs.bare: as an evaluator that knows nothing of matching would (validations and variables only).
  if (!attrs.bare && !constraintsMatch(spec.matchConstraints, attrs)) return out;
  const failOpen = spec.failurePolicy === "Ignore";
  const base = {
    object: toCel(attrs.object),
    oldObject: toCel(attrs.oldObject ?? null),
    request: toCel(attrs.request),
    namespaceObject: toCel(attrs.namespaceObject ?? null),
    params: null,
  };
  for (const c of attrs.bare ? [] : spec.matchConditions || []) {
    const r = engine.eval(c.expression, base);
    out.evaluated.push({ where: `matchConditions ${c.name}`, expression: c.expression, ...r });
    if (r.error !== undefined || typeof r.value !== "boolean") {
      if (failOpen) return out;
      out.matched = true;
      out.failures.push({ error: `matchCondition ${c.name}: ${r.error ?? "not a bool"}` });
      return out;
    }
    if (!r.value) return out;
  }
  out.matched = true;
  // Variables, in order (each may read the earlier ones); one that fails fails what reads it.
  const vars = new Map();
  const failedVars = new Map();
  for (const v of spec.variables || []) {
    const r = engine.eval(v.expression, { ...base, variables: vars });
    out.evaluated.push({ where: `variables ${v.name}`, expression: v.expression, ...r });
    if (r.error !== undefined) failedVars.set(v.name, r.error);
    else vars.set(v.name, r.value);
  }
  for (const [i, v] of (spec.validations || []).entries()) {
    const reads = [...v.expression.matchAll(/variables\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
    const broken = reads.find((n) => failedVars.has(n));
    const r = broken ? { error: `variable ${broken}: ${failedVars.get(broken)}` } : engine.eval(v.expression, { ...base, variables: vars });
    out.evaluated.push({ where: `validations[${i}]`, expression: v.expression, ...r });
    if (r.error !== undefined || typeof r.value !== "boolean") {
      if (!failOpen) out.failures.push({ index: i, error: r.error ?? "not a bool", message: v.message });
    } else if (!r.value) {
      out.failures.push({ index: i, message: v.message });
    }
  }
  return out;
}

// Every policy of `objects` with its bindings: what the API server would do with the request.
// Returns { denied, warnings, audits, byPolicy: [{name, actions, failures}] }.
export function admit(engine, objects, attrs) {
  const policies = objects.filter((o) => o.kind === "ValidatingAdmissionPolicy");
  const bindings = objects.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding");
  const result = { denied: false, warnings: [], audits: [], byPolicy: [], evaluated: [] };
  for (const p of policies) {
    const r = evaluatePolicy(engine, p, attrs);
    result.evaluated.push(...r.evaluated);
    if (!r.matched || r.failures.length === 0) {
      result.byPolicy.push({ name: p.metadata.name, matched: r.matched, actions: [], failures: [] });
      continue;
    }
    const actions = new Set();
    for (const b of bindings) {
      if (b.spec.policyName !== p.metadata.name) continue;
      if (b.spec.matchResources) throw new Error(`binding ${b.metadata.name}: matchResources is not modelled here`);
      for (const a of b.spec.validationActions || []) actions.add(a);
    }
    if (actions.has("Deny")) result.denied = true;
    if (actions.has("Warn")) result.warnings.push(...r.failures.map((f) => f.message || f.error));
    if (actions.has("Audit")) result.audits.push(...r.failures.map((f) => f.message || f.error));
    result.byPolicy.push({ name: p.metadata.name, matched: true, actions: [...actions], failures: r.failures });
  }
  return result;
}

// Every CEL expression of the objects, with where it is: matchConditions, variables,
// validations (expression and messageExpression), auditAnnotations.
export function expressionsOf(objects) {
  const out = [];
  for (const o of objects) {
    if (o.kind !== "ValidatingAdmissionPolicy") continue;
    const s = o.spec || {};
    const at = o.metadata.name;
    for (const c of s.matchConditions || []) out.push({ at: `${at} matchConditions ${c.name}`, expression: c.expression });
    for (const v of s.variables || []) out.push({ at: `${at} variables ${v.name}`, expression: v.expression });
    for (const [i, v] of (s.validations || []).entries()) {
      out.push({ at: `${at} validations[${i}]`, expression: v.expression });
      if (v.messageExpression) out.push({ at: `${at} validations[${i}].messageExpression`, expression: v.messageExpression });
    }
    for (const a of s.auditAnnotations || []) out.push({ at: `${at} auditAnnotations ${a.key}`, expression: a.valueExpression });
  }
  return out;
}
