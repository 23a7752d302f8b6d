"""Hand-written objects for the spec's sentences that random draws may hit rarely (random_pods.py
puts them first).
"""

from gen_policies import POOL_KEY

TOL_ALL = [{"operator": "Exists"}]
A100 = {POOL_KEY: "a100-secure"}
A30 = {"gpu.example.com/accelerator": "a30", "gpu.example.com/zone": "lab"}
ALPHA_LABELS = {"gpu-admission.io/tenant": "alpha", "cost-center": "cc-1042"}


def directed_cases():
    """Hand-written objects for the spec's sentences that random draws may hit rarely. Each is
    judged like the random ones (by the model, not by a hard-coded answer)."""
    return mig_and_quantity_cases() + access_and_pool_cases() + sharing_label_and_class_cases()


# c and pod are short so that the cases below read as a table.
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
    spec.setdefault("tolerations", TOL_ALL)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def required_terms(*terms):
    """Required node affinity: ORed terms, each one `In` expression [key, value...]."""
    exprs = [{"matchExpressions": [{"key": t[0], "operator": "In", "values": list(t[1:])}]} for t in terms]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": exprs}}}


def mig_and_quantity_cases():
    """MIG exactness, the init / sidecar formula, quantities, mig-resources, the single strategy."""
    sidecar = c("sidecar", {"nvidia.com/gpu.shared": 1}, restartPolicy="Always")
    init4 = c("init", {"nvidia.com/gpu.shared": 4})
    app1 = c("main", {"nvidia.com/gpu.shared": 1})
    return [
        # exactness: 28 x 1g.10gb on a 7-slice model is exactly 4 GPUs; A30 has 4 slices
        pod("d-28-slices", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 28})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-29-slices", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 29})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-a30-16", "team-alpha", [c(limits={"nvidia.com/mig-1g.6gb": "16"})], ALPHA_LABELS, nodeSelector=A30),
        pod("d-a30-17", "team-alpha", [c(limits={"nvidia.com/mig-1g.6gb": "17"})], ALPHA_LABELS, nodeSelector=A30),
        # init / sidecar formula: a sidecar before an init container adds to it, after it does not
        pod("d-init-after-sidecar", "team-alpha", [app1], ALPHA_LABELS, nodeSelector=A100, initContainers=[sidecar, init4]),
        pod("d-init-before-sidecar", "team-alpha", [app1], ALPHA_LABELS, nodeSelector=A100, initContainers=[init4, sidecar]),
        # quantities: fractions are gpu-cap findings and count as their ceiling
        pod("d-999900u", "team-alpha", [c(limits={"nvidia.com/gpu": "999900u"})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-1k", "team-alpha", [c(limits={"nvidia.com/gpu": "1k"})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-zero", "team-alpha", [c(limits={"nvidia.com/gpu": "0"})], ALPHA_LABELS),
        # mig-resources: adding to an existing entry, the annotation's profile, an invalid annotation
        pod("d-add-to-mig", "team-alpha", [c(limits={"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": "1"})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-add-to-zero-mig", "team-alpha", [c(limits={"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 0})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-annotation-profile", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], ALPHA_LABELS,
            {"gpu-admission.io/mig-profile": "2g.20gb"}, nodeSelector=A100),
        pod("d-annotation-me", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], ALPHA_LABELS,
            {"gpu-admission.io/mig-profile": "1g.10gb+me"}, nodeSelector=A100),
        pod("d-annotation-invalid", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], ALPHA_LABELS,
            {"gpu-admission.io/mig-profile": "9g.90gb"}, nodeSelector=A100),
        pod("d-two-mig-one-zero", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 0})],
            ALPHA_LABELS, nodeSelector=A100),
        pod("d-two-mig", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 1})],
            ALPHA_LABELS, nodeSelector=A100),
        # single strategy: the product selector is added, never overwritten
        pod("d-single", "team-beta", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-single-wrong-product", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "a100-inference", "nvidia.com/gpu.product": "A100-SXM4-40GB"}),
        pod("d-single-me-product", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "a100-inference", "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb.me"}),
    ]


def access_and_pool_cases():
    """Device env and host paths, pools and tenants, tolerations, mps-adversarial."""
    return [
        # device env and host paths
        pod("d-void-cpu", "team-alpha", [c(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])], ALPHA_LABELS),
        pod("d-void-gpu", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1},
                                           env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])],
            ALPHA_LABELS, nodeSelector=A100),
        pod("d-var-run-dotdot", "team-alpha", [c()], ALPHA_LABELS,
            volumes=[{"name": "h", "hostPath": {"path": "/var/run/../etc/cdi"}}]),
        pod("d-usr-local-cuda", "team-alpha", [c()], ALPHA_LABELS,
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
        pod("d-no-tolerations", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], ALPHA_LABELS, tolerations=[]),
        pod("d-key-only-taint", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                         {"key": POOL_KEY, "operator": "Exists"},
                         {"key": "gpu.example.com/dedicated", "operator": "Exists"},
                         {"key": "gpu.example.com/inference", "operator": "Equal", "effect": "NoSchedule"}],
            nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-mps-adversarial", "team-alpha", [c(limits={"nvidia.com/gpu": 1},
                                                  env=[{"name": "CUDA_MPS_PIPE_DIRECTORY", "value": "/tmp/x"}])],
            ALPHA_LABELS, nodeSelector=A100),
    ]


