// The UPDATE (and CREATE) cases the matchConditions tests (conditions_test.go) evaluate: the
// objects before and after, whether the conditions send each to /validate, and what the webhook
// decides. docs/gpu-clusters.md shows this table (TestCaseTableIsDocumented).
package main

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

func yamlToJSON(text string) []byte {
	out, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		panic(fmt.Sprintf("test YAML: %v\n%s", err, text))
	}
	return out
}

type gvr struct{ group, version, kind, resource string }

var (
	podR         = gvr{"", "v1", "Pod", "pods"}
	deploymentR  = gvr{"apps", "v1", "Deployment", "deployments"}
	replicaSetR  = gvr{"apps", "v1", "ReplicaSet", "replicasets"}
	statefulSetR = gvr{"apps", "v1", "StatefulSet", "statefulsets"}
	daemonSetR   = gvr{"apps", "v1", "DaemonSet", "daemonsets"}
	jobR         = gvr{"batch", "v1", "Job", "jobs"}
	cronJobR     = gvr{"batch", "v1", "CronJob", "cronjobs"}
	rcR          = gvr{"", "v1", "ReplicationController", "replicationcontrollers"}
	podTemplateR = gvr{"", "v1", "PodTemplate", "podtemplates"}
	pytorchR     = gvr{"kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"}
	rayR         = gvr{"ray.io", "v1", "RayCluster", "rayclusters"}
	trainerR     = gvr{"example.com", "v1", "Trainer", "trainers"}
	claimR       = gvr{"resource.k8s.io", "v1", "ResourceClaim", "resourceclaims"}
	claimTmplR   = gvr{"resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates"}
	podGroupR    = gvr{"scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups"}
)

// What the webhook answers, as `check` reports it.
const (
	allowed     = "allowed"      // judged, no deny finding
	refused     = "refused"      // judged, a deny finding
	unjudged    = "unjudged"     // /validate allows it without judging (a kind the policy does not name)
	cannotJudge = "cannot judge" // refused: the claim's pod cannot be read (`check` has no cluster state)
)

type updateCase struct {
	name     string
	r        gvr
	sub      string // subresource
	old      string // YAML; empty for a CREATE
	patch    string // RFC 7386 merge patch (YAML) turning old into the new object; for a CREATE, the object
	sent     bool   // the matchConditions send it to /validate
	decision string
}

// mergePatch applies an RFC 7386 merge patch: maps merge, null deletes, anything else replaces.
func mergePatch(target, patch interface{}) interface{} {
	p, ok := patch.(map[string]interface{})
	if !ok {
		return deepCopy(patch)
	}
	t, ok := target.(map[string]interface{})
	if !ok {
		t = map[string]interface{}{}
	}
	out := deepCopyMap(t)
	for k, v := range p {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = mergePatch(out[k], v)
		}
	}
	return out
}

const basePod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: research
  uid: 4c1e0a52-0000-4000-8000-000000000001
  resourceVersion: "1001"
  labels: {gpu-admission.io/tenant: research, cost-center: research, app: web}
spec:
  restartPolicy: Always
  containers:
    - {name: app, image: "busybox:1.36", env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]}
  tolerations:
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
status: {phase: Running, podIP: 10.0.0.7}
`

// A pod without labels, and one privileged: both admitted before the webhook was installed.
const unlabelledPod = `
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: research}
spec: {containers: [{name: app, image: "busybox:1.36"}]}
status: {phase: Running}
`

const privilegedPod = `
apiVersion: v1
kind: Pod
metadata: {name: legacy, namespace: research, labels: {gpu-admission.io/tenant: research, cost-center: research}}
spec: {containers: [{name: app, image: "busybox:1.36", securityContext: {privileged: true}}]}
status: {phase: Running}
`

// A GPU pod of tenant research, pinned to its pool, held by a scheduling gate (as Kueue does).
const gatedGpuPod = `
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: research, labels: {gpu-admission.io/tenant: research, cost-center: research}}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  nodeSelector: {gpu-admission.io/pool: a100-mig}
  tolerations:
    - {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}
    - {key: gpu-admission.io/pool, operator: Equal, value: a100-mig, effect: NoSchedule}
  containers: [{name: train, image: cuda, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]
status: {phase: Pending}
`

const podTemplateSpec = `{metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: "busybox:1.36"}]}}`

const privilegedTemplateSpec = `{spec: {containers: [{name: app, image: "busybox:1.36", securityContext: {privileged: true}}]}}`

func workload(kind, apiVersion, extraSpec string) string {
	return fmt.Sprintf(`
