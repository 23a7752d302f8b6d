#!/usr/bin/env python3
"""Differential test: the reference model (refmodel.py, written from SPEC.md and docs/design.md)
against `gpu-admission check -o json` on seeded random Pods and Deployments (random_pods.py).

For each policy in random_pods.POLICIES and each mode (`chain`: the API server's chain, mutate then
validate; `no-mutate`: `check --no-mutate`, the pod judged as it arrives), the objects are written
as `kind: List` JSON files of ~500 objects and judged by `check`. For every object:
- model vs check: `allowed`, the set of rule IDs with action deny and, in the chain, the mutated
  object's labels, nodeSelector, GPU resources and NVIDIA_VISIBLE_DEVICES env entries;
- chain vs validate (check against itself: "/validate judges a Pod exactly as it arrives";
  docs/design.md: check's chain and /validate after /mutate agree): check's own mutated object,
  judged again with `--no-mutate`, must get the chain's `allowed` and deny rule IDs;
- idempotence (mutations are idempotent): the chain run again on check's own mutated object returns no patch and
  the same decision, and the model's mutations run again on its own mutated pod change nothing.

Prints each mismatch (the object, the model's answer, check's answer with its messages) and ends
with a line `N passed, M failed` (N + M = objects x policies x 4 comparisons); exits 1 if any
failed. Known C++ deviations are listed in EXPECTED_DIFFERENCES with the reason: a mismatch is
expected only if the model with that deviation emulated agrees with check exactly.

  python3 test/refmodel/run.py --binary build/gpu-admission [-n 3000] [--seed S] [--show 15]
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_pods  # noqa: E402
import refmodel  # noqa: E402

BATCH = 500

# Known disagreements where the model follows SPEC.md / docs/design.md and `check` does not.
# Each id is a quirk that refmodel.evaluate can emulate (model_quirks.py): a
# mismatch counts as expected only when the model with that quirk (or with all of them) agrees with
# `check` exactly, so an entry cannot hide any other disagreement. `chain_vs_validate: True` marks
# a quirk that also makes check's chain disagree with check --no-mutate on its own mutated object.
# Remove an entry when the C++ is fixed (run.py says when an entry matched nothing).
EXPECTED_DIFFERENCES = []  # none: every disagreement found so far is fixed in the C++


def model_remutates(policy, namespace, model):
    """The model's own second pass: its mutations run again on the pod they produced must change
    nothing (mutations are idempotent). Returns what changed, "" when nothing did."""
    if model.exempt:
        return ""
    again = copy.deepcopy(model.mutated)
    refmodel.mutate(policy, again, policy.tenant_of(namespace))
    if again == model.mutated:
        return ""
    before, after = (mutation_view(policy, p["metadata"], p["spec"]) for p in (model.mutated, again))
    return "; ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in sorted(set(before) | set(after))
                     if before.get(k) != after.get(k)) or "(outside the compared fields)"


def rules_denied(check_result):
    return {v["rule"] for v in check_result.get("violations") or [] if v.get("action") == "deny"}


def template_pod(obj):
    if obj.get("kind") == "Pod":
        return obj.get("metadata") or {}, obj.get("spec") or {}
    t = refmodel.template_of(obj)
    return t.get("metadata") or {}, t.get("spec") or {}


def mutation_view(policy, meta, spec):
    """What the mutations decide, in a form that does not depend on quantity spelling or order."""
    view = {"labels": dict(meta.get("labels") or {}), "nodeSelector": dict(spec.get("nodeSelector") or {})}
    for kind, i, c in refmodel.resource_containers(spec):
        res = c.get("resources") or {}
        for section in ("requests", "limits"):
            for name, value in (res.get(section) or {}).items():
                if policy.gpu_kind(name) is not None:
                    q = refmodel.parse_quantity(value)
                    view[f"{kind}[{i}].{section}[{name}]"] = str(q) if q is not None else repr(value)
        nvd = [e.get("value", "<valueFrom>") for e in c.get("env") or []
               if e.get("name") == "NVIDIA_VISIBLE_DEVICES"]
        if nvd:
            view[f"{kind}[{i}].env[NVIDIA_VISIBLE_DEVICES]"] = nvd
    return view


def compare(policy, model, check, mode):
    """What differs between the model's answer and check's (empty: they agree)."""
    diff = set()
    if model.allowed != check.get("allowed"):
        diff.add(f"allowed:model={model.allowed},check={check.get('allowed')}")
    cd = rules_denied(check)
    for r in model.denied - cd:
        diff.add("denied+" + r)
    for r in cd - model.denied:
        diff.add("denied-" + r)
    if mode == "chain" and check.get("object") is not None:
        mm = mutation_view(policy, model.mutated["metadata"], model.mutated["spec"])
        cm = mutation_view(policy, *template_pod(check["object"]))
        for k in sorted(set(mm) | set(cm)):
            if mm.get(k) != cm.get(k):
                diff.add(f"mutated:{k}: model={mm.get(k)!r} check={cm.get(k)!r}")
    return diff


def run_check(binary, policy_file, batch_file, no_mutate):
    cmd = [binary, "check", "-p", policy_file, "-o", "json"]
    if no_mutate:
        cmd.append("--no-mutate")
    cmd.append(batch_file)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    out = json.loads(p.stdout)
    if out.get("errors"):
        raise RuntimeError(f"{batch_file}: check reported errors: {out['errors'][:3]}")
    return out["results"]


def run_all(binary, jobs):
    """jobs: (policy_file, batch_file, no_mutate); two at a time (CI has 2 cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda j: run_check(binary, *j), jobs))


