"""What the reference model's rules read from a pod (refmodel.py): its GPUs, the pools it targets,
host paths and tolerations.
"""

from fractions import Fraction

from model_terms import (
    SATURATED, any_model_share, compute_slices, gpu_count, is_restartable, parse_quantity,
    resource_containers)


# ---------------------------------------------------------------------------------------------
# GPU requests (the effective GPU request).

class GpuInfo:
    def __init__(self):
        self.total = Fraction(0)      # GPU-equivalents, exact
        self.asks = False             # asks for any GPU at all
        self.nonwhole = []            # fields of GPU quantities that are not whole numbers
        self.huge = []                # fields of GPU quantities beyond int64 (whole, over any cap)
        self.container_asks = {}      # (kind, index) -> asks for a GPU


def container_gpu_quantities(policy, c):
    """Per GPU resource of a container: (count, whole) with requests defaulting to limits; a
    resource in both counts the larger (docs/design.md). Also the non-whole fields."""
    res = c.get("resources") or {}
    counts = {}
    nonwhole = []
    for section in ("limits", "requests"):
        for name, value in (res.get(section) or {}).items():
            if policy.gpu_kind(name) in (None, "fractional"):
                continue
            n, whole = gpu_count(parse_quantity(value))
            if not whole:
                nonwhole.append(f"{section}[{name}]")
            if name not in counts or n > counts[name]:
                counts[name] = n
    return counts, nonwhole


def container_huge_fields(policy, c):
    res = c.get("resources") or {}
    return [f"{section}[{name}]" for section in ("limits", "requests")
            for name, value in (res.get(section) or {}).items()
            if policy.gpu_kind(name) not in (None, "fractional") and parse_quantity(value) == SATURATED]


def container_units(policy, c, slices, quirks=frozenset()):
    """GPU units of one container (Fraction of GPUs) and whether it asks for a GPU. `slices` is
    the pool model's compute slices, None for a pod with no pool."""
    counts, nonwhole = container_gpu_quantities(policy, c)
    units = Fraction(0)
    for name, n in counts.items():
        kind = policy.gpu_kind(name)
        if kind == "mig":
            g = policy.mig_compute_units(name)
            if g is None:
                units += n
                continue
            if slices is None:
                units += n * any_model_share(policy.mig_profile_of(name), g)
                continue
            if "mig-slices-capped" in quirks:
                g = min(g, slices)
            units += n * Fraction(g, slices)
        else:
            # full, shared, and a DRA device class's extended resource (a MIG class names no
            # profile: one whole GPU, the worst case)
            units += n
    asks = any(n != 0 for n in counts.values()) or bool(nonwhole) or container_asks_fraction(policy, c)
    return units, asks, nonwhole


def asks_for_something(value):
    """a quantity never counts as zero unless it is zero (unreadable ones ask)."""
    q = parse_quantity(value)
    return q is None or q != 0


def container_asks_fraction(policy, c):
    """a `gpuResources.fractional` resource makes a GPU pod and counts no GPUs."""
    res = c.get("resources") or {}
    return any(policy.gpu_kind(name) == "fractional" and asks_for_something(value)
               for section in ("limits", "requests") for name, value in (res.get(section) or {}).items())


def gpu_info(policy, spec, pool, quirks=frozenset(), meta=None):
    """Pod total = max(sum apps + sum restartable inits, max over init i of (its units +
    restartable inits before it)); compared exactly. A pod annotation in gpuSharingAnnotations
    (a scheduler's GPU fraction) makes a GPU pod and counts no GPUs (docs/design.md), as a
    fractional resource does."""
    slices = compute_slices(pool.get("gpuModel")) if pool else None
    info = GpuInfo()
    apps = Fraction(0)
    for _, i, c in [x for x in resource_containers(spec) if x[0] == "containers"]:
        u, asks, nw = container_units(policy, c, slices, quirks)
        apps += u
        info.container_asks[("containers", i)] = asks
        info.asks |= asks
        info.nonwhole += [f"spec.containers[{i}].resources.{f}" for f in nw]
        info.huge += [f"spec.containers[{i}].resources.{f}" for f in container_huge_fields(policy, c)]
    sidecars = Fraction(0)
    init_max = Fraction(0)
    for i, c in enumerate(spec.get("initContainers") or []):
        u, asks, nw = container_units(policy, c, slices, quirks)
        info.container_asks[("initContainers", i)] = asks
        info.asks |= asks
        info.nonwhole += [f"spec.initContainers[{i}].resources.{f}" for f in nw]
        info.huge += [f"spec.initContainers[{i}].resources.{f}" for f in container_huge_fields(policy, c)]
        if is_restartable(c):
            sidecars += u
            init_max = max(init_max, sidecars)
        else:
            init_max = max(init_max, u + sidecars)
    info.total = max(apps + sidecars, init_max)
    info.asks |= info.total > 0
    info.asks |= bool(sharing_annotations(policy, meta))
    return info


def sharing_annotations(policy, meta):
    """The pod's annotation keys in gpuSharingAnnotations (exact keys)."""
    return [k for k in ((meta or {}).get("annotations") or {}) if k in policy.sharing_annotations]


def container_asks_for_gpu(policy, c):
    return container_units(policy, c, None)[1]


# ---------------------------------------------------------------------------------------------
# Pools (docs/design.md "Tenancy and pools").

def required_terms(spec):
    aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return [t.get("matchExpressions") or [] for t in req.get("nodeSelectorTerms") or []]


