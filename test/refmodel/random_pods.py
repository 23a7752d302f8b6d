"""Seeded random pods and Deployments for the differential test (run.py), and the policies they
are judged under. Everything is drawn from classes that matter to the rules: GPU quantities in
many spellings, MIG resources of valid and invalid profiles, DRA device classes asked for as
extended resources, device env vars, envFrom prefixes,
host paths from the SPEC's list in various spellings and their harmless neighbours, pool
targeting through nodeSelector and node affinity, tolerations, tenant labels, privileged
containers of every kind, host namespaces, and namespaces of each tenant, exempt and unmapped.
"""

import copy
import random

POOL_KEY = "gpu.example.com/pool"
# The relaxed policy's spec.gpuEnvVars (without the "A_" of the built-in names); other policies
# leave them alone.
POLICY_ENV = ["SITE_GPU_DEVICES", "HAMI_OFF"]

# The fixed policy: three tenants, four pools, in the policy file's shapes.
MAIN_POLICY = {
    "apiVersion": "gpu-admission.io/v1alpha1",
    "kind": "GpuAdmissionPolicy",
    "metadata": {"name": "refmodel-main"},
    "spec": {
        "exemptions": {"namespaces": ["kube-system", "gpu-operator", "infra-*"], "usernames": []},
        "gpuResources": {"full": ["nvidia.com/gpu"], "migPrefix": "nvidia.com/mig-",
                         "shared": ["nvidia.com/gpu.shared"],
                         "fractional": ["nvidia.com/gpumem", "nvidia.com/gpucores"]},
        "defaults": {
            "maxGpusPerPod": 2,
            "unmappedGpuPods": "deny",
            "gpuTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        "rules": {r: "deny" for r in ("privileged", "host-namespaces", "gpu-device-access", "gpu-cap",
                                      "mps-adversarial", "gpu-tolerations", "tenant-pool",
                                      "tenant-label", "mig-profile", "gpu-sharing")},
        "mutations": {"mig-resources": True, "tenant-labels": True, "pool-selector": True,
                      "hide-gpus": True},
        "pools": [
            {"name": "a100-secure", "nodeSelector": {POOL_KEY: "a100-secure"},
             "trust": "adversarial", "gpuModel": "A100-SXM4-80GB",
             "mig": {"strategy": "mixed", "defaultProfile": "1g.10gb"}, "sharing": "none",
             "taints": [{"key": POOL_KEY, "value": "a100-secure", "effect": "NoSchedule"}]},
            {"name": "h100-shared", "nodeSelector": {POOL_KEY: "h100-shared"},
             "trust": "cooperative", "gpuModel": "H100-SXM5-80GB", "sharing": "mps",
             "taints": [{"key": POOL_KEY, "value": "h100-shared", "effect": "NoSchedule"}]},
            {"name": "a100-inference", "nodeSelector": {POOL_KEY: "a100-inference"},
             "trust": "cooperative", "gpuModel": "A100-SXM4-40GB",
             "mig": {"strategy": "single", "defaultProfile": "3g.20gb"},
             "taints": [{"key": "gpu.example.com/inference", "effect": "NoSchedule"}]},
            {"name": "a30-lab",
             "nodeSelector": {"gpu.example.com/accelerator": "a30", "gpu.example.com/zone": "lab"},
             "trust": "adversarial", "gpuModel": "A30-24GB",
             "mig": {"strategy": "mixed", "defaultProfile": "2g.12gb"}, "sharing": "none",
             "taints": [{"key": "gpu.example.com/zone", "value": "lab",
                         "effect": "PreferNoSchedule"}]},
            # MIG on newer models: the RTX PRO 6000 Blackwell (4 compute slices, +gfx, +me.all and
            # -me profiles) and the B300 (single strategy: the product label names the profile).
            {"name": "rtx-pro", "nodeSelector": {POOL_KEY: "rtx-pro"},
             "trust": "adversarial", "gpuModel": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
             "mig": {"strategy": "mixed", "defaultProfile": "1g.24gb"}, "sharing": "none"},
            {"name": "b300", "nodeSelector": {POOL_KEY: "b300"},
             "trust": "cooperative", "gpuModel": "NVIDIA-B300-SXM6-AC",
             "mig": {"strategy": "single", "defaultProfile": "2g.67gb"}},
        ],
        "tenants": [
            {"name": "alpha", "namespaces": ["team-alpha", "alpha-*"],
             "labels": {"cost-center": "cc-1042"}, "maxGpusPerPod": 4,
             "pools": ["a100-secure", "a30-lab", "rtx-pro"], "defaultPool": "a100-secure"},
            {"name": "beta", "namespaces": ["team-beta", "beta-*", "*-ml"],
             "labels": {"cost-center": "cc-2001", "team": "beta"},
             "pools": ["h100-shared", "a100-inference", "b300"], "defaultPool": "h100-shared"},
            {"name": "gamma", "namespaces": ["gamma"], "maxGpusPerPod": 1, "pools": []},
        ],
    },
}


def relaxed_policy():
    """Mutations partly off, some rules warn/audit/off, unmapped GPU pods allowed, no default cap,
    an adversarial MPS pool, a tenant with pools but no defaultPool, extra host paths, env names
    and annotation prefixes (replacing the default list)."""
    p = copy.deepcopy(MAIN_POLICY)
    s = p["spec"]
    p["metadata"]["name"] = "refmodel-relaxed"
    s["defaults"] = {
        "unmappedGpuPods": "allow",
        "gpuTaints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                      {"key": "gpu.example.com/dedicated", "value": "ml", "effect": "NoExecute"}],
    }
    s["rules"].update({"privileged": "off", "host-namespaces": "warn", "tenant-label": "audit"})
    s["mutations"] = {"mig-resources": False, "tenant-labels": False, "pool-selector": True,
                      "hide-gpus": False}
    s["gpuHostPaths"] = ["/opt/gpu-tools", "/home/kubernetes/bin/nvidia"]
    # vfio.gpu.nvidia.com is no GPU class here; nic.example.com hands out MIG devices
    s["deviceClasses"] = {"full": ["gpu.nvidia.com"], "mig": ["mig.nvidia.com", "nic.example.com"]}
    s["deviceAnnotationPrefixes"] = ["cdi.k8s.io/", "devices.example.com/"]
    s["gpuEnvVars"] = POLICY_ENV
    s["gpuSharingAnnotations"] = ["gpu-fraction", "example.com/gpu-share"]
    a30 = s["pools"][3]
    a30.pop("mig")
    a30["sharing"] = "mps"
    # Runtime classes: a global list, a pool that replaces it, a pool whose empty list inherits it.
    s["runtimeClasses"] = ["nvidia", "kata-nvidia"]
    a30["runtimeClasses"] = ["kata-nvidia"]
    s["pools"][2]["runtimeClasses"] = []
    del s["tenants"][1]["defaultPool"]
    return p


