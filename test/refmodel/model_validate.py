"""The reference model's rules (refmodel.py), judging a pod as it is.
"""

from model_terms import (
    MIG_PROFILE_ANNOTATION, MPS_CAPABLE_LABEL, PRODUCT_LABEL, REPLICAS_LABEL, SHARING_LABEL,
    TENANT_LABEL, all_containers, gpu_count, parse_quantity, profile_resource_suffix,
    resource_containers, valid_profiles)
from model_pods import (
    GPU_HOST_PATHS, MPS_HOST_PATHS, Targeting, asks_for_something, container_asks_for_gpu,
    container_gpu_quantities, gpu_info, host_path_hits, normalize_path, pod_pool, required_terms,
    sharing_annotations, targeting, tolerates)
from model_quirks import quirk_binary_pool, quirk_default_pool


# ---------------------------------------------------------------------------------------------
# Validation, of a pod as it is.

DEVICE_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
              "NVIDIA_IMEX_CHANNELS", "NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY",
              "CUDA_DISABLE_CONTROL")

# where the NVIDIA toolkit reads volume mounts as a device list. docs/design.md: the toolkit
# compares with a plain string prefix, so the rule matches the normalized path as a name prefix.
DEVICE_LIST_MOUNT_ROOT = "/run/nvidia-container-devices"


def annotation_is_device(key, prefix):
    """a key under the prefix, or equal to it without its trailing '/'."""
    return key.startswith(prefix) or (len(prefix) > 1 and prefix.endswith("/") and key == prefix[:-1])


def prefix_can_form(prefix, name):
    """An envFrom prefix P spells name N with a non-empty key when N starts with P and is longer."""
    return bool(prefix) and name.startswith(prefix) and len(name) > len(prefix)


def validate(policy, pod, tenant, res, quirks=frozenset(), selector_pool=None):
    """Judges `pod` as it is: each rule's findings are added to `res`, rule by rule."""
    meta, spec = pod["metadata"], pod["spec"]
    tgt = targeting(policy, spec)
    gpu_pod = gpu_info(policy, spec, None, meta=meta).asks
    pool = pod_pool(policy, tgt, tenant, gpu_pod)
    if "multi-pool-as-unpinned" in quirks:
        pool = quirk_binary_pool(policy, spec, tenant, gpu_pod)
    if pool is None and "unpinned-in-default-pool" in quirks:
        pool = quirk_default_pool(policy, tenant, gpu_info(policy, spec, None, meta=meta), tgt)
    if selector_pool is not None and "chain-selector-pins" in quirks:
        pool = selector_pool
        tgt = Targeting(tgt.named, True, False)
        tgt.selector_pinned = True
    res.pool = pool["name"] if pool else None
    info = gpu_info(policy, spec, pool, quirks, meta=meta)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    ns = spec.get("nodeSelector") or {}

    check_privileged(spec, res)
    check_host_namespaces(spec, res)
    check_gpu_device_access(policy, spec, pool, info, annotations, res)
    check_gpu_cap(policy, tenant, info, res, quirks)
    check_mps_adversarial(spec, pool, gpu_pod, ns, res)
    check_gpu_sharing(policy, meta, spec, pool, gpu_pod, ns, res)
    check_gpu_tolerations(policy, spec, pool, gpu_pod, res)
    check_tenant_pool(policy, tenant, tgt, pool, gpu_pod, ns, res, quirks)
    check_tenant_label(policy, tenant, labels, res)
    check_mig_profile(policy, spec, pool, gpu_pod, annotations, ns, res, quirks)


def check_privileged(spec, res):
    """privileged: a container of any kind with securityContext.privileged."""
    for kind, i, c in all_containers(spec):
        if (c.get("securityContext") or {}).get("privileged") is True:
            res.add("privileged", f"{kind}[{i}] privileged")


def check_host_namespaces(spec, res):
    """host-namespaces: hostPID, hostIPC or hostNetwork."""
    for f in ("hostPID", "hostIPC", "hostNetwork"):
        if spec.get(f) is True:
            res.add("host-namespaces", f)