apiVersion: %s
kind: %s
metadata: {name: web, namespace: research, generation: 4, annotations: {deployment.kubernetes.io/revision: "3"}}
spec: {%s template: %s}
status: {observedGeneration: 4}
`, apiVersion, kind, extraSpec, podTemplateSpec)
}

const baseCronJob = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: research}
spec:
  schedule: "0 2 * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: app, image: "busybox:1.36"}]}}}}
`

const basePodTemplate = `
apiVersion: v1
kind: PodTemplate
metadata: {name: web, namespace: research}
template: ` + podTemplateSpec + `
`

const basePyTorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: research}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: pytorch}]}}}
`

const baseRayCluster = `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: ray, namespace: research}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head, image: ray}]}}}
  workerGroupSpecs: [{groupName: cpu, replicas: 1, template: {spec: {containers: [{name: worker, image: ray}]}}}]
`

const baseClaim = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpus, namespace: research, uid: 9d0c0000-0000-4000-8000-000000000009}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: mig.nvidia.com, count: 1}}]}}
`
const basePodGroup = `
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: trainers, namespace: research, uid: 9d0c0000-0000-4000-8000-00000000000a}
spec: {schedulingPolicy: {gang: {minCount: 2}}, resourceClaims: [{name: gpus, resourceClaimTemplateName: one-slice}]}
`

const allocation = `{devices: {results: [{request: gpu, driver: gpu.nvidia.com, pool: node-a, device: gpu-0-mig-1}]}}`

func allocatedClaim(reservedFor string) string {
	return baseClaim + "status: {allocation: " + allocation + ", reservedFor: " + reservedFor + "}\n"
}

