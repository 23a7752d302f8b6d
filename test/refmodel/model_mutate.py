"""The reference model's mutations (refmodel.py): mig-resources, tenant-labels, pool-selector,
hide-gpus.
"""

from model_terms import (
    INT64_MAX, MIG_PROFILE_ANNOTATION, PRODUCT_LABEL, TENANT_LABEL, env_names, parse_quantity,
    profile_resource_suffix, resource_containers, valid_profiles)
from model_pods import (container_asks_for_gpu, gpu_info, held_default_pool, pod_pool, sharing_annotations,
                        targeting)
from model_quirks import quirk_binary_pool, quirk_binary_pool_case, quirk_default_pool


# ---------------------------------------------------------------------------------------------
# Mutations.

def mutate(policy, pod, tenant, quirks=frozenset()):
    """Mutates `pod` ({"metadata", "spec"}) in place: mig-resources, tenant-labels,
    pool-selector, hide-gpus, in that order (docs/design.md)."""
    meta, spec = pod["metadata"], pod["spec"]
    tgt = targeting(policy, spec)
    info = gpu_info(policy, spec, pod_pool(policy, tgt, tenant, True), meta=meta)
    selector_pool = pool_selector_target(policy, spec, tenant, tgt, info, quirks)
    if selector_pool is not None:
        mig_pool = selector_pool
    else:
        mig_pool = held_default_pool(policy, tgt, tenant, spec) or pod_pool(policy, tgt, tenant, info.asks)
        if "multi-pool-as-unpinned" in quirks:
            mig_pool = quirk_binary_pool(policy, spec, tenant, info.asks)
        if mig_pool is None and "unpinned-in-default-pool" in quirks:
            mig_pool = quirk_default_pool(policy, tenant, info, tgt)

    if policy.mutations["mig-resources"] and mig_pool is not None:
        mutate_mig_resources(policy, meta, spec, mig_pool, info)

    if policy.mutations["tenant-labels"] and tenant is not None:
        labels = meta.setdefault("labels", {})
        wanted = {TENANT_LABEL: tenant["name"]}
        wanted.update(tenant.get("labels") or {})
        for k, v in wanted.items():
            labels.setdefault(k, v)

    if selector_pool is not None:
        ns = spec.setdefault("nodeSelector", {})
        for k, v in selector_pool["nodeSelector"].items():
            ns.setdefault(k, v)

    # hide-gpus leaves a pod with a GPU-sharing annotation alone: its scheduler decides which
    # containers get the share (docs/design.md).
    if policy.mutations["hide-gpus"] and not sharing_annotations(policy, meta):
        for kind, _, c in resource_containers(spec):
            if container_asks_for_gpu(policy, c):
                continue
            if "NVIDIA_VISIBLE_DEVICES" in env_names(c):
                continue
            c.setdefault("env", []).append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})
    return selector_pool


def pool_selector_target(policy, spec, tenant, tgt, info, quirks):
    """The pool pool-selector pins an unpinned GPU pod to (its tenant's defaultPool), if it can:
    it only adds missing nodeSelector keys, never overwrites one (docs/design.md). It applies to
    a GPU pod that names no pool and to one whose ORed terms escape its one named pool
    (docs/design.md); a pod that selects several pools is denied by tenant-pool as it is."""
    selector_pool = None
    unpinned = not tgt.pinned and len(tgt.named) <= 1
    if "multi-pool-as-unpinned" in quirks:
        unpinned = not tgt.pinned and quirk_binary_pool_case(policy, spec) == "unpinned"
    if (policy.mutations["pool-selector"] and tenant is not None and tenant.get("defaultPool")
            and info.asks and unpinned):
        d = policy.pool_by_name[tenant["defaultPool"]]
        ns = spec.get("nodeSelector") or {}
        if all(ns.get(k, v) == v for k, v in d["nodeSelector"].items()):
            selector_pool = d
    return selector_pool


def mutate_mig_resources(policy, meta, spec, mig_pool, info):
    """mig-resources in `mig_pool`: whole GPUs become its MIG profile (mixed strategy), or a GPU
    pod gets the profile's product selector (single strategy)."""
    strategy = (mig_pool.get("mig") or {}).get("strategy", "none")
    profile = (mig_pool.get("mig") or {}).get("defaultProfile")
    ann = (meta.get("annotations") or {}).get(MIG_PROFILE_ANNOTATION)
    if ann in valid_profiles(mig_pool.get("gpuModel")):
        profile = ann
    if strategy == "mixed":
        target = policy.mig_prefix + profile_resource_suffix(profile)
        for _, _, c in resource_containers(spec):
            res = c.get("resources") or {}
            for section in ("requests", "limits"):
                lst = res.get(section)
                if not lst:
                    continue
                for name in list(lst):
                    if policy.gpu_kind(name) != "full":
                        continue
                    q = parse_quantity(lst[name])
                    if q is not None and q == 0:
                        continue            # a zero-count whole GPU asks for nothing
                    if target in lst:
                        old = parse_quantity(lst[target])
                        if (q is None or old is None or q.denominator != 1
                                or old.denominator != 1 or q + old > INT64_MAX):
                            # cannot be added exactly (docs/design.md; a sum beyond int64 is
                            # 'beyond the representable range'): left in place
                            continue
                        lst[target] = str(old + q)
                        del lst[name]
                    else:
                        # N kept as written; the entry replaces the whole GPU.
                        lst[target] = lst.pop(name)
    elif strategy == "single" and info.asks:
        ns = spec.setdefault("nodeSelector", {})
        if PRODUCT_LABEL not in ns:
            ns[PRODUCT_LABEL] = (mig_pool["gpuModel"] + "-MIG-" + profile_resource_suffix(profile))