def check_gpu_device_access(policy, spec, pool, info, annotations, res):
    """gpu-device-access: device env vars and envFrom prefixes that can spell them, mounts of the
    toolkit's device list, GPU host paths, device annotations, and a GPU pod's runtime class."""
    for kind, i, c in all_containers(spec):
        asks = kind != "ephemeralContainers" and container_asks_for_gpu(policy, c)
        for e in c.get("env") or []:
            if e.get("name") not in policy.device_env:
                continue
            hide = (e.get("name") == "NVIDIA_VISIBLE_DEVICES" and "valueFrom" not in e
                    and e.get("value") == "void" and not asks)
            if not hide:
                res.add("gpu-device-access", f"{kind}[{i}] env {e.get('name')}")
        for j, ef in enumerate(c.get("envFrom") or []):
            p = ef.get("prefix") or ""
            if any(prefix_can_form(p, n) for n in policy.device_env):
                res.add("gpu-device-access", f"{kind}[{i}].envFrom[{j}].prefix {p}")
        for j, m in enumerate(c.get("volumeMounts") or []):
            if normalize_path(m.get("mountPath") or "").startswith(DEVICE_LIST_MOUNT_ROOT):
                res.add("gpu-device-access", f"{kind}[{i}].volumeMounts[{j}] {m.get('mountPath')}")
    for v in spec.get("volumes") or []:
        hp = v.get("hostPath")
        if hp and host_path_hits(hp.get("path") or "", GPU_HOST_PATHS, policy.extra_host_paths):
            res.add("gpu-device-access", f"hostPath {hp.get('path')}")
    for k in annotations:
        if any(annotation_is_device(k, p) for p in policy.annotation_prefixes):
            res.add("gpu-device-access", f"annotation {k}")
    # SPEC 3: a GPU pod whose runtimeClassName is not in its pool's runtimeClasses (else
    # spec.runtimeClasses) when either is set; docs/design.md: an empty pool list inherits, and a
    # pod without runtimeClassName (or with "") is refused.
    allowed_runtimes = (pool or {}).get("runtimeClasses") or policy.runtime_classes
    if allowed_runtimes and info.asks and spec.get("runtimeClassName") not in allowed_runtimes:
        res.add("gpu-device-access", f"runtimeClassName {spec.get('runtimeClassName')}")


def check_gpu_cap(policy, tenant, info, res, quirks):
    """gpu-cap: more GPUs than the tenant's cap (else the default one), or a fraction of one."""
    cap = tenant.get("maxGpusPerPod") if tenant is not None and "maxGpusPerPod" in tenant \
        else policy.default_cap
    if cap is not None and info.total > cap:
        res.add("gpu-cap", f"{info.total} GPUs > {cap}")
    for f in info.nonwhole:
        res.add("gpu-cap", f"{f} is not a whole number")
    if "huge-quantity-without-cap" in quirks:
        for f in info.huge:
            res.add("gpu-cap", f"{f} is too large (quirk)")


