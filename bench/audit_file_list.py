#!/usr/bin/env python3
"""Writes the input of bench/audit_file.sh: what `kubectl get pods,namespaces -A -o json` prints
for a GPU cluster of PODS pods (default 150,000) over the tenants of bench/audit-policy.yaml, a
`kind: List` of Pods then Namespaces, written item by item (the generator holds one pod at a
time). About 420 bytes a pod (61 MiB for 150,000, compact): name, namespace, uid, tenant label, an
owner, one container (GPUs and a pool for two in three pods of the GPU tenants). A tenth are privileged (the `privileged` rule denies them).

  bench/audit_file_list.py 150000 > pods.json
  bench/audit_file_list.py 150000 --pretty > pods.json   # kubectl's indentation
  bench/audit_file_list.py 150000 --yaml > pods.yaml     # `-o yaml` (needs PyYAML)
"""
import itertools
import json
import sys

TENANTS = ["nlp", "vision", "speech", "robotics", "search", "ads", "assist", "translate", "students", "fellows"]
POOLS = {"nlp": "h100-train", "vision": "h100-train", "speech": "h100-train", "robotics": "h100-train",
         "search": "l40s-infer", "ads": "l40s-infer", "assist": "l40s-infer", "translate": "l40s-infer"}


def namespaces():
    for tenant in TENANTS:
        for suffix in ("train", "serve", "dev"):
            yield f"{tenant}-{suffix}"


def pod(i, ns):
    tenant = ns.rsplit("-", 1)[0]
    pool = POOLS.get(tenant)
    app = f"{tenant}-{i % 700}"
    container = {"name": "main", "image": f"reg.example.com/{tenant}:{i % 40}"}
    spec = {"containers": [container]}
    if pool is not None and i % 3 != 0:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(1 + i % 4)}}
        spec["nodeSelector"] = {"gpu.example.com/pool": pool}
    if i % 10 == 7:
        container["securityContext"] = {"privileged": True}
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": f"rs-{ns}-{i % 700}",
             "controller": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{i:06d}", "namespace": ns, "uid": f"p{i}",
                         "labels": {"gpu-admission.io/tenant": tenant}, "ownerReferences": [owner]},
            "spec": spec}


def write_yaml(out, items):
    """kubectl's `-o yaml`: the List's items as a block sequence at column 0 (needs PyYAML)."""
    import yaml
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out.write("apiVersion: v1\nitems:\n")
    for item in items:
        out.write(yaml.dump([item], Dumper=dumper, sort_keys=False, default_flow_style=False))
    out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')


def write_json(out, items, pretty):
    indent = 4 if pretty else None
    separators = None if pretty else (",", ":")
    out.write('{\n    "apiVersion": "v1",\n    "items": [\n' if pretty else '{"apiVersion":"v1","items":[')
    for n, item in enumerate(items):
        out.write(("" if n == 0 else ",\n" if pretty else ",") + json.dumps(item, indent=indent, separators=separators))
    out.write('\n    ],\n    "kind": "List",\n    "metadata": {"resourceVersion": ""}\n}\n' if pretty
              else '],"kind":"List","metadata":{"resourceVersion":""}}\n')


def main():
    pods = int(sys.argv[1]) if len(sys.argv) > 1 else 150000
    ns_names = list(namespaces())
    items = itertools.chain(
        (pod(i, ns_names[i % len(ns_names)]) for i in range(pods)),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": f"ns-{ns}"}} for ns in ns_names))
    if "--yaml" in sys.argv[2:]:
        write_yaml(sys.stdout, items)
    else:
        write_json(sys.stdout, items, "--pretty" in sys.argv[2:])


if __name__ == "__main__":
    main()
