"""The policy as the reference model reads it (refmodel.py), with the defaults the spec and
docs/design.md give.
"""

import re

from model_terms import DEVICE_CLASS_PREFIX, MUTATIONS, RULES, glob_match, profile_from_suffix
from model_pods import normalize_path
from model_validate import DEVICE_ENV


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
