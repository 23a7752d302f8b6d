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
"""

import copy
import math
import re
from fractions import Fraction

RULES = ("privileged", "host-namespaces", "gpu-device-access", "gpu-cap", "mps-adversarial",
         "gpu-tolerations", "tenant-pool", "tenant-label", "mig-profile", "gpu-sharing")
MUTATIONS = ("mig-resources", "tenant-labels", "pool-selector", "hide-gpus")
TENANT_LABEL = "gpu-admission.io/tenant"
MIG_PROFILE_ANNOTATION = "gpu-admission.io/mig-profile"
PRODUCT_LABEL = "nvidia.com/gpu.product"
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"
MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"

# MIG profile tables per gpuModel family, and compute slices (A30 and RTX PRO 6000 Blackwell: 4,
# others 7). A profile with an attribute (+me, +me.all, +gfx, -me) is the same slice as its base
# profile, valid only where the table lists it.
MIG_TABLES = {
    "A30": ["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"],
    "A100-40GB": ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
    "80GB": ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
    "H100-94GB": ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"],
    "H200": ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"],
    "B200": ["1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"],
    "GB200": ["1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"],
    "B300": ["1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"],
    "GB300": ["1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"],
    "RTX-PRO-6000": ["1g.24gb", "1g.24gb+me", "1g.24gb+gfx", "1g.24gb+me.all", "1g.24gb-me", "2g.48gb",
                     "2g.48gb+gfx", "2g.48gb+me.all", "2g.48gb-me", "4g.96gb", "4g.96gb+gfx"],
}
FOUR_SLICE_FAMILIES = ("A30", "RTX-PRO-6000")


def mig_family(model):
    """docs/design.md: gpuModel is matched to a table by family (the product name in upper case
    without spaces, '-' and '_'; GB200/GB300 before B200/B300, which they contain)."""
    m = re.sub(r"[-_ ]", "", (model or "").upper())
    if "RTXPRO6000" in m:
        return "RTX-PRO-6000"
    for fam in ("GB300", "B300", "GB200", "B200"):
        if fam in m:
            return fam
    if "H200" in m:
        return "H200"
    if "H100" in m and ("NVL" in m or "94GB" in m):
        return "H100-94GB"
    if "A100" in m and "40GB" in m:
        return "A100-40GB"
    if "A100" in m or "H100" in m:
        return "80GB"
    if "A30" in m:
        return "A30"
    return None


def compute_slices(model):
    return family_slices(mig_family(model))


def family_slices(family):
    return 4 if family in FOUR_SLICE_FAMILIES else 7


def any_model_share(profile, g):
    """With no pool, a MIG profile counts 'the largest share the profile has in any table
    above that lists it'. docs/design.md: a profile no table lists counts as its share of the
    smallest GPU with that many compute slices (g/4 up to 4g, else g/7)."""
    listed = [family_slices(f) for f, table in MIG_TABLES.items() if profile in table]
    if listed:
        return Fraction(g, min(listed))
    fits = [n for n in (4, 7) if n >= g]
    return Fraction(g, min(fits) if fits else 7)


def valid_profiles(model):
    return MIG_TABLES.get(mig_family(model), [])


def profile_resource_suffix(profile):
    """The device plugin exposes profile P as nvidia.com/mig-P with '+' turned into '.'."""
    return profile.replace("+", ".")


def profile_from_suffix(name):
    """The inverse: '1g.24gb.me.all' -> '1g.24gb+me.all', '.gfx' -> '+gfx', '.me' -> '+me'."""
    for suffix in (".me.all", ".gfx", ".me"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)] + "+" + suffix[1:]
    return name


# ---------------------------------------------------------------------------------------------
# Kubernetes quantities (GPU counts are Kubernetes quantities).

_SUFFIXES = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
# "a quantity beyond the representable range counts as more than any cap": any value this large
# is far above every cap and stays a whole number.
SATURATED = Fraction(2**100)
INT64_MAX = 2**63 - 1


def parse_quantity(value):
    """A Kubernetes quantity (string, or a JSON number) as an exact Fraction; None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        q = Fraction(value)
    elif isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return None
        q = Fraction(value)
    elif isinstance(value, str):
        m = _QUANTITY.match(value.strip())
        if not m:
            return None
        sign, number, exponent, suffix = m.groups()
        q = Fraction(number if not number.endswith(".") else number[:-1])
        if exponent is not None:
            e = int(exponent)
            if e > 100:
                return SATURATED
            q *= Fraction(10) ** e
        else:
            q *= _SUFFIXES[suffix or ""]
        if sign == "-":
            q = -q
    else:
        return None
    if q > INT64_MAX:
        return SATURATED
    return q