def pool_named(pool, node_selector, exprs):
    """A pool is named when each of its nodeSelector pairs is in the pod's nodeSelector or given
    by an `In` expression on the same key in the term."""
    for k, v in (pool.get("nodeSelector") or {}).items():
        if node_selector.get(k) == v:
            continue
        if exprs and any(e.get("key") == k and e.get("operator") == "In" and v in (e.get("values") or [])
                         for e in exprs):
            continue
        return False
    return True


class Targeting:
    def __init__(self, named, pinned, escapes):
        self.named = named        # pools the pod targets (any term, or the nodeSelector), policy order
        self.pinned = pinned      # every way to schedule it lands in named[0]
        self.escapes = escapes    # one pool named, but an ORed term names none (can land elsewhere)


def targeting(policy, spec):
    """The pool whose nodeSelector is contained in the pod's nodeSelector, or named by a
    required node-affinity term; ORed terms must all name the same pool."""
    ns = spec.get("nodeSelector") or {}
    terms = required_terms(spec)
    if not terms:
        named = [p for p in policy.pools if pool_named(p, ns, None)]
        return Targeting(named, len(named) == 1, False)
    per_term = [{p["name"] for p in policy.pools if pool_named(p, ns, t)} for t in terms]
    union = set().union(*per_term)
    named = [p for p in policy.pools if p["name"] in union]
    pinned = len(named) == 1 and all(s == {named[0]["name"]} for s in per_term)
    return Targeting(named, pinned, len(named) == 1 and not pinned)


def pod_pool(policy, tgt, tenant, gpu_pod):
    """The pool the rules use. Several pools: the first in policy order (docs/design.md). A GPU pod
    whose ORed terms escape its named pool: its tenant's defaultPool (docs/design.md: 'is evaluated
    in its tenant's default pool, where pool-selector pins it'). Names none: no pool."""
    if tgt.escapes:
        if gpu_pod and tenant is not None and tenant.get("defaultPool"):
            return policy.pool_by_name[tenant["defaultPool"]]
        return None
    return tgt.named[0] if tgt.named else None


def held_default_pool(policy, tgt, tenant, spec):
    """Where a pod that names several pools is mutated, when not in the first (docs/design.md):
    its tenant's defaultPool, when that is among them and its nodeSelector holds every label of it
    (what pool-selector writes; the nodeSelector is ANDed with every term, so the pod lands there).
    A second pass over a pod pool-selector pinned there, whose terms name another pool, then
    changes nothing. Else None."""
    if len(tgt.named) < 2 or tenant is None or not tenant.get("defaultPool"):
        return None
    d = policy.pool_by_name[tenant["defaultPool"]]
    ns = spec.get("nodeSelector") or {}
    return d if all(ns.get(k) == v for k, v in d["nodeSelector"].items()) else None   # held: named too


# ---------------------------------------------------------------------------------------------
# Host paths (gpu-device-access, mps-adversarial; docs/design.md "Host paths").

def normalize_path(path):
    """Lexical: '//' collapsed, '.' dropped, '..' resolved (never above /), trailing '/' dropped,
    relative taken as absolute, /var/run folded to /run as the walk meets it."""
    stack = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if stack:
                stack.pop()
            continue
        stack.append(part)
        if stack == ["var", "run"]:
            stack = ["run"]
    return "/" + "/".join(stack)


# (path, name_prefix): the path and everything under it; name prefixes match any path that starts
# with the string.
GPU_HOST_PATHS = [
    ("/dev/nvidia", True), ("/dev/dri", False), ("/dev/vfio", False), ("/dev/char", False),
    ("/var/run/nvidia-container-devices", False), ("/run/nvidia", True),
    ("/var/lib/kubelet/device-plugins", False), ("/var/lib/kubelet/plugins", False),
    ("/var/lib/kubelet/plugins_registry", False), ("/var/lib/kubelet/pod-resources", False),
    ("/etc/cdi", False), ("/var/run/cdi", False), ("/etc/nvidia-container-runtime", False),
    ("/etc/nvidia-container-toolkit", False), ("/usr/local/nvidia", False), ("/proc", False),
    # docs/design.md additions: sysfs, /dev links into /proc, container runtime sockets.
    ("/sys", False), ("/dev/fd", False), ("/dev/stdin", False), ("/dev/stdout", False),
    ("/dev/stderr", False), ("/dev/core", False), ("/run/containerd", False), ("/run/crio", False),
    ("/run/docker.sock", False), ("/run/docker", False), ("/run/cri-dockerd.sock", False),
    ("/run/k3s", False),
]
MPS_HOST_PATHS = [("/tmp/nvidia-mps", False), ("/run/nvidia/mps", False)]


def _ancestors(entries):
    out = set()
    for path, _ in entries:
        parts = normalize_path(path).strip("/").split("/")
        for n in range(len(parts)):
            out.add("/" + "/".join(parts[:n]))
    return out


def _under(path, entry, name_prefix):
    if name_prefix:
        return path.startswith(entry)
    return path == entry or path.startswith(entry.rstrip("/") + "/")


def host_path_hits(path, entries, extra=()):
    """True when the normalized path is an entry, under one, or a directory above a built-in one."""
    p = normalize_path(path)
    for entry, prefix in entries:
        if _under(p, normalize_path(entry), prefix):
            return True
    for entry in extra:
        if _under(p, entry, False):
            return True
    return p in _ancestors(entries)


# ---------------------------------------------------------------------------------------------
# Toleration matching (Kubernetes semantics).

def tolerates(toleration, taint):
    op = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if key == "":
        if op != "Exists":
            return False
    elif key != taint.get("key"):
        return False
    if op == "Exists":
        pass
    elif op == "Equal":
        if (toleration.get("value") or "") != (taint.get("value") or ""):
            return False
    else:
        return False
    effect = toleration.get("effect") or ""
    return effect == "" or effect == taint.get("effect")