def write_batches(workdir, prefix, objects):
    out = []
    for b in range(0, len(objects), BATCH):
        path = os.path.join(workdir, f"{prefix}-{b // BATCH:03d}.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objects[b:b + BATCH]}, f)
        out.append((b, path))
    return out


def line_up(path, batch, results):
    if len(results) != len(batch):
        raise RuntimeError(f"{path}: {len(results)} results for {len(batch)} objects")
    for obj, res in zip(batch, results):
        meta = obj["metadata"]
        if (res.get("name"), res.get("namespace")) != (meta["name"], meta["namespace"]):
            raise RuntimeError(f"{path}: result {res.get('name')} does not line up with {meta['name']}")


def describe(title, obj, diff, model, check, check2=None):
    lines = [f"--- MISMATCH [{title}] {obj['kind']} {obj['metadata']['namespace']}/{obj['metadata']['name']}",
             "  differs: " + "; ".join(sorted(diff))]
    if model is not None:
        lines.append(f"  model: allowed={model.allowed} denied={sorted(model.denied)} "
                     f"tenant={model.tenant} pool={model.pool}")
        lines += [f"    model [{rule}] {reason}" for rule, reason in model.findings]
    for name, c in (("check", check), ("check --no-mutate on check's mutated object", check2)):
        if c is None:
            continue
        lines.append(f"  {name}: allowed={c.get('allowed')} denied={sorted(rules_denied(c))} "
                     f"tenant={c.get('tenant')} pool={c.get('pool')}")
        lines += [f"    [{v['rule']}/{v['action']}] {v['message']} ({v.get('field')})"
                  for v in c.get("violations") or []]
    lines.append("  object: " + json.dumps(obj, separators=(",", ":")))
    return "\n".join(lines)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/gpu-admission")
    ap.add_argument("-n", type=int, default=3000, help="objects per policy (default 3000)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--show", type=int, default=15, help="mismatches printed in full (default 15)")
    ap.add_argument("--grep", help="print in full only mismatches whose title or differences contain this")
    ap.add_argument("--policies", default=",".join(random_pods.POLICIES))
    ap.add_argument("--keep", help="write the inputs to this folder and keep them")
    ap.add_argument("--stats", action="store_true", help="print how often the model finds each rule")
    return ap.parse_args()


def write_policies(workdir, names):
    """Each named policy as a file for check, and as the model reads it: name -> (Policy, path)."""
    policies = {}
    for pname in names:
        ppath = os.path.join(workdir, f"policy-{pname}.json")
        with open(ppath, "w") as f:
            json.dump(random_pods.POLICIES[pname], f, indent=1)
        policies[pname] = (refmodel.Policy(random_pods.POLICIES[pname]), ppath)
    return policies


def run_rounds(binary, workdir, objects, batches, policies):
    """check on every object: round 1 as the objects are (both modes, every policy), rounds 2 and
    3 on check's own mutated objects. Returns the results of each, in object order, and how many
    check runs it took."""
    # Round 1: every object, every policy, both modes.
    jobs = [(pname, mode, b, path) for pname in policies for mode in ("chain", "no-mutate")
            for b, path in batches]
    outputs = run_all(binary, [(policies[p][1], path, mode == "no-mutate") for p, mode, _, path in jobs])
    check_results = {}     # (policy, mode) -> list of results, in object order
    for (pname, mode, b, path), results in zip(jobs, outputs):
        line_up(path, objects[b:b + BATCH], results)
        check_results.setdefault((pname, mode), []).extend(results)

    # Round 2: check's own mutated objects, judged as they are (what /validate sees after /mutate).
    jobs2 = []
    for pname in policies:
        mutated = [r["object"] for r in check_results[(pname, "chain")]]
        for b, path in write_batches(workdir, f"mutated-{pname}", mutated):
            jobs2.append((pname, b, path))
    # Round 3: the chain again on check's own mutated objects (mutations are idempotent,
    # a second call on the mutated pod returns no patch).
    outputs2 = run_all(binary, [(policies[p][1], path, no_mutate)
                                for no_mutate in (True, False) for p, _, path in jobs2])
    revalidated, remutated = {}, {}
    for k, ((pname, b, path), results) in enumerate(zip(jobs2 + jobs2, outputs2)):
        line_up(path, objects[b:b + BATCH], results)
        (revalidated if k < len(jobs2) else remutated).setdefault(pname, []).extend(results)
    jobs2 = jobs2 + jobs2
    return check_results, revalidated, remutated, len(jobs) + len(jobs2)


class Tally:
    """Comparisons passed and failed; failures counted by kind, the first --show of them (that
    --grep selects) printed in full; how often each expected difference explained a mismatch."""

    def __init__(self, show, grep):
        self.passed = self.failed = self.shown = 0
        self.show, self.grep = show, grep
        self.hits = {e["id"]: 0 for e in EXPECTED_DIFFERENCES}
        self.kinds = {}

    def ok(self):
        self.passed += 1

    def expected(self, key):
        """A mismatch an expected difference explains: it passes."""
        self.hits[key] = self.hits.get(key, 0) + 1
        self.passed += 1

    def fail(self, title, diff, text):
        self.failed += 1
        sig = (title, " ".join(sorted(d.split(":")[0] for d in diff if not d.startswith("allowed"))))
        self.kinds[sig] = self.kinds.get(sig, 0) + 1
        if self.shown < self.show and (not self.grep or self.grep in title + " " + " ".join(diff)):
            print(text())
            self.shown += 1


def judge_modes(tally, pname, policy, obj, check_results, i):
    """The model against check, the chain and --no-mutate. Returns the model's chain answer and,
    per mode, the expected differences that explained a mismatch."""
    ns = obj["metadata"]["namespace"]
    explained = {}
    for mode in ("chain", "no-mutate"):
        res = check_results[(pname, mode)][i]
        model = refmodel.evaluate(policy, ns, obj, mutate_pods=(mode == "chain"))
        if mode == "chain":
            chain_model = model
        diff = compare(policy, model, res, mode)
        if not diff:
            tally.ok()
            continue

        def agrees(quirks):
            alt = refmodel.evaluate(policy, ns, obj, mutate_pods=(mode == "chain"),
                                    quirks=frozenset(quirks))
            return not compare(policy, alt, res, mode)
        known = [e["id"] for e in EXPECTED_DIFFERENCES if agrees([e["id"]])][:1]
        if not known and agrees([e["id"] for e in EXPECTED_DIFFERENCES]):
            known = ["(several at once)"]
        if known:
            tally.expected(known[0])
            explained[mode] = set(known) if known[0] in tally.hits and known[0] != "(several at once)" \
                else {e["id"] for e in EXPECTED_DIFFERENCES}
            continue
        tally.fail(f"{pname} {mode}", diff, lambda: describe(f"{pname}, {mode}", obj, diff, model, res))
    return chain_model, explained


def judge_chain_vs_validate(tally, pname, obj, chain, again, explained, chain_quirks):
    """check's own chain against check --no-mutate on the mutated object."""
    diff = set()
    if chain.get("allowed") != again.get("allowed"):
        diff.add(f"allowed:chain={chain.get('allowed')},validate={again.get('allowed')}")
    for r in rules_denied(chain) ^ rules_denied(again):
        diff.add(("only-chain-" if r in rules_denied(chain) else "only-validate-") + r)
    if not diff:
        tally.ok()
    elif explained.get("chain", set()) & chain_quirks:
        tally.expected("(chain vs validate)")
    else:
        tally.fail(f"{pname} chain-vs-validate", diff,
                   lambda: describe(f"{pname}, chain vs --no-mutate of its mutated object", obj, diff,
                                    None, chain, again))


def judge_idempotence(tally, pname, policy, obj, chain, third, chain_model, explained, chain_quirks):
    """The second chain patches nothing and decides the same, and so does the model's own second
    pass."""
    ns = obj["metadata"]["namespace"]
    diff = set()
    if third.get("patch"):
        diff.add("second-patch:" + json.dumps(third["patch"])[:300])
    if third.get("allowed") != chain.get("allowed") or rules_denied(third) != rules_denied(chain):
        diff.add(f"second-decision:{sorted(rules_denied(third))} vs {sorted(rules_denied(chain))}")
    model_again = model_remutates(policy, ns, chain_model)
    if model_again:
        diff.add("model-second-pass:" + model_again[:300])
    if not diff:
        tally.ok()
    elif explained.get("chain", set()) & chain_quirks and not third.get("patch") and not model_again:
        tally.expected("(chain vs validate)")
    else:
        tally.fail(f"{pname} idempotence", diff,
                   lambda: describe(f"{pname}, chain on check's own mutated object", obj, diff,
                                    None, chain, third))


def count_findings(stats, pname, policy, obj):
    """--stats: the model's findings on `obj` per rule (tenant-pool per reason), per mode."""
    ns = obj["metadata"]["namespace"]
    for mode in ("chain", "no-mutate"):
        m = refmodel.evaluate(policy, ns, obj, mutate_pods=(mode == "chain"))
        st = stats.setdefault((pname, mode), {})
        st["objects"] = st.get("objects", 0) + 1
        st["allowed"] = st.get("allowed", 0) + m.allowed
        st["exempt"] = st.get("exempt", 0) + m.exempt
        for rule in {r for r, _ in m.findings}:
            st[rule] = st.get(rule, 0) + 1
        for rule, reason in m.findings:
            key = "  " + rule + ": " + reason.split(" ")[-1] if rule == "tenant-pool" else None
            if key:
                st[key] = st.get(key, 0) + 1


def print_report(tally, stats, start, runs, objects, policies):
    if stats is not None:
        print("--- model findings per rule (objects with at least one), per policy and mode")
        for (pname, mode), st in stats.items():
            print(f"  {pname} {mode}: " + ", ".join(f"{k}={v}" for k, v in sorted(st.items())))
    if tally.kinds:
        print("--- mismatches by kind (policy mode, what differs): count")
        for sig, n in sorted(tally.kinds.items(), key=lambda kv: -kv[1]):
            print(f"  {sig}: {n}")
    for e in EXPECTED_DIFFERENCES:
        n = tally.hits[e["id"]]
        print(f"expected difference {e['id']}: {n}" + ("" if n else " (matched nothing alone)"))
    for k in ("(several at once)", "(chain vs validate)"):
        if tally.hits.get(k):
            print(f"expected differences {k}: {tally.hits[k]}")
    print(f"time: {time.monotonic() - start:.1f} s, {runs} check runs, "
          f"{objects} objects x {policies} policies x 4 comparisons")
    print(f"{tally.passed} passed, {tally.failed} failed")


def main():
    args = parse_args()
    start = time.monotonic()
    objects = random_pods.generate(args.n, args.seed)
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="refmodel-")
    workdir = args.keep or tmp.name
    os.makedirs(workdir, exist_ok=True)
    batches = write_batches(workdir, "objects", objects)
    policies = write_policies(workdir, args.policies.split(","))
    check_results, revalidated, remutated, runs = run_rounds(args.binary, workdir, objects, batches, policies)

    tally = Tally(args.show, args.grep)
    chain_quirks = {e["id"] for e in EXPECTED_DIFFERENCES if e.get("chain_vs_validate")}
    stats = {}
    for pname, (policy, _) in policies.items():
        for i, obj in enumerate(objects):
            chain_model, explained = judge_modes(tally, pname, policy, obj, check_results, i)
            chain = check_results[(pname, "chain")][i]
            judge_chain_vs_validate(tally, pname, obj, chain, revalidated[pname][i], explained, chain_quirks)
            judge_idempotence(tally, pname, policy, obj, chain, remutated[pname][i], chain_model, explained,
                              chain_quirks)
            if args.stats:
                count_findings(stats, pname, policy, obj)

    print_report(tally, stats if args.stats else None, start, runs, len(objects), len(policies))
    if tmp:
        tmp.cleanup()
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