def gpu_count(q):
    """docs/design.md: a fraction counts as its exact ceiling, a negative one as 0, an unreadable
    one saturated. Returns (count as an integer number of devices, is_whole)."""
    if q is None:
        return SATURATED, True
    if q < 0:
        return Fraction(0), q.denominator == 1
    if q.denominator == 1:
        return q, True
    return Fraction(math.ceil(q)), False


# ---------------------------------------------------------------------------------------------
# Small helpers.

def glob_match(pattern, name):
    """Exact names or globs where `*` matches any run of characters."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, name) is not None


def all_containers(spec):
    """Rules look at every container kind."""
    out = []
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(kind) or []):
            out.append((kind, i, c))
    return out


def resource_containers(spec):
    """Containers that can hold resources (ephemeral containers have none)."""
    return [(k, i, c) for (k, i, c) in all_containers(spec) if k != "ephemeralContainers"]


def is_restartable(c):
    return c.get("restartPolicy") == "Always"


def env_names(c):
    return [e.get("name") for e in (c.get("env") or [])]


# ---------------------------------------------------------------------------------------------
# The policy, with the defaults the spec and design give.

# the default deviceAnnotationPrefixes.
DEFAULT_ANNOTATION_PREFIXES = ["cdi.k8s.io/", "nvidia.cdi.k8s.io/", "devices.noderesource.dev/",
                               "cdi-devices.noderesource.dev/", "devices.nri.io/", "cdi-devices.nri.io/",
                               "mounts.noderesource.dev/", "mounts.nri.io/", "io.kubernetes.cri-o.Devices"]

# the default gpuSharingAnnotations: KAI Scheduler's and Run:ai's GPU fractions, exact keys.
DEFAULT_SHARING_ANNOTATIONS = ["gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"]


class Policy:
    def __init__(self, doc):
        self.doc = doc
        spec = doc.get("spec") or {}
        ex = spec.get("exemptions") or {}
        self.exempt_namespaces = list(ex.get("namespaces") or [])
        res = spec.get("gpuResources") or {}
        self.full = list(res.get("full", ["nvidia.com/gpu"]))
        self.mig_prefix = res.get("migPrefix", "nvidia.com/mig-")
        self.shared = list(res.get("shared", ["nvidia.com/gpu.shared"]))
        self.fractional = list(res.get("fractional", []))
        dc = spec.get("deviceClasses") or {}
        self.class_full = list(dc.get("full", ["gpu.nvidia.com", "vfio.gpu.nvidia.com"]))
        self.class_mig = list(dc.get("mig", ["mig.nvidia.com"]))
        self.extra_host_paths = [normalize_path(p) for p in spec.get("gpuHostPaths") or []]
        self.annotation_prefixes = list(spec.get("deviceAnnotationPrefixes", DEFAULT_ANNOTATION_PREFIXES))
        self.sharing_annotations = list(spec.get("gpuSharingAnnotations", DEFAULT_SHARING_ANNOTATIONS))
        self.device_env = DEVICE_ENV + tuple(spec.get("gpuEnvVars") or [])
        self.runtime_classes = list(spec.get("runtimeClasses") or [])
        d = spec.get("defaults") or {}
        self.default_cap = d.get("maxGpusPerPod")
        self.unmapped_allow = d.get("unmappedGpuPods", "deny") == "allow"
        self.gpu_taints = list(d.get("gpuTaints") or [])
        rules = spec.get("rules") or {}
        self.actions = {r: rules.get(r, "deny") for r in RULES}
        muts = spec.get("mutations") or {}
        self.mutations = {m: bool(muts.get(m, True)) for m in MUTATIONS}
        self.pools = list(spec.get("pools") or [])
        self.pool_by_name = {p["name"]: p for p in self.pools}
        self.tenants = list(spec.get("tenants") or [])

    def tenant_of(self, namespace):
        """The first tenant whose namespaces globs match."""
        for t in self.tenants:
            if any(glob_match(g, namespace) for g in t.get("namespaces") or []):
                return t
        return None

    def exempt(self, namespace):
        return any(glob_match(g, namespace) for g in self.exempt_namespaces)

    def gpu_kind(self, resource):
        if resource in self.full:
            return "full"
        if resource in self.shared:
            return "shared"
        if resource in self.fractional:
            return "fractional"
        if resource.startswith(DEVICE_CLASS_PREFIX):
            # deviceclass.resource.kubernetes.io/<class> counts like a DRA device of the class
            cls = resource[len(DEVICE_CLASS_PREFIX):]
            if cls in self.class_full:
                return "class-full"
            if cls in self.class_mig:
                return "class-mig"
            return None
        if resource.startswith(self.mig_prefix):
            return "mig"
        return None

    def mig_profile_of(self, resource):
        """nvidia.com/mig-1g.10gb.me -> '1g.10gb+me', .me.all -> +me.all, .gfx -> +gfx (the
        table's spelling; '-me' is spelled alike)."""
        return profile_from_suffix(resource[len(self.mig_prefix):])

    def mig_compute_units(self, resource):
        """g of `<g>g.<mem>gb[attribute]`; None when the name cannot be read (then: one whole GPU)."""
        m = re.fullmatch(r"([0-9]+)g\.[0-9]+gb(\.me\.all|\.me|\.gfx|-me)?", resource[len(self.mig_prefix):])
        if not m or int(m.group(1)) == 0:
            return None
        return int(m.group(1))


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
# Mutations.

def mutate(policy, pod, tenant, quirks=frozenset()):
    """Mutates `pod` ({"metadata", "spec"}) in place: mig-resources, tenant-labels,
    pool-selector, hide-gpus, in that order (docs/design.md)."""
    meta, spec = pod["metadata"], pod["spec"]
    tgt = targeting(policy, spec)
    info = gpu_info(policy, spec, pod_pool(policy, tgt, tenant, True), meta=meta)

    # The pool pool-selector pins an unpinned GPU pod to (its tenant's defaultPool), if it can:
    # it only adds missing nodeSelector keys, never overwrites one (docs/design.md). It applies to
    # a GPU pod that names no pool and to one whose ORed terms escape its one named pool
    # (docs/design.md); a pod that selects several pools is denied by tenant-pool as it is.
    selector_pool = None
    unpinned = not tgt.pinned and len(tgt.named) <= 1
    if "multi-pool-as-unpinned" in quirks:
        unpinned = not tgt.pinned and _quirk_binary_pool_case(policy, spec) == "unpinned"
    if (policy.mutations["pool-selector"] and tenant is not None and tenant.get("defaultPool")
            and info.asks and unpinned):
        d = policy.pool_by_name[tenant["defaultPool"]]
        ns = spec.get("nodeSelector") or {}
        if all(ns.get(k, v) == v for k, v in d["nodeSelector"].items()):
            selector_pool = d
    if selector_pool is not None:
        mig_pool = selector_pool
    else:
        mig_pool = held_default_pool(policy, tgt, tenant, spec) or pod_pool(policy, tgt, tenant, info.asks)
        if "multi-pool-as-unpinned" in quirks:
            mig_pool = _quirk_binary_pool(policy, spec, tenant, info.asks)
        if mig_pool is None and "unpinned-in-default-pool" in quirks:
            mig_pool = _quirk_default_pool(policy, tenant, info, tgt)

    if policy.mutations["mig-resources"] and mig_pool is not None:
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
    meta, spec = pod["metadata"], pod["spec"]
    tgt = targeting(policy, spec)
    gpu_pod = gpu_info(policy, spec, None, meta=meta).asks
    pool = pod_pool(policy, tgt, tenant, gpu_pod)
    if "multi-pool-as-unpinned" in quirks:
        pool = _quirk_binary_pool(policy, spec, tenant, gpu_pod)
    if pool is None and "unpinned-in-default-pool" in quirks:
        pool = _quirk_default_pool(policy, tenant, gpu_info(policy, spec, None, meta=meta), tgt)
    if selector_pool is not None and "chain-selector-pins" in quirks:
        pool = selector_pool
        tgt = Targeting(tgt.named, True, False)
        tgt.selector_pinned = True
    res.pool = pool["name"] if pool else None
    info = gpu_info(policy, spec, pool, quirks, meta=meta)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    ns = spec.get("nodeSelector") or {}

    # privileged
    for kind, i, c in all_containers(spec):
        if (c.get("securityContext") or {}).get("privileged") is True:
            res.add("privileged", f"{kind}[{i}] privileged")

    # host-namespaces
    for f in ("hostPID", "hostIPC", "hostNetwork"):
        if spec.get(f) is True:
            res.add("host-namespaces", f)

    # gpu-device-access
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

    # gpu-cap
    cap = tenant.get("maxGpusPerPod") if tenant is not None and "maxGpusPerPod" in tenant \
        else policy.default_cap
    if cap is not None and info.total > cap:
        res.add("gpu-cap", f"{info.total} GPUs > {cap}")
    for f in info.nonwhole:
        res.add("gpu-cap", f"{f} is not a whole number")
    if "huge-quantity-without-cap" in quirks:
        for f in info.huge:
            res.add("gpu-cap", f"{f} is too large (quirk)")

    # mps-adversarial
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

    # gpu-sharing
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

    # gpu-tolerations
    if gpu_pod:
        taints = list(policy.gpu_taints) + (list(pool.get("taints") or []) if pool else [])
        tols = spec.get("tolerations") or []
        for taint in taints:
            if not any(tolerates(t, taint) for t in tols):
                res.add("gpu-tolerations", f"taint {taint}")

    # tenant-pool
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

    # tenant-label
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

    # mig-profile
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


# ---------------------------------------------------------------------------------------------
# Known deviations of the C++ (run.py's EXPECTED_DIFFERENCES); never used by the model itself.

QUIRKS = ("unpinned-in-default-pool", "huge-quantity-without-cap", "conflicting-selector",
          "multi-pool-as-unpinned", "mig-slices-capped", "chain-selector-pins",
          "mig-profile-requests-win")
# chain-selector-pins: after pool-selector pinned a pod in the chain, check judges it as pinned to
# that pool (no 'selects more than one pool', no 'not pinned'), although the mutated pod keeps its
# other affinity terms. mig-slices-capped: a MIG resource counts min(g, slices)/slices.
# mig-profile-requests-win: mig-profile reads a resource's count from requests when present (a
# zero request hides a non-zero limit), while gpu-cap counts the larger.


def _quirk_binary_pool_case(policy, spec):
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


def _quirk_binary_pool(policy, spec, tenant, gpu_pod):
    case = _quirk_binary_pool_case(policy, spec)
    if case == "unpinned":
        if gpu_pod and tenant is not None and tenant.get("defaultPool"):
            return policy.pool_by_name[tenant["defaultPool"]]
        return None
    return case[0] if case else None


def _quirk_default_pool(policy, tenant, info, tgt):
    """unpinned-in-default-pool: a GPU pod that names no pool is judged (and converted to MIG) in
    its tenant's defaultPool even when nothing pins it there (--no-mutate, pool-selector off)."""
    if tenant is not None and tenant.get("defaultPool") and info.asks and not tgt.named:
        return policy.pool_by_name[tenant["defaultPool"]]
    return None


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

    `quirks` switches on known deviations of the C++ from the spec (QUIRKS below), so that
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
