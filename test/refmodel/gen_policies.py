"""The policies the differential test's objects (random_pods.py) are judged under: `main`
(three tenants, four pools), `relaxed` and `noselector`.
"""

import copy


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