def check_mps_adversarial(spec, pool, gpu_pod, ns, res):
    """mps-adversarial, in an adversarial pool: a GPU request in an MPS pool, node constraints on
    the MPS labels, CUDA_MPS_ env and envFrom prefixes, the MPS pipe host paths, hostIPC."""
    if pool is not None and pool.get("trust") == "adversarial":
        if gpu_pod and pool.get("sharing") == "mps":
            res.add("mps-adversarial", "GPU request in an MPS pool")
        # any node constraint on the MPS labels, but sharing-strategy equal to / In [none]
        if SHARING_LABEL in ns and ns[SHARING_LABEL] != "none":
            res.add("mps-adversarial", "nodeSelector sharing-strategy")
        if MPS_CAPABLE_LABEL in ns:
            res.add("mps-adversarial", "nodeSelector mps.capable")
        for t in required_terms(spec):
            for e in t:
                values = e.get("values") or []
                none_only = e.get("operator") == "In" and values and all(v == "none" for v in values)
                if (e.get("key") == SHARING_LABEL and not none_only) or e.get("key") == MPS_CAPABLE_LABEL:
                    res.add("mps-adversarial", f"affinity {e.get('key')} {e.get('operator')}")
        for kind, i, c in all_containers(spec):
            for e in c.get("env") or []:
                if (e.get("name") or "").startswith("CUDA_MPS_"):
                    res.add("mps-adversarial", f"{kind}[{i}] env {e.get('name')}")
            for ef in c.get("envFrom") or []:
                p = ef.get("prefix") or ""
                if p and (p.startswith("CUDA_MPS_") or "CUDA_MPS_".startswith(p)):
                    res.add("mps-adversarial", f"{kind}[{i}] envFrom prefix {p}")
        for v in spec.get("volumes") or []:
            hp = v.get("hostPath")
            if hp and host_path_hits(hp.get("path") or "", MPS_HOST_PATHS):
                res.add("mps-adversarial", f"hostPath {hp.get('path')}")
        if spec.get("hostIPC") is True:
            res.add("mps-adversarial", "hostIPC")


def check_gpu_sharing(policy, meta, spec, pool, gpu_pod, ns, res):
    """gpu-sharing, in an adversarial pool: a GPU request in a time-sliced pool, shared or
    fractional resources, node constraints on the replicas label or a -SHARED product."""
    if pool is not None and pool.get("trust") == "adversarial":
        if gpu_pod and pool.get("sharing") == "time-slicing":
            res.add("gpu-sharing", "GPU request in a time-sliced pool")
        for kind, i, c in all_containers(spec):
            r = c.get("resources") or {}
            for section in ("limits", "requests"):
                for name, value in (r.get(section) or {}).items():
                    if policy.gpu_kind(name) in ("shared", "fractional") and asks_for_something(value):
                        res.add("gpu-sharing", f"{kind}[{i}] {section}[{name}]")
        for key in sharing_annotations(policy, meta):
            res.add("gpu-sharing", f"annotation {key}")
        if REPLICAS_LABEL in ns:
            res.add("gpu-sharing", "nodeSelector gpu.replicas")
        if PRODUCT_LABEL in ns and ns[PRODUCT_LABEL].upper().endswith("-SHARED"):
            res.add("gpu-sharing", "nodeSelector -SHARED product")
        for t in required_terms(spec):
            for e in t:
                if e.get("key") == REPLICAS_LABEL:
                    res.add("gpu-sharing", f"affinity gpu.replicas {e.get('operator')}")
                if e.get("key") == PRODUCT_LABEL:
                    # In names products (a -SHARED one selects time-sliced nodes); DoesNotExist
                    # selects no GPU node; every other operator, any spelling, can select one.
                    op = e.get("operator")
                    if op == "In":
                        if any(v.upper().endswith("-SHARED") for v in e.get("values") or []):
                            res.add("gpu-sharing", "affinity -SHARED product")
                    elif op != "DoesNotExist":
                        res.add("gpu-sharing", f"affinity product {op}")


def check_gpu_tolerations(policy, spec, pool, gpu_pod, res):
    """gpu-tolerations: a GPU pod tolerates the GPU taints and its pool's."""
    if gpu_pod:
        taints = list(policy.gpu_taints) + (list(pool.get("taints") or []) if pool else [])
        tols = spec.get("tolerations") or []
        for taint in taints:
            if not any(tolerates(t, taint) for t in tols):
                res.add("gpu-tolerations", f"taint {taint}")


