"""Seeded random pods and Deployments for the differential test (run.py), and the policies they
are judged under (gen_policies.py). Everything is drawn from classes that matter to the rules
(the values: gen_values.py): GPU quantities in many spellings, MIG resources of valid and invalid
profiles, DRA device classes asked for as extended resources, device env vars, envFrom prefixes,
host paths from the SPEC's list in various spellings and their harmless neighbours, pool
targeting through nodeSelector and node affinity, tolerations, tenant labels, privileged
containers of every kind, host namespaces, and namespaces of each tenant, exempt and unmapped.
The directed cases (gen_directed.py) come first.
"""

import copy
import random

from gen_directed import directed_cases
from gen_policies import POLICIES, POLICY_ENV, POOL_KEY  # noqa: F401 (run.py reads POLICIES here)
from gen_values import (
    DEVICE_CLASS_PREFIX, DEVICE_CLASSES, DEVICE_ENV, ENVFROM_PREFIXES, GPU_QUANTITIES,
    GPU_QUANTITY_WEIGHTS, HARMLESS_ENV, HOST_PATHS, MIG_COUNTS, MIG_PROFILES, MOUNT_PATHS, NAMESPACES,
    NAMESPACE_WEIGHTS, NEW_MIG_PROFILES, SHARING_ANNOTATIONS)


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
            self.required_affinity(spec, terms)

    def required_affinity(self, spec, terms):
        """`terms` as the pod's required node affinity, now and then with constraints on the
        sharing and product labels added."""
        r = self.rng
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


def generate(n, seed=20240601):
    """The directed cases, then seeded random objects: n in all."""
    g = Gen(seed)
    directed = directed_cases()[:n]
    return directed + [g.next() for _ in range(n - len(directed))]