def sharing_label_and_class_cases():
    """gpu-sharing, tenant labels, MIG profiles without a pool, DRA device classes as extended
    resources, a privileged ephemeral container."""
    app1 = c("main", {"nvidia.com/gpu.shared": 1})
    return [
        # gpu-sharing: replicas and fractions in the adversarial pool, not in the cooperative one;
        # a fraction alone makes a GPU pod (pinned by pool-selector) that counts no GPUs
        pod("d-shared-adversarial", "team-alpha", [c(limits={"nvidia.com/gpu.shared": 1})], ALPHA_LABELS, nodeSelector=A100),
        pod("d-fraction-adversarial", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpumem": "4000"})],
            ALPHA_LABELS, nodeSelector=A100),
        pod("d-fraction-alone", "team-alpha", [c(limits={"nvidia.com/gpucores": 30})], ALPHA_LABELS),
        pod("d-fraction-cooperative", "team-beta", [c(limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000})],
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-replicas-selector", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "a100-secure", "nvidia.com/gpu.replicas": "2"}),
        pod("d-sharing-strategy-none", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "a100-secure", "nvidia.com/gpu.sharing-strategy": "none"}),
        pod("d-sharing-strategy-notin-none", "team-alpha", [c(limits={"nvidia.com/mig-1g.10gb": 1})], ALPHA_LABELS,
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
        pod("d-class-full", "team-alpha", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1})], ALPHA_LABELS),
        pod("d-class-full-h100", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 3})],
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-class-mig", "team-alpha", [c(limits={"deviceclass.resource.kubernetes.io/mig.nvidia.com": 2})],
            ALPHA_LABELS, nodeSelector=A100),
        pod("d-class-nic", "default", [c(limits={"deviceclass.resource.kubernetes.io/nic.example.com": 5})]),
        pod("d-class-single", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com": 1})],
            nodeSelector={POOL_KEY: "a100-inference"}),
        pod("d-class-void", "team-beta", [c(limits={"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1},
                                            env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])]),
        pod("d-class-sidecar", "team-beta", [app1], initContainers=[
            c("proxy", {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}, restartPolicy="Always")]),
        pod("d-privileged-ephemeral", "team-alpha", [c()], ALPHA_LABELS,
            ephemeralContainers=[c("debug", securityContext={"privileged": True})]),
        # a scheduler's GPU share by annotation: a GPU pod (pinned to the default pool), refused in
        # an adversarial pool, allowed in a cooperative one; prefixed keys are nobody's
        pod("d-kai-fraction-default-pool", "team-alpha", [c()], ALPHA_LABELS, {"gpu-fraction": "0.5"}),
        pod("d-kai-memory-secure", "team-alpha", [c()], ALPHA_LABELS, {"gpu-memory": "4000"}, nodeSelector=A100),
        pod("d-kai-devices-coop", "team-beta", [c()], None, {"gpu-fraction-num-devices": "2", "gpu-fraction": "0.5"},
            nodeSelector={POOL_KEY: "h100-shared"}),
        pod("d-kai-prefixed", "team-alpha", [c()], ALPHA_LABELS, {"kai.scheduler/gpu-fraction": "0.5"}, nodeSelector=A100),
        pod("d-kai-unmapped", "default", [c()], None, {"gpu-fraction": "0.5"}),
        # MIG on newer models: RTX PRO 6000 Blackwell (4 slices, attributes) and B300 (single)
        pod("d-rtx-gfx", "team-alpha", [c(limits={"nvidia.com/mig-1g.24gb.gfx": 4})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-me-all-5", "team-alpha", [c(limits={"nvidia.com/mig-1g.24gb.me.all": 5})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-no-me", "team-alpha", [c(limits={"nvidia.com/mig-2g.48gb-me": 2})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-2g-me", "team-alpha", [c(limits={"nvidia.com/mig-2g.48gb.me": 1})], ALPHA_LABELS,
            nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-rtx-whole", "team-alpha", [c(limits={"nvidia.com/gpu": 1})], ALPHA_LABELS,
            {"gpu-admission.io/mig-profile": "1g.24gb+gfx"}, nodeSelector={POOL_KEY: "rtx-pro"}),
        pod("d-b300-single", "team-beta", [c(limits={"nvidia.com/gpu": 1})], nodeSelector={POOL_KEY: "b300"}),
        pod("d-b300-single-me", "team-beta", [c(limits={"nvidia.com/gpu": 1})],
            nodeSelector={POOL_KEY: "b300", "nvidia.com/gpu.product": "NVIDIA-B300-SXM6-AC-MIG-1g.34gb.me"}),
        pod("d-nopool-rtx-1g24", "gamma", [c(limits={"nvidia.com/mig-1g.24gb": 1})]),
        pod("d-nopool-rtx-4g96-gfx", "gamma", [c(limits={"nvidia.com/mig-4g.96gb.gfx": 1})]),
    ]