def noselector_policy():
    """pool-selector off (unpinned GPU pods stay unpinned), hide-gpus off, gpu-cap on warn, the
    adversarial A30 pool shared by time-slicing, one pool's runtime classes without a global list."""
    p = copy.deepcopy(MAIN_POLICY)
    p["metadata"]["name"] = "refmodel-noselector"
    p["spec"]["mutations"]["pool-selector"] = False
    p["spec"]["rules"]["gpu-cap"] = "warn"
    p["spec"]["pools"][3]["sharing"] = "time-slicing"
    p["spec"]["pools"][1]["runtimeClasses"] = ["nvidia"]   # a pool list without a global one
    p["spec"]["gpuSharingAnnotations"] = []                 # annotations judged by no rule
    return p


POLICIES = {"main": MAIN_POLICY, "relaxed": relaxed_policy(), "noselector": noselector_policy()}

NAMESPACES = ["team-alpha", "alpha-dev", "alpha-ml", "team-beta", "beta-x", "research-ml", "gamma",
              "kube-system", "gpu-operator", "infra-ml", "default", "research", "gamma-2"]
NAMESPACE_WEIGHTS = [14, 6, 3, 12, 5, 4, 6, 2, 1, 1, 5, 3, 1]

GPU_QUANTITIES = ["1", 1, "2", 2, "3", 4, "0", 0, "500m", "999900u", "1e3", "1k", "1.5", "8",
                  "2000m", "0.5", 1.5, "3e0", "0m", "1e100", "8Ei", "2Ki", "1000000000n", "5",
                  "1.0", "+2", "0.1e1", "5e-1", "1E3", 2.0, "1000m", "0.0", "4", "1001m", "1n", "1u",
                  "0.000000001"]
GPU_QUANTITY_WEIGHTS = [20, 14, 8, 6, 3, 3, 5, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                        1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1]
MIG_PROFILES = ["1g.10gb", "1g.10gb.me", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.20gb",
                "1g.5gb", "3g.20gb", "2g.10gb", "7g.40gb", "1g.6gb", "2g.12gb", "4g.24gb",
                "2g.12gb.me", "5g.50gb", "1g.12gb", "big", "8g.96gb"]
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# GPU classes of the default deviceClasses, a class that hands out no GPUs, a wrong spelling
DEVICE_CLASSES = ["gpu.nvidia.com", "vfio.gpu.nvidia.com", "mig.nvidia.com", "nic.example.com",
                  "GPU.nvidia.com"]
# Profiles of the newer tables (attributes included) and near misses: +me.all where the model has
# none, +me where the RTX PRO has only -me, a B200 profile on a GB200.
NEW_MIG_PROFILES = ["1g.24gb", "1g.24gb.gfx", "1g.24gb.me.all", "1g.24gb-me", "1g.24gb.me", "2g.48gb",
                    "2g.48gb.gfx", "2g.48gb.me.all", "2g.48gb-me", "2g.48gb.me", "4g.96gb", "4g.96gb.gfx",
                    "4g.96gb.me.all", "1g.34gb", "1g.34gb.me", "1g.34gb.me.all", "2g.67gb", "7g.269gb",
                    "1g.35gb.me", "1g.47gb", "1g.45gb", "3g.139gb", "1g.23gb.gfx"]
# Scheduler GPU shares by annotation (KAI, Run:ai) and near misses (prefixed, other case, .limit).
SHARING_ANNOTATIONS = ["gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "example.com/gpu-share",
                       "kai.scheduler/gpu-fraction", "run.ai/gpu-fraction", "GPU-Fraction", "gpu-fraction.limit",
                       "gpu-fractions"]
MIG_COUNTS = ["1", 1, "2", 3, "0", 7, 28, 29, "14", "500m", 10, 16, 17, "2.0", "1500m"]
HOST_PATHS = [
    # the SPEC list, in various spellings
    "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-caps/nvidia-cap1",
    "/dev/../dev//nvidia0", "/dev/dri", "/dev/dri/card0", "/dev/vfio/", "/dev/char",
    "/var/run/nvidia-container-devices", "/run/nvidia-container-devices/x", "/run/nvidia",
    "/run/nvidia-persistenced/socket", "/var/run/nvidia/driver", "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/device-plugins/kubelet.sock", "/var/lib/kubelet/plugins/gpu.nvidia.com",
    "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/pod-resources/", "/etc/cdi",
    "/etc/cdi/nvidia.yaml", "/var/run/cdi", "/run/cdi", "/etc/nvidia-container-runtime/config.toml",
    "/etc/nvidia-container-toolkit", "/usr/local/nvidia/lib64", "/proc", "/proc/1/root",
    "/", "/dev", "/run", "/var", "/var/lib", "/var/lib/kubelet", "/etc", "/usr", "/usr/local",
    "/var/run", "/var/run/", "//", "/./dev", "/var/run/../etc/cdi", "/var/lib/../run/nvidia",
    "/usr/local/./nvidia", "dev/nvidia0", "/sys/bus/pci", "/sys", "/run/containerd/containerd.sock",
    "/var/run/docker.sock", "/dev/fd", "/tmp/../dev/dri", "/etc/./cdi/../cdi",
    # MPS pipe directories
    "/tmp/nvidia-mps", "/tmp/nvidia-mps/pipe", "/run/nvidia/mps", "/var/run/nvidia/mps/", "/tmp",
    # policy extras (relaxed policy)
    "/opt/gpu-tools", "/opt/gpu-tools/bin", "/home/kubernetes/bin/nvidia", "/home/kubernetes",
    # '..' and '.' tricks, resolved lexically (/var/run folded to /run as the walk meets it)
    "/var/run/..", "/var/lib/kubelet/..", "/dev/nvidia0/../../etc", "/run/nvidia-foo", "/dev/nvidiafoo",
    "/var/run/nvidia/mps/../../containerd", "/tmp/nvidia-mps/..", "/proc/..", "/etc/cdi/..",
    "/dev/dri/../shm", "/sys/../dev/shm", "/var/./run/./cdi/", "/usr/local/nvidia-foo", "/var/tmp/nvidia-mps",
    "/var/lib/kubelet/plugins/../pods", "/home/kubernetes/bin/../bin/nvidia/x", "/opt/gpu-tools/../data",
    "/run/../var/log", "///dev///char///x",
    # harmless neighbours
    "/dev/shm", "/etc/ssl/certs", "/usr/local/cuda", "/var/log", "/data", "/home/user", "/opt/nvidia",
    "/dev/nvme0n1", "/dev/dri2", "/etc/cdi-backup", "/var/lib/kubelet/pods", "/procfoo", "/system",
    "/run/user/1000", "/var/lib/docker-data", "/usr/lib/x86_64-linux-gnu", "/var/runx",
    "/opt/gpu-toolsx", "/tmp/nvidia-mpsx", "/var/lib/kubelet/plugins_registryx",
]
DEVICE_ENV = ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
              "NVIDIA_IMEX_CHANNELS", "NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY",
              "CUDA_DISABLE_CONTROL"]
