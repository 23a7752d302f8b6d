// Evaluates CEL expressions with a real engine (@bufbuild/cel) for tests in other languages (the
// chart's matchConditions, test/chart/cel_test.go): a JSON array of {expression, env} on stdin, a
// JSON array of {value} or {error} on stdout, in order. `env` binds variables to JSON values,
// converted as the API server converts objects (vap.mjs: toCel).
//
//   node test/vap/cel_eval.mjs --modules DIR < jobs.json
import fs from "node:fs";

import { Engine, fromCel, loadCel, toCel } from "./vap.mjs";

const at = process.argv.indexOf("--modules");
if (at < 0 || !process.argv[at + 1]) {
  console.error("usage: cel_eval.mjs --modules DIR < jobs.json");
  process.exit(2);
}
const cel = loadCel(process.argv[at + 1]);
const engine = new Engine(cel);
const jobs = JSON.parse(fs.readFileSync(0, "utf8"));
const out = jobs.map(({ expression, env }) => {
  const bindings = {};
  for (const [k, v] of Object.entries(env || {})) bindings[k] = toCel(v);
  const r = engine.eval(expression, bindings);
  return r.error !== undefined ? { error: r.error } : { value: fromCel(cel, r.value) };
});
process.stdout.write(JSON.stringify(out));
