"""An independent reference model of gpu-admission's policy (SPEC.md v2: the policy file, tenancy and pools, rules, mutations, workloads).

Written from /work/shared/SPEC.md and docs/design.md only (never from the C++ rules), so that
`run.py` can compare it with `gpu-admission check -o json` on many random pods. It is meant to be
read next to the spec: each function cites the sentence it implements. Python standard library
only; the policy is the same dict that is written (as JSON) to the policy file.

What it models:
- exemptions (namespace globs), tenants by namespace glob, pools by nodeSelector / required node
  affinity `In` (ORed terms), default pools;
- the rules privileged, host-namespaces, gpu-device-access, gpu-cap, mps-adversarial,
  gpu-tolerations, tenant-pool, tenant-label, mig-profile, gpu-sharing;
- the mutations mig-resources, tenant-labels, pool-selector, hide-gpus;
- Pods (mutated then validated, or `--no-mutate`: judged as they arrive) and Deployments (the
  template judged as the pod after mutation).
- DRA extended resources (`deviceclass.resource.kubernetes.io/<class>`): one whole GPU per unit
  for a `deviceClasses.full` or `.mig` class, nothing for other classes.
What it leaves out: DRA claims, namespaceSelector tenants, usernames, UPDATE.

evaluate(policy, namespace, obj, mutate=True) -> Result (allowed, denied rule IDs, ...).

The parts, each a module of its own: model_terms (IDs, labels, MIG tables, quantities, containers),
model_policy (the policy and its defaults), model_pods (a pod's GPUs, pools, host paths,
tolerations), model_mutate (the mutations), model_validate (the rules), model_quirks (the C++'s
known deviations, emulated on request).
"""

import copy

from model_mutate import mutate
from model_policy import Policy
from model_quirks import QUIRKS  # noqa: F401 (evaluate's quirks)
from model_terms import parse_quantity, resource_containers  # noqa: F401 (run.py reads them here)
from model_validate import validate


# ---------------------------------------------------------------------------------------------
# The result.

class Result:
    def __init__(self):
        self.exempt = False
        self.tenant = None
        self.pool = None
        self.findings = []       # (rule, reason)
        self.mutated = None      # the judged pod {"metadata", "spec"}

    def add(self, rule, reason):
        self.findings.append((rule, reason))

    def finish(self, policy):
        self.denied = {r for r, _ in self.findings if policy.actions[r] == "deny"}
        self.warned = {r for r, _ in self.findings if policy.actions[r] == "warn"}
        self.allowed = not self.denied
        return self


# ---------------------------------------------------------------------------------------------
# Entry point.

def template_of(obj):
    """The pod template of a workload (CronJob: spec.jobTemplate.spec.template)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return spec.get("template") or {}


def pod_of(obj):
    """The pod that is judged: a Pod as it is, a workload's template."""
    if obj.get("kind") == "Pod":
        return {"metadata": copy.deepcopy(obj.get("metadata") or {}),
                "spec": copy.deepcopy(obj.get("spec") or {})}, False
    tmpl = template_of(obj)
    return {"metadata": copy.deepcopy(tmpl.get("metadata") or {}),
            "spec": copy.deepcopy(tmpl.get("spec") or {})}, True


def evaluate(policy, namespace, obj, mutate_pods=True, quirks=frozenset()):
    """`check` (mutate_pods=True: the API server's chain) or `check --no-mutate` for a Pod;
    workloads are always judged as the pod after mutation.

    `quirks` switches on known deviations of the C++ from the spec (model_quirks.QUIRKS), so that
    run.py can recognise a known disagreement exactly; the model itself never uses them."""
    if not isinstance(policy, Policy):
        policy = Policy(policy)
    res = Result()
    pod, is_workload = pod_of(obj)
    res.mutated = pod
    if policy.exempt(namespace):
        res.exempt = True
        return res.finish(policy)
    tenant = policy.tenant_of(namespace)
    res.tenant = tenant["name"] if tenant else None
    selector_pool = None
    if mutate_pods or is_workload:
        selector_pool = mutate(policy, pod, tenant, quirks)
    validate(policy, pod, tenant, res, quirks, selector_pool)
    return res.finish(policy)