HARMLESS_ENV = ["PATH", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE",
                "NVIDIA_VISIBLE_DEVICES_X", "nvidia_visible_devices", "CUDA_MPS", "CUDA_MPSX",
                "MY_CUDA_MPS_PIPE", "NVIDIA_GDS_VERSION", "CUDA_DISABLE", "MY_NVIDIA_MOFED",
                "SITE_GPU_DEVICES_X", "HAMI_OF"]
ENVFROM_PREFIXES = [None, "", "APP_", "N", "NV", "NVIDIA_", "NVIDIA_VISIBLE_", "NVIDIA_VISIBLE_DEVICES",
                    "NVIDIA_IMEX_CHANNEL", "NVIDIA_MIG_", "NVIDIA_IMEX_CHANNELS", "C", "CUDA_",
                    "CUDA_MPS", "CUDA_MPS_", "CUDA_MPS_PIPE_", "CUDA_X", "nvidia_", "NVIDIA_GD",
                    "NVIDIA_GDS", "CUDA_DISABLE_CONTROL", "CUDA_D", "SITE_", "SITE_GPU_DEVICES", "H"]
# Container mount paths: the toolkit's device list in several spellings, and neighbours.
MOUNT_PATHS = ["/var/run/nvidia-container-devices/all", "/run/nvidia-container-devices",
               "/var/run/nvidia-container-devices", "/var/lib/../run//./nvidia-container-devices/GPU-0/",
               "/var/run/nvidia-container-devicesall", "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all",
               "var/run/nvidia-container-devices/imex/0",
               "/var/run/nvidia-container-device", "/var/run/nvidia-container-devices/..",
               "/var/run/nvidia-container-devices/../secrets", "/data/nvidia-container-devices/all",
               "/var/run/secrets/kubernetes.io/serviceaccount", "/var/run", "/data", "/dev/shm"]