var updateCases = []updateCase{
	// Pods.
	{"pod: tenant label removed", podR, "", basePod, `metadata: {labels: {gpu-admission.io/tenant: null}}`, true, refused},
	{"pod: tenant label set to another tenant", podR, "", basePod, `metadata: {labels: {gpu-admission.io/tenant: platform}}`, true, refused},
	{"pod: its tenant's cost-center label changed", podR, "", basePod, `metadata: {labels: {cost-center: platform}}`, true, refused},
	{"pod: label added", podR, "", basePod, `metadata: {labels: {version: v2}}`, true, allowed},
	{"pod: annotation changed", podR, "", basePod, `metadata: {annotations: {example.com/owner: ml}}`, true, allowed},
	{"pod: CDI device annotation added", podR, "", basePod, `metadata: {annotations: {cdi.k8s.io/gpu: nvidia.com/gpu=all}}`, true, refused},
	{"pod: status only", podR, "", basePod, `status: {phase: Succeeded, podIP: null}`, false, allowed},
	{"pod: finalizer, owner reference, resourceVersion", podR, "", basePod,
		`metadata: {resourceVersion: "1002", finalizers: [batch.kubernetes.io/job-tracking], ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: u}]}`, false, allowed},
	{"pod: deletion bookkeeping (finalizer removed)", podR, "", mustPatch(basePod, `metadata: {finalizers: [batch.kubernetes.io/job-tracking]}`),
		`metadata: {finalizers: null, deletionTimestamp: "2025-01-01T00:00:00Z", deletionGracePeriodSeconds: 0}`, false, allowed},
	{"pod: image changed", podR, "", basePod, `spec: {containers: [{name: app, image: "busybox:1.37", env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]}]}`, true, allowed},
	{"pod: toleration added", podR, "", basePod,
		`spec: {tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}, {key: example.com/maintenance, operator: Exists}]}`, true, allowed},
	{"pod: activeDeadlineSeconds set", podR, "", basePod, `spec: {activeDeadlineSeconds: 3600}`, true, allowed},
	{"pod without labels (admitted before the webhook): status only", podR, "", unlabelledPod, `status: {phase: Failed}`, false, allowed},
	{"pod without labels: empty labels map written", podR, "", unlabelledPod, `metadata: {labels: {}}`, false, allowed},
	{"pod without labels: label added", podR, "", unlabelledPod, `metadata: {labels: {app: old}}`, true, allowed},
	{"privileged pod (admitted before the webhook): status only", podR, "", privilegedPod, `status: {phase: Succeeded}`, false, allowed},
	{"privileged pod: label added (refused only for what it adds)", podR, "", privilegedPod, `metadata: {labels: {app: legacy}}`, true, allowed},
	{"GPU pod: status only", podR, "", gatedGpuPod, `status: {conditions: [{type: PodScheduled, status: "False", reason: SchedulingGated}]}`, false, allowed},
	{"GPU pod: gate removed, moved to another tenant's pool", podR, "", gatedGpuPod,
		`spec: {schedulingGates: null, nodeSelector: {gpu-admission.io/pool: h100-shared}}`, true, refused},
	{"GPU pod: gate removed only", podR, "", gatedGpuPod, `spec: {schedulingGates: null}`, true, allowed},
	{"pods/ephemeralcontainers: privileged debug container", podR, "ephemeralcontainers", basePod,
		`spec: {ephemeralContainers: [{name: debug, image: busybox, securityContext: {privileged: true}}]}`, true, refused},
	{"pods/ephemeralcontainers: debug container", podR, "ephemeralcontainers", basePod,
		`spec: {ephemeralContainers: [{name: debug, image: busybox, env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]}]}`, true, allowed},
	{"pod: CREATE", podR, "", "", basePod, true, allowed},

	// Workloads.
	{"Deployment: template made privileged", deploymentR, "", workload("Deployment", "apps/v1", "replicas: 2,"), `spec: {template: ` + privilegedTemplateSpec + `}`, true, refused},
	{"Deployment: template label claims another tenant", deploymentR, "", workload("Deployment", "apps/v1", "replicas: 2,"),
		`spec: {template: {metadata: {labels: {gpu-admission.io/tenant: platform}}}}`, true, refused},
	{"Deployment: replicas only", deploymentR, "", workload("Deployment", "apps/v1", "replicas: 2,"), `spec: {replicas: 5}`, false, allowed},
	{"Deployment: rollout bookkeeping (labels, annotations, generation)", deploymentR, "", workload("Deployment", "apps/v1", "replicas: 2,"),
		`metadata: {generation: 5, labels: {team: ml}, annotations: {deployment.kubernetes.io/revision: "4"}}`, false, allowed},
	{"ReplicaSet: scaled by its Deployment", replicaSetR, "", workload("ReplicaSet", "apps/v1", "replicas: 2,"),
		`{spec: {replicas: 0}, metadata: {annotations: {deployment.kubernetes.io/desired-replicas: "0"}}}`, false, allowed},
	{"StatefulSet: template image changed", statefulSetR, "", workload("StatefulSet", "apps/v1", "replicas: 1,"),
		`spec: {template: {spec: {containers: [{name: app, image: "busybox:1.37"}]}}}`, true, allowed},
	{"DaemonSet: updateStrategy only", daemonSetR, "", workload("DaemonSet", "apps/v1", ""), `spec: {updateStrategy: {type: OnDelete}}`, false, allowed},
	{"Job: suspended (a queue preempts it)", jobR, "", workload("Job", "batch/v1", "suspend: false,"), `spec: {suspend: true}`, false, allowed},
	{"Job: resumed into another tenant's pool", jobR, "", workload("Job", "batch/v1", "suspend: true,"),
		`spec: {suspend: false, template: {spec: {nodeSelector: {gpu-admission.io/pool: h100-shared}}}}`, true, refused},
	{"CronJob: schedule only", cronJobR, "", baseCronJob, `spec: {schedule: "0 3 * * *", suspend: true}`, false, allowed},
	{"CronJob: job template made privileged", cronJobR, "", baseCronJob,
		`spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: app, image: "busybox:1.36", securityContext: {privileged: true}}]}}}}}`, true, refused},
	{"ReplicationController: replicas only", rcR, "", workload("ReplicationController", "v1", "replicas: 1,"), `spec: {replicas: 3}`, false, allowed},
	{"PodTemplate: labels only", podTemplateR, "", basePodTemplate, `metadata: {labels: {team: ml}}`, false, allowed},
	{"PodTemplate: template made privileged", podTemplateR, "", basePodTemplate, `template: ` + privilegedTemplateSpec, true, refused},

	// ML kinds, and a kind of the policy's own.
	{"PyTorchJob: worker template made privileged", pytorchR, "", basePyTorchJob,
		`spec: {pytorchReplicaSpecs: {Worker: {template: {spec: {containers: [{name: pytorch, image: pytorch, securityContext: {privileged: true}}]}}}}}`, true, refused},
	{"PyTorchJob: status written through the main resource", pytorchR, "", basePyTorchJob, `status: {conditions: [{type: Running, status: "True"}]}`, false, allowed},
	{"RayCluster: worker replicas (spec changes are all sent)", rayR, "", baseRayCluster,
		`spec: {workerGroupSpecs: [{groupName: cpu, replicas: 3, template: {spec: {containers: [{name: worker, image: ray}]}}}]}`, true, allowed},
	{"Trainer (example.com): kinds outside the built-in groups are always sent", trainerR, "",
		"apiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: t, namespace: research}\nspec: {roles: []}\n", `status: {phase: Done}`, true, unjudged},

	// Dynamic Resource Allocation.
	{"ResourceClaim: label added (spec is immutable)", claimR, "", baseClaim, `metadata: {labels: {team: ml}}`, false, allowed},
	{"ResourceClaimTemplate: annotation added", claimTmplR, "",
		"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpus, namespace: research}\nspec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: mig.nvidia.com}}]}}}\n",
		`metadata: {annotations: {example.com/owner: ml}}`, false, allowed},
	{"ResourceClaim: CREATE asking for 3 GPUs (cap 2)", claimR, "", "",
		mustPatch(baseClaim, `spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 3}}]}}`), true, refused},
	{"PodGroup: label added (spec.resourceClaims is immutable)", podGroupR, "", basePodGroup,
		`metadata: {labels: {team: ml}}`, false, allowed},
	{"PodGroup: CREATE sharing a claim template the webhook cannot see", podGroupR, "", "", basePodGroup, true, refused},
	{"resourceclaims/status: devices allocated", claimR, "status", baseClaim,
		`status: {allocation: ` + allocation + `, reservedFor: [{resource: pods, name: train, uid: u-1}]}`, true, cannotJudge},
	{"resourceclaims/status: reserved for one more pod", claimR, "status", allocatedClaim(`[{resource: pods, name: train, uid: u-1}]`),
		`status: {reservedFor: [{resource: pods, name: train, uid: u-1}, {resource: pods, name: train-2, uid: u-2}]}`, true, cannotJudge},
	{"resourceclaims/status: device conditions only", claimR, "status", allocatedClaim(`[{resource: pods, name: train, uid: u-1}]`),
		`status: {devices: [{driver: gpu.nvidia.com, pool: node-a, device: gpu-0-mig-1, conditions: [{type: Ready, status: "True"}]}]}`, false, allowed},
	{"resourceclaims/status: deallocated", claimR, "status", allocatedClaim(`[{resource: pods, name: train, uid: u-1}]`),
		`status: {allocation: null, reservedFor: null}`, false, allowed},
	{"resourceclaims/status: reservation dropped, allocation kept", claimR, "status", allocatedClaim(`[{resource: pods, name: train, uid: u-1}]`),
		`status: {reservedFor: null}`, true, allowed},
}

func mustPatch(base, patch string) string {
	var b, p interface{}
	if err := json.Unmarshal(yamlToJSON(base), &b); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(yamlToJSON(patch), &p); err != nil {
		panic(err)
	}
	out, _ := json.Marshal(mergePatch(b, p))
	return string(out)
}
