"""Known deviations of the C++ from the spec that the reference model can emulate (refmodel.py,
run.py's EXPECTED_DIFFERENCES); never used by the model itself.
"""

from model_pods import pool_named, required_terms


QUIRKS = ("unpinned-in-default-pool", "huge-quantity-without-cap", "conflicting-selector",
          "multi-pool-as-unpinned", "mig-slices-capped", "chain-selector-pins",
          "mig-profile-requests-win")
# chain-selector-pins: after pool-selector pinned a pod in the chain, check judges it as pinned to
# that pool (no 'selects more than one pool', no 'not pinned'), although the mutated pod keeps its
# other affinity terms. mig-slices-capped: a MIG resource counts min(g, slices)/slices.
# mig-profile-requests-win: mig-profile reads a resource's count from requests when present (a
# zero request hides a non-zero limit), while gpu-cap counts the larger.


def quirk_binary_pool_case(policy, spec):
    """multi-pool-as-unpinned: check's pool for a pod: the nodeSelector's pools if it names any,
    else the pools every required term names alike (one term In [a, b] names both), else the pod
    counts as unpinned (ORed terms that name different pools, or escape)."""
    ns = spec.get("nodeSelector") or {}
    by_ns = [p for p in policy.pools if pool_named(p, ns, None)]
    if by_ns:
        return by_ns
    terms = required_terms(spec)
    if not terms:
        return []
    per_term = [[p for p in policy.pools if pool_named(p, ns, t)] for t in terms]
    if all(x == per_term[0] for x in per_term) and per_term[0]:
        return per_term[0]
    return "unpinned" if any(per_term) else []


def quirk_binary_pool(policy, spec, tenant, gpu_pod):
    case = quirk_binary_pool_case(policy, spec)
    if case == "unpinned":
        if gpu_pod and tenant is not None and tenant.get("defaultPool"):
            return policy.pool_by_name[tenant["defaultPool"]]
        return None
    return case[0] if case else None


def quirk_default_pool(policy, tenant, info, tgt):
    """unpinned-in-default-pool: a GPU pod that names no pool is judged (and converted to MIG) in
    its tenant's defaultPool even when nothing pins it there (--no-mutate, pool-selector off)."""
    if tenant is not None and tenant.get("defaultPool") and info.asks and not tgt.named:
        return policy.pool_by_name[tenant["defaultPool"]]
    return None
