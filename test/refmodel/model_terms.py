"""The reference model's vocabulary (refmodel.py): rule and mutation IDs, the labels it reads,
MIG profile tables, Kubernetes quantities and containers.
"""

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