def _w(rng, items, weights=None):
    return rng.choices(items, weights=weights, k=1)[0]


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        # Draws for classes added later (device list mounts, the policy's env names, NRI
        # annotations) come from their own stream: the main stream, and so every object it drew
        # before, stays as it was (one random() per choice, whatever the list's length).
        self.later = random.Random(seed + 7919)
        self.dra_rng = random.Random(f"{seed}-device-classes")
        self.runtime_rng = random.Random(seed * 7919 + 17)
        # Isolation v4 (newer MIG models, sharing annotations): a stream of its own.
        self.v4 = random.Random(f"{seed}-isolation-v4")
        self.n = 0

    # --- resources -----------------------------------------------------------------------------
    def gpu_resources(self):
        r = self.rng
        out = {}
        roll = r.random()
        if roll < 0.45:
            return None
        if roll < 0.80:
            out["nvidia.com/gpu"] = _w(r, GPU_QUANTITIES, GPU_QUANTITY_WEIGHTS)
        elif roll < 0.88:
            out["nvidia.com/gpu.shared"] = _w(r, GPU_QUANTITIES, GPU_QUANTITY_WEIGHTS)
        else:
            out["nvidia.com/mig-" + _w(r, MIG_PROFILES)] = _w(r, MIG_COUNTS)
        if r.random() < 0.15:
            # a second MIG type, or a MIG entry beside the whole GPU (mig-resources adds to it)
            out["nvidia.com/mig-" + _w(r, MIG_PROFILES[:8])] = _w(r, ["1", 2, "0", 0, "3"])
        if r.random() < 0.05:
            out["nvidia.com/gpu.shared"] = _w(r, ["1", "0", 2])
        self.device_class_resources(0.08, out)
        if r.random() < 0.04:
            out[_w(r, ["amd.com/gpu", "nvidia.com/gpu-memory", "example.com/fpga", "nvidia.com/gpus"])] = 1
        if self.v4.random() < 0.08:
            out["nvidia.com/mig-" + _w(self.v4, NEW_MIG_PROFILES)] = _w(self.v4, MIG_COUNTS)
        if r.random() < 0.05:
            # a sharing layer's fraction (gpuResources.fractional): a GPU pod, no GPUs counted
            out[_w(r, ["nvidia.com/gpumem", "nvidia.com/gpucores"])] = _w(r, ["4000", 30, "0", "1.5", "1e100"])
        return out

    def device_class_resources(self, chance, out):
        """With probability `chance`, a DRA device class asked for as an extended resource
        (Kubernetes 1.34+) in `out`. Drawn from a stream of its own, so that the other draws, and
        the objects they make, are those of the generator before device classes."""
        d = self.dra_rng
        if d.random() < chance:
            out[DEVICE_CLASS_PREFIX + _w(d, DEVICE_CLASSES)] = _w(d, GPU_QUANTITIES, GPU_QUANTITY_WEIGHTS)
        return out

    def resources(self):
        r = self.rng
        gpu = self.gpu_resources()
        res = {}
        if r.random() < 0.4:
            res["requests"] = {"cpu": "100m", "memory": "1Gi"}
            res["limits"] = {"memory": "1Gi"}
        if gpu is None:
            # a pod whose only GPUs are a device class's (in limits, requests or both)
            only = self.device_class_resources(0.06, {})
            for section in [["limits"], ["requests"], ["limits", "requests"]][self.dra_rng.randrange(3)] if only else []:
                res.setdefault(section, {}).update(only)
            return res or None
        shape = r.random()
        if shape < 0.75:
            res.setdefault("limits", {}).update(gpu)
        elif shape < 0.90:
            res.setdefault("limits", {}).update(gpu)
            res.setdefault("requests", {}).update(copy.deepcopy(gpu))
        elif shape < 0.92:
            # requests and limits that differ (the API server refuses it; check counts the larger)
            res.setdefault("limits", {}).update(gpu)
            res.setdefault("requests", {}).update({k: _w(r, ["1", "2", "0", 3]) for k in gpu})
        else:
            res.setdefault("requests", {}).update(gpu)   # requests only (counts the same)
        return res

    # --- env ---------------------------------------------------------------------------------
    def env(self, gpu_container):
        r = self.rng
        out = []
        if r.random() < 0.3:
            out.append({"name": "PATH", "value": "/usr/bin"})
        roll = r.random()
        if roll < 0.12:
            out.append({"name": "NVIDIA_VISIBLE_DEVICES",
                        "value": _w(r, ["void", "void", "all", "none", "VOID", "0", "void,0", ""])})
        elif roll < 0.15:
            out.append({"name": "NVIDIA_VISIBLE_DEVICES",
                        "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "devices"}}})
        elif roll < 0.20:
            out.append({"name": _w(r, DEVICE_ENV[1:]), "value": _w(r, ["all", "0", "void"])})
        elif roll < 0.28:
            out.append({"name": _w(r, HARMLESS_ENV), "value": "x"})
        elif roll < 0.32:
            out.append({"name": _w(r, ["CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                                       "CUDA_MPS_"]), "value": "/tmp/nvidia-mps"})
        elif roll < 0.35:
            e = {"name": _w(self.later, POLICY_ENV)}
            if self.later.random() < 0.5:
                e["value"] = "all"
            else:
                e["valueFrom"] = {"secretKeyRef": {"name": "s", "key": "k"}}
            out.append(e)
        if r.random() < 0.03:
            # a duplicate after void
            out.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})
            out.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
        return out or None

    def env_from(self):
        r = self.rng
        if r.random() < 0.85:
            return None
        out = []
        for _ in range(r.randint(1, 2)):
            e = {_w(r, ["configMapRef", "secretRef"]): {"name": "src"}}
            p = _w(r, ENVFROM_PREFIXES)
            if p is not None:
                e["prefix"] = p
            out.append(e)
        return out

    def container(self, name, kind):
        r = self.rng
        c = {"name": name, "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"}
        if kind != "ephemeralContainers":
            res = self.resources()
            if res:
                c["resources"] = res
        if kind == "initContainers" and r.random() < 0.4:
            c["restartPolicy"] = "Always"
        env = self.env(False)
        if env:
            c["env"] = env
        ef = self.env_from()
        if ef:
            c["envFrom"] = ef
        if self.later.random() < 0.1:
            c["volumeMounts"] = [{"name": "scratch", "mountPath": _w(self.later, MOUNT_PATHS)}
                                 for _ in range(_w(self.later, [1, 2], [3, 1]))]
        roll = r.random()
        if roll < 0.04:
            c["securityContext"] = {"privileged": True}
        elif roll < 0.08:
            c["securityContext"] = {"privileged": False, "runAsNonRoot": True}
        return c

    # --- pool targeting ------------------------------------------------------------------------
    def pool_values(self):
        return ["a100-secure", "h100-shared", "a100-inference", "bogus"]

    def a30_sel(self):
        return {"gpu.example.com/accelerator": "a30", "gpu.example.com/zone": "lab"}

    def term(self, value):
        r = self.rng
        if value == "a30":
            exprs = [{"key": "gpu.example.com/accelerator", "operator": "In", "values": ["a30"]},
                     {"key": "gpu.example.com/zone", "operator": "In", "values": ["lab"]}]
            if r.random() < 0.2:
                exprs = exprs[:1]          # only one of the pool's two keys
        elif value is None:
            exprs = [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
        else:
            exprs = [{"key": POOL_KEY, "operator": "In", "values": [value]}]
        if r.random() < 0.2:
            exprs.append({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]})
        return {"matchExpressions": exprs}

    def targeting(self, spec):
        r = self.rng
        values = self.pool_values() + ["a30"]
        roll = r.random()
        ns = {}
        terms = None
        if roll < 0.33:
            pass
        elif roll < 0.63:
            v = _w(r, values, [5, 5, 4, 1, 3])
            ns.update(self.a30_sel() if v == "a30" else {POOL_KEY: v})
            if v == "a30" and r.random() < 0.15:
                ns.pop("gpu.example.com/zone")
        elif roll < 0.73:
            terms = [self.term(_w(r, values))]
        elif roll < 0.78:
            v = _w(r, values)
            terms = [self.term(v), self.term(v)]
        elif roll < 0.82:
            terms = [self.term(_w(r, values)), self.term(_w(r, values))]
        elif roll < 0.85:
            terms = [self.term(_w(r, values)), self.term(None)]      # one term escapes the pool
        elif roll < 0.90:
            v = _w(r, values)
            ns.update(self.a30_sel() if v == "a30" else {POOL_KEY: v})
            terms = [self.term(_w(r, values + [None]))]
        elif roll < 0.93:
            terms = [{"matchExpressions": [{"key": POOL_KEY, "operator": "In",
                                            "values": r.sample(self.pool_values(), 2)}]}]
        elif roll < 0.96:
            ns.update({POOL_KEY: _w(r, self.pool_values()[:3])})
            ns.update(self.a30_sel())                               # two pools in the selector
        else:
            spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": self.term(_w(r, values))}]}}
        if r.random() < 0.05:
            ns["nvidia.com/gpu.sharing-strategy"] = _w(r, ["mps", "time-slicing", "none"])
        if r.random() < 0.03:
            ns[_w(r, ["nvidia.com/mps.capable", "nvidia.com/gpu.replicas"])] = _w(r, ["true", "4", "1"])
        if r.random() < 0.06:
            ns["nvidia.com/gpu.product"] = _w(r, ["A100-SXM4-40GB-MIG-3g.20gb", "A100-SXM4-40GB-MIG-1g.5gb",
                                                  "A100-SXM4-40GB-MIG-1g.5gb.me", "A100-SXM4-40GB",
                                                  "A100-SXM4-40GB-MIG-1g.10gb.me",
                                                  "A100-SXM4-80GB-MIG-1g.10gb", "A100-SXM4-80GB-SHARED",
                                                  "H100-SXM5-80GB-shared"])
        if r.random() < 0.05:
            ns["kubernetes.io/arch"] = "amd64"
        v = self.v4
        if v.random() < 0.10:
            ns[POOL_KEY] = _w(v, ["rtx-pro", "b300"])
            if v.random() < 0.4:
                ns["nvidia.com/gpu.product"] = _w(v, ["NVIDIA-B300-SXM6-AC-MIG-2g.67gb", "NVIDIA-B300-SXM6-AC-MIG-1g.34gb.me",
                                                      "NVIDIA-B300-SXM6-AC-MIG-1g.34gb+me", "NVIDIA-B300-SXM6-AC",
                                                      "NVIDIA-B300-SXM6-AC-MIG-1g.24gb"])
        if ns:
            spec["nodeSelector"] = ns
        if terms is not None:
            if r.random() < 0.03:
                terms[0]["matchExpressions"].append(
                    {"key": "nvidia.com/gpu.sharing-strategy", "operator": "In", "values": ["mps"]})
            if r.random() < 0.06:
                # node constraints on the sharing labels, any operator, in any ORed term
                key = _w(r, ["nvidia.com/gpu.sharing-strategy", "nvidia.com/mps.capable",
                             "nvidia.com/gpu.replicas", "nvidia.com/gpu.product"])
                op, values = _w(r, [("In", ["none"]), ("NotIn", ["none"]), ("Exists", None),
                                    ("DoesNotExist", None), ("Gt", ["1"]), ("In", ["mps"]),
                                    ("In", ["A100-SXM4-80GB", "A100-SXM4-80GB-SHARED"]),
                                    ("NotIn", ["A100-SXM4-80GB-SHARED"])])
                expr = {"key": key, "operator": op}
                if values is not None:
                    expr["values"] = values
                _w(r, terms)["matchExpressions"].append(expr)
            if self.later.random() < 0.15:
                # the product label under every operator (gpu-sharing: all but In and DoesNotExist
                # can select a -SHARED node), spellings the API server refuses included
                op, values = _w(self.later, [("In", ["A100-SXM4-80GB"]), ("In", ["H100-SXM5-80GB-SHARED"]),
                                             ("NotIn", ["A100-SXM4-80GB"]), ("Exists", None),
                                             ("DoesNotExist", None), ("Gt", ["1"]), ("Lt", ["100"]),
                                             ("notin", ["A100-SXM4-80GB"]), (None, ["A100-SXM4-80GB"])])
                expr = {"key": "nvidia.com/gpu.product"}
                if op is not None:
                    expr["operator"] = op
                if values is not None:
                    expr["values"] = values
                _w(self.later, terms)["matchExpressions"].append(expr)
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms}}}

    # --- tolerations ---------------------------------------------------------------------------
    ALL_TAINTS = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"key": "gpu.example.com/dedicated", "value": "ml", "effect": "NoExecute"},
        {"key": POOL_KEY, "value": "a100-secure", "effect": "NoSchedule"},
        {"key": POOL_KEY, "value": "h100-shared", "effect": "NoSchedule"},
        {"key": "gpu.example.com/inference", "effect": "NoSchedule"},
        {"key": "gpu.example.com/zone", "value": "lab", "effect": "PreferNoSchedule"},
    ]

    def toleration_for(self, taint):
        r = self.rng
        roll = r.random()
        t = {"key": taint["key"]}
        if roll < 0.45:
            t["operator"] = "Equal"
            t["value"] = taint.get("value", "")
            if not t["value"] and r.random() < 0.5:
                del t["value"]
            t["effect"] = taint["effect"]
        elif roll < 0.6:
            t["operator"] = "Exists"
            if r.random() < 0.5:
                t["effect"] = taint["effect"]
        elif roll < 0.68:
            if taint.get("value"):
                t["value"] = taint["value"]      # operator left out: Equal
        elif roll < 0.76:
            t["operator"] = "Equal"
            t["value"] = "wrong"
        elif roll < 0.84:
            t["operator"] = "Exists"
            t["effect"] = _w(r, ["NoExecute", "NoSchedule", "PreferNoSchedule"])
        elif roll < 0.90:
            t = {"operator": "Exists"}           # tolerates everything
            if r.random() < 0.3:
                t["effect"] = taint["effect"]
        elif roll < 0.95:
            t = {"operator": "Equal", "value": taint.get("value", "")}   # empty key with Equal
        else:
            t["key"] = taint["key"].upper()
            t["operator"] = "Exists"
        if r.random() < 0.05:
            t["tolerationSeconds"] = 30
        return t

    def tolerations(self):
        r = self.rng
        if r.random() < 0.25:
            return None
        picked = [t for t in self.ALL_TAINTS if r.random() < 0.55]
        out = [self.toleration_for(t) for t in picked]
        if r.random() < 0.2:
            out.append({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                        "effect": "NoExecute", "tolerationSeconds": 300})
        r.shuffle(out)
        return out or None

    # --- metadata ------------------------------------------------------------------------------
    def labels(self):
        r = self.rng
        out = {"app": "train"}
        roll = r.random()
        if roll < 0.15:
            out["gpu-admission.io/tenant"] = _w(r, ["alpha", "beta", "gamma"])
        if r.random() < 0.15:
            out["cost-center"] = _w(r, ["cc-1042", "cc-2001", "cc-9999", ""])
        if r.random() < 0.05:
            out["team"] = _w(r, ["beta", "alpha"])
        return out

    def annotations(self):
        r = self.rng
        out = {}
        roll = r.random()
        if roll < 0.05:
            out[_w(r, ["cdi.k8s.io/gpu", "cdi.k8s.io/x", "devices.example.com/gpu"])] = "nvidia.com/gpu=all"
        elif roll < 0.08:
            out[_w(r, ["CDI.k8s.io/gpu", "cdi.k8s.io", "example.com/cdi.k8s.io/x"])] = "x"
        elif roll < 0.12:
            # the default list's other prefixes and bare keys, and near misses
            out[_w(self.later, ["nvidia.cdi.k8s.io/container.main", "nvidia.cdi.k8s.io/pod", "nvidia.cdi.k8s.io",
                       "devices.noderesource.dev/container.main", "cdi-devices.noderesource.dev/pod",
                       "devices.nri.io/pod", "cdi-devices.nri.io/container.main", "devices.example.com",
                       "nvidia.cdi.k8s.io.example/x", "nvidia.cdi.k8s.iox", "noderesource.dev/devices",
                       "devices.example.comx/y",
                       # NRI's host mounts and CRI-O's device list, and near misses
                       "mounts.noderesource.dev/container.main", "mounts.noderesource.dev", "mounts.nri.io/pod",
                       "mounts.nri.io", "io.kubernetes.cri-o.Devices", "io.kubernetes.cri-o.Devices/x",
                       "mounts.nri.io.example.com/x", "io.kubernetes.cri-o.devices",
                       "io.kubernetes.cri-o.Device", "example.com/mounts.nri.io"])] = "nvidia.com/gpu=all"
        if r.random() < 0.12:
            out["gpu-admission.io/mig-profile"] = _w(
                r, ["2g.20gb", "3g.40gb", "1g.10gb+me", "1g.10gb.me", "1g.5gb", "3g.20gb", "1g.6gb",
                    "2g.12gb+me", "9g.90gb", "4g.24gb", "7g.40gb"])
        if r.random() < 0.2:
            out["example.com/owner"] = "ml-team"
        v = self.v4
        if v.random() < 0.12:
            out[_w(v, SHARING_ANNOTATIONS)] = _w(v, ["0.5", "4000", "2", ""])
        if v.random() < 0.04:
            out["gpu-admission.io/mig-profile"] = _w(v, ["1g.24gb+gfx", "1g.24gb+me.all", "1g.24gb-me", "2g.48gb+me",
                                                         "2g.67gb", "1g.34gb+me", "1g.24gb.gfx"])
        return out or None

    # --- pods ----------------------------------------------------------------------------------
    def pod_spec(self, allow_ephemeral):
        r = self.rng
        spec = {}
        n_init = _w(r, [0, 1, 2], [6, 3, 1])
        if n_init:
            spec["initContainers"] = [self.container(f"init{i}", "initContainers")
                                      for i in range(n_init)]
        spec["containers"] = [self.container("main" if i == 0 else f"side{i}", "containers")
                              for i in range(_w(r, [1, 2, 3], [6, 3, 1]))]
        if allow_ephemeral and r.random() < 0.06:
            spec["ephemeralContainers"] = [self.container("debugger", "ephemeralContainers")]
        for f in ("hostPID", "hostIPC", "hostNetwork"):
            if r.random() < 0.03:
                spec[f] = True
            elif r.random() < 0.02:
                spec[f] = False
        if r.random() < 0.2:
            vols = [{"name": "scratch", "emptyDir": {}}]
            for i in range(_w(r, [1, 2], [4, 1])):
                hp = {"path": _w(r, HOST_PATHS)}
                if r.random() < 0.2:
                    hp["type"] = _w(r, ["Directory", "CharDevice", "DirectoryOrCreate", ""])
                vols.append({"name": f"host{i}", "hostPath": hp})
            spec["volumes"] = vols
        self.targeting(spec)
        tol = self.tolerations()
        if tol:
            spec["tolerations"] = tol
        rt = self.runtime_rng
        if rt.random() < 0.35:
            spec["runtimeClassName"] = _w(rt, ["nvidia", "kata-nvidia", "runc", "nvidia-cdi", "", None],
                                          [5, 4, 3, 1, 1, 1])
        return spec

    def next(self):
        """One object: a Pod (80%) or a workload (Deployment, StatefulSet, DaemonSet, Job, CronJob),
        with metadata.namespace set."""
        r = self.rng
        self.n += 1
        ns = _w(r, NAMESPACES, NAMESPACE_WEIGHTS)
        name = f"obj-{self.n}"
        labels = self.labels()
        annotations = self.annotations()
        if r.random() < 0.8:
            meta = {"name": name, "namespace": ns, "labels": labels}
            if annotations:
                meta["annotations"] = annotations
            return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": self.pod_spec(True)}
        tmeta = {"labels": labels}
        if annotations:
            tmeta["annotations"] = annotations
        template = {"metadata": tmeta, "spec": self.pod_spec(False)}
        kind = _w(r, ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"], [6, 1, 1, 1, 1])
        meta = {"name": name, "namespace": ns}
        if kind == "Job":
            template["spec"]["restartPolicy"] = "Never"
            return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                    "spec": {"backoffLimit": 2, "template": template}}
        if kind == "CronJob":
            template["spec"]["restartPolicy"] = "OnFailure"
            return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                    "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}}
        spec = {"selector": {"matchLabels": {"app": "train"}}, "template": template}
        if kind != "DaemonSet":
            spec["replicas"] = r.randint(1, 8)
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def directed_cases():
    """Hand-written objects for the spec's sentences that random draws may hit rarely. Each is
    judged like the random ones (by the model, not by a hard-coded answer)."""
    tol_all = [{"operator": "Exists"}]
    a100 = {POOL_KEY: "a100-secure"}
    a30 = {"gpu.example.com/accelerator": "a30", "gpu.example.com/zone": "lab"}
    alpha_labels = {"gpu-admission.io/tenant": "alpha", "cost-center": "cc-1042"}

    def c(name="main", limits=None, **kw):
        out = {"name": name, "image": "cuda"}
        if limits is not None:
            out["resources"] = {"limits": limits}
        out.update(kw)
        return out

    def pod(name, ns, containers, labels=None, annotations=None, **spec):
        meta = {"name": name, "namespace": ns, "labels": dict(labels or {})}
        if annotations:
            meta["annotations"] = annotations
        spec = dict(spec)
        spec["containers"] = containers
        spec.setdefault("tolerations", tol_all)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def required_terms(*terms):
        """Required node affinity: ORed terms, each one `In` expression [key, value...]."""
        exprs = [{"matchExpressions": [{"key": t[0], "operator": "In", "values": list(t[1:])}]} for t in terms]
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": exprs}}}

    sidecar = c("sidecar", {"nvidia.com/gpu.shared": 1}, restartPolicy="Always")
    init4 = c("init", {"nvidia.com/gpu.shared": 4})
    app1 = c("main", {"nvidia.com/gpu.shared": 1})
    return [
        # exactness: 28 x 1g.10gb on a 7-slice model is exactly 4 GPUs; A30 has 4 slices
        pod("d-28-slices", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 28})], alpha_labels, nodeSelector=a100),
        pod("d-29-slices", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 29})], alpha_labels, nodeSelector=a100),
        pod("d-a30-16", "team-alpha", [c(limits={"nvidia.com/mig-1g.6gb": "16"})], alpha_labels, nodeSelector=a30),
        pod("d-a30-17", "team-alpha", [c(limits={"nvidia.com/mig-1g.6gb": "17"})], alpha_labels, nodeSelector=a30),
        # init / sidecar formula: a sidecar before an init container adds to it, after it does not
        pod("d-init-after-sidecar", "team-alpha", [app1], alpha_labels, nodeSelector=a100, initContainers=[sidecar, init4]),
        pod("d-init-before-sidecar", "team-alpha", [app1], alpha_labels, nodeSelector=a100, initContainers=[init4, sidecar]),
        # quantities: fractions are gpu-cap findings and count as their ceiling
        pod("d-999900u", "team-alpha", [c(limits={"nvidia.com/gpu": "999900u"})], alpha_labels, nodeSelector=a100),
        pod("d-1k", "team-alpha", [c(limits={"nvidia.com/gpu": "1k"})], alpha_labels, nodeSelector=a100),
        pod("d-zero", "team-alpha", [c(limits={"nvidia.com/gpu": "0"})], alpha_labels),
        # mig-resources: adding to an existing entry, the annotation's profile, an invalid annotation
        pod("d-add-to-mig", "team-alpha", [c(limits={"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": "1"})], alpha_labels, nodeSelector=a100),
        pod("d-add-to-zero-mig", "team-alpha", [c(limits={"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 0})], alpha_labels, nodeSelector=a100),
        pod("d-annotation-profile", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], alpha_labels,
            {"gpu-admission.io/mig-profile": "2g.20gb"}, nodeSelector=a100),
        pod("d-annotation-me", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], alpha_labels,
            {"gpu-admission.io/mig-profile": "1g.10gb+me"}, nodeSelector=a100),
        pod("d-annotation-invalid", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], alpha_labels,
            {"gpu-admission.io/mig-profile": "9g.90gb"}, nodeSelector=a100),
        pod("d-two-mig-one-zero", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 0})],
            alpha_labels, nodeSelector=a100),
        pod("d-two-mig", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 1})],
            alpha_labels, nodeSelector=a100),
        # single strategy: the product selector is added, never overwritten
        pod("d-single", "team-beta", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-single-wrong-product", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "a100-inference", "nvidia.com/gpu.product": "A100-SXM4-40GB"}),
        pod("d-single-me-product", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "a100-inference", "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb.me"}),
        # device env and host paths
        pod("d-void-cpu", "team-alpha", [c(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])], alpha_labels),
        pod("d-void-gpu", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1},
                                           env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])],
            alpha_labels, nodeSelector=a100),
        pod("d-var-run-dotdot", "team-alpha", [c()], alpha_labels,
            volumes=[{"name": "h", "hostPath": {"path": "/var/run/../etc/cdi"}}]),
        pod("d-usr-local-cuda", "team-alpha", [c()], alpha_labels,
            volumes=[{"name": "h", "hostPath": {"path": "/usr/local/cuda"}}]),
        # pools and tenants
        pod("d-unpinned-gpu", "team-alpha", [c(limits={"nvidia.com/gpu": 1})]),
        pod("d-unmapped-gpu", "default", [c(limits={"nvidia.com/gpu": 1})]),
        pod("d-unmapped-gpu-pool", "default", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-foreign-pool", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-cpu-in-foreign-pool", "team-alpha", [c()], nodeSelector={POOL_KEY: "h100-shared"}),
        # several pools named while the nodeSelector holds the tenant's default pool (beta's
        # h100-shared, no MIG) and a term also names a100-secure (mixed MIG, first in policy order):
        # mutations apply in the default pool, as on the second pass over a pod pool-selector pinned
        # there, and the rules judge the whole GPUs left in place in the first pool
        pod("d-two-pools-default-held", "team-beta",
            [c(limits={"nvidia.com/gpu": 1, "nvidia.com/mig-2g.20gb": 2})],
            annotations={"gpu-admission.io/mig-profile": "2g.20gb"}, nodeSelector={POOL_KEY: "h100-shared"},
            affinity=required_terms([POOL_KEY, "a100-secure", "h100-shared"])),
        pod("d-two-pools-default-held-cap", "team-beta", [c(limits={"nvidia.com/gpu": 3})],
            nodeSelector={POOL_KEY: "h100-shared"}, affinity=required_terms([POOL_KEY, "a100-secure"])),
        pod("d-two-pools-affinity-only", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            affinity=required_terms([POOL_KEY, "a100-secure", "h100-shared"])),
        pod("d-escapes-named-pool", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            affinity=required_terms([POOL_KEY, "a100-secure"], ["kubernetes.io/arch", "amd64"])),
        pod("d-exempt-privileged", "kube-system", [c(securityContext={"privileged": True})], hostPID=True),
        pod("d-glob-first-tenant", "alpha-ml", [c(limits={"nvidia.com/gpu": 1})]),
        pod("d-gamma-no-pools", "gamma", [c(limits={"nvidia.com/gpu": 1})]),
        pod("d-no-tolerations", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], alpha_labels, tolerations=[]),
        pod("d-key-only-taint", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                         {"key": POOL_KEY, "operator": "Exists"},
                         {"key": "gpu.example.com/dedicated", "operator": "Exists"},
                         {"key": "gpu.example.com/inference", "operator": "Equal", "effect": "NoSchedule"}],
            nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-mps-adversarial", "team-alpha", [c(limits={"nvidia.com/gpu": 1},
                                                  env=[{"name": "CUDA_MPS_PIPE_DIRECTORY", "value": "/tmp/x"}])],
            alpha_labels, nodeSelector=a100),
        # gpu-sharing: replicas and fractions in the adversarial pool, not in the cooperative one;
        # a fraction alone makes a GPU pod (pinned by pool-selector) that counts no GPUs
        pod("d-shared-adversarial", "team-alpha", [c(limits={"nvidia.com/gpu.shared": 1})], alpha_labels, nodeSelector=a100),
        pod("d-fraction-adversarial", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpumem": "4000"})],
            alpha_labels, nodeSelector=a100),
        pod("d-fraction-alone", "team-alpha", [c(limits={"nvidia.com/gpucores": 30})], alpha_labels),
        pod("d-fraction-cooperative", "team-beta", [c(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000})],
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-replicas-selector", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], alpha_labels,
            nodeSelector={POOL_KEY: "a100-secure", "nvidia.com/gpu.replicas": "2"}),
        pod("d-sharing-strategy-none", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], alpha_labels,
            nodeSelector={POOL_KEY: "a100-secure", "nvidia.com/gpu.sharing-strategy": "none"}),
        pod("d-sharing-strategy-notin-none", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], alpha_labels,
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": POOL_KEY, "operator": "In", "values": ["a100-secure"]},
                                      {"key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
                                       "values": ["none"]}]}]}}}),
        pod("d-wrong-tenant-label", "team-alpha", [c()], {"gpu-admission.io/tenant": "beta"}),
        pod("d-unmapped-tenant-label", "default", [c()], {"gpu-admission.io/tenant": "alpha"}),
        pod("d-unmapped-tenant-label-gpu", "default", [c(limits={"nvidia.com/gpu": 1})], {"gpu-admission.io/tenant": "alpha"}),
        # MIG profiles of a pod with no pool (gamma has none): their largest share on any model
        pod("d-nopool-a30-7", "gamma", [c(limits={"nvidia.com/mig-1g.6gb": 7})]),
        pod("d-nopool-a30-4", "gamma", [c(limits={"nvidia.com/mig-1g.6gb": 4})]),
        pod("d-nopool-a30-5", "gamma", [c(limits={"nvidia.com/mig-1g.6gb": 5})]),
        pod("d-nopool-1g10-7", "gamma", [c(limits={"nvidia.com/mig-1g.10gb": 7})]),
        pod("d-nopool-1g10-8", "gamma", [c(limits={"nvidia.com/mig-1g.10gb": 8})]),
        pod("d-nopool-unlisted", "gamma", [c(limits={"nvidia.com/mig-3g.30gb": 1})]),
        pod("d-nopool-unlisted-2", "gamma", [c(limits={"nvidia.com/mig-3g.30gb": 2})]),
        # DRA device classes as extended resources
        pod("d-class-full", "team-alpha", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1})], alpha_labels),
        pod("d-class-full-h100", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 3})],
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-class-mig", "team-alpha", [c(limits={"deviceclass.resource.kubernetes.io/mig.nvidia.com": 2})],
            alpha_labels, nodeSelector=a100),
        pod("d-class-nic", "default", [c(limits={"deviceclass.resource.kubernetes.io/nic.example.com": 5})]),
        pod("d-class-single", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com": 1})],
            nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-class-void", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1},
                                            env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])]),
        pod("d-class-sidecar", "team-beta", [app1], initContainers=[
            c("proxy", {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}, restartPolicy="Always")]),
        pod("d-privileged-ephemeral", "team-alpha", [c()], alpha_labels,
            ephemeralContainers=[c("debug", securityContext={"privileged": True})]),
        # a scheduler's GPU share by annotation: a GPU pod (pinned to the default pool), refused in
        # an adversarial pool, allowed in a cooperative one; prefixed keys are nobody's
        pod("d-kai-fraction-default-pool", "team-alpha", [c()], alpha_labels, {"gpu-fraction": "0.5"}),
        pod("d-kai-memory-secure", "team-alpha", [c()], alpha_labels, {"gpu-memory": "4000"}, nodeSelector=a100),
        pod("d-kai-devices-coop", "team-beta", [c()], None, {"gpu-fraction-num-devices": "2", "gpu-fraction": "0.5"},
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-kai-prefixed", "team-alpha", [c()], alpha_labels, {"kai.scheduler/gpu-fraction": "0.5"}, nodeSelector=a100),
        pod("d-kai-unmapped", "default", [c()], None, {"gpu-fraction": "0.5"}),
        # MIG on newer models: RTX PRO 6000 Blackwell (4 slices, attributes) and B300 (single)
        pod("d-rtx-gfx", "team-alpha", [c(limits={"nvidia.com/mig-1g.24gb.gfx": 4})], alpha_labels,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-me-all-5", "team-alpha", [c(limits={"nvidia.com/mig-1g.24gb.me.all": 5})], alpha_labels,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-no-me", "team-alpha", [c(limits={"nvidia.com/mig-2g.48gb-me": 2})], alpha_labels,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-2g-me", "team-alpha", [c(limits={"nvidia.com/mig-2g.48gb.me": 1})], alpha_labels,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-whole", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], alpha_labels,
            {"gpu-admission.io/mig-profile": "1g.24gb+gfx"}, nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-b300-single", "team-beta", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "b300"}),
        pod("d-b300-single-me", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "b300", "nvidia.com/gpu.product": "NVIDIA-B300-SXM6-AC-MIG-1g.34gb.me"}),
        pod("d-nopool-rtx-1g24", "gamma", [c(limits={"nvidia.com/mig-1g.24gb": 1})]),
        pod("d-nopool-rtx-4g96-gfx", "gamma", [c(limits={"nvidia.com/mig-4g.96gb.gfx": 1})]),
    ]


def generate(n, seed=20240601):
    """The directed cases, then seeded random objects: n in all."""
    g = Gen(seed)
    directed = directed_cases()[:n]
    return directed + [g.next() for _ in range(n - len(directed))]