def check_tenant_pool(policy, tenant, tgt, pool, gpu_pod, ns, res, quirks):
    """tenant-pool: the tenant's pools only, a GPU pod pinned to one, never several pools; no GPU
    pod outside every tenant unless the policy allows it."""
    if tenant is not None:
        for p in tgt.named:
            if p["name"] not in (tenant.get("pools") or []):
                res.add("tenant-pool", f"foreign pool {p['name']}")
        if gpu_pod and tenant.get("pools") and not tgt.pinned:
            res.add("tenant-pool", "not pinned to a pool")
    elif gpu_pod and not policy.unmapped_allow:
        res.add("tenant-pool", "GPU pod in a namespace of no tenant")
    if len(tgt.named) > 1 and not getattr(tgt, "selector_pinned", False):
        res.add("tenant-pool", "selects more than one pool")
    if "conflicting-selector" in quirks and pool is not None:
        if any(k in ns and ns[k] != v for k, v in pool["nodeSelector"].items()):
            res.add("tenant-pool", "nodeSelector contradicts the pool (quirk)")


def check_tenant_label(policy, tenant, labels, res):
    """tenant-label: the tenant label and the tenant's labels, with the tenant's values."""
    if tenant is None and TENANT_LABEL in labels:
        res.add("tenant-label", f"label {TENANT_LABEL} in a namespace of no tenant")
    if tenant is not None:
        wanted = {TENANT_LABEL: tenant["name"]}
        wanted.update(tenant.get("labels") or {})
        for k, v in wanted.items():
            if k in labels and labels[k] != v:
                res.add("tenant-label", f"label {k}={labels[k]}")
            elif k not in labels and policy.mutations["tenant-labels"]:
                res.add("tenant-label", f"missing label {k}")


def check_mig_profile(policy, spec, pool, gpu_pod, annotations, ns, res, quirks):
    """mig-profile: one MIG type per container, MIG resources the pool's strategy and model allow,
    no whole GPU in a mixed pool, the single strategy's product selector, the profile annotation."""
    for kind, i, c in resource_containers(spec):
        counts, _ = container_gpu_quantities(policy, c)
        if "mig-profile-requests-win" in quirks:
            res_ = c.get("resources") or {}
            merged = dict(res_.get("limits") or {})
            merged.update(res_.get("requests") or {})
            counts = {n: gpu_count(parse_quantity(v))[0] for n, v in merged.items()
                      if policy.gpu_kind(n) is not None}
        migs = [n for n, q in counts.items() if policy.gpu_kind(n) == "mig" and q != 0]
        if len(migs) > 1:
            res.add("mig-profile", f"{kind}[{i}] two MIG types")
        if pool is None:
            continue
        strategy = (pool.get("mig") or {}).get("strategy", "none")
        for n in migs:
            if strategy in ("none", "single"):
                res.add("mig-profile", f"{kind}[{i}] {n} in a {strategy} pool")
            elif policy.mig_profile_of(n) not in valid_profiles(pool.get("gpuModel")):
                res.add("mig-profile", f"{kind}[{i}] {n} invalid profile")
        if strategy == "mixed":
            for n, q in counts.items():
                if policy.gpu_kind(n) == "full" and q != 0:
                    res.add("mig-profile", f"{kind}[{i}] whole GPU {n} in a mixed pool")
        if strategy in ("mixed", "single"):
            # a DRA request for a full-GPU device class in a mixed or single pool
            for n, q in counts.items():
                if policy.gpu_kind(n) == "class-full" and q != 0:
                    res.add("mig-profile", f"{kind}[{i}] full device class {n} in a MIG pool")
    if pool is not None:
        strategy = (pool.get("mig") or {}).get("strategy", "none")
        if strategy == "single" and gpu_pod:
            products = {pool["gpuModel"] + "-MIG-" + profile_resource_suffix(p)
                        for p in valid_profiles(pool["gpuModel"])}
            if ns.get(PRODUCT_LABEL) not in products:
                res.add("mig-profile", f"product selector {ns.get(PRODUCT_LABEL)}")
        ann = annotations.get(MIG_PROFILE_ANNOTATION)
        if ann is not None and ann not in valid_profiles(pool.get("gpuModel")):
            res.add("mig-profile", f"annotation {ann}")
