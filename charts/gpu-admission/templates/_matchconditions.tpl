{{/*
The validating webhook's matchConditions (CEL; the API server calls /validate only when all are
true). The chart's own ones leave out UPDATEs that change nothing /validate reads, which it could
never refuse: an UPDATE is refused only for findings the old object did not have
(webhook/admission/review_decision.cpp), and equal inputs give equal findings. Each condition is
true for every request outside its own kind of object, so together they only ever skip:
  - Pods: UPDATEs that change no label, annotation or spec field (status, finalizers, owner
    references, managed fields). Ephemeral containers (their subresource) are always sent.
  - Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs: UPDATEs
    that keep spec.template (replicas, suspend, labels); CronJobs: spec.jobTemplate;
    PodTemplates: template.
  - The built-in ML kinds: UPDATEs that keep spec, where all their templates are.
  - ResourceClaims and ResourceClaimTemplates: UPDATEs that keep spec (immutable anyway).
  - PodGroups: UPDATEs that keep spec.resourceClaims (immutable anyway).
  - resourceclaims/status: UPDATEs that neither allocate devices nor reserve them for a new
    consumer (device status, deallocation).
Kinds the policy adds (webhooks.validating.extraKinds in other groups) are always sent. Every field
is read behind has(), so no condition can fail on a missing field (an error would make the API
server follow failurePolicy). test/chart/conditions_test.go checks each case against the binary;
docs/gpu-clusters.md has the table.
Kubernetes 1.28 and later (GA in 1.30); older API servers get none and send every UPDATE.
*/}}
{{- define "gpu-admission.mlGroups" -}}
['kubeflow.org', 'jobset.x-k8s.io', 'leaderworkerset.x-k8s.io', 'ray.io', 'trainer.kubeflow.org', 'batch.volcano.sh']
{{- end }}

{{- /* (has(R.a) && has(R.a.b) ? R.a.b : {}) for R = object and oldObject, compared with !=: true
       when the field at PATH (dotted, below the object) differs; an absent field equals an empty
       one ({}, or [] for a list: call with (list PATH "[]")). */}}
{{- define "gpu-admission.cel.changed" -}}
{{- $args := ternary . (list . "{}") (kindIs "slice" .) }}
{{- $path := splitList "." (index $args 0) }}
{{- $empty := index $args 1 }}
{{- $sides := list }}
{{- range list "object" "oldObject" }}
{{- $root := . }}
{{- $guards := list }}
{{- range $i, $_ := $path }}
{{- $guards = append $guards (printf "has(%s.%s)" $root (slice $path 0 (add1 $i) | join ".")) }}
{{- end }}
{{- $sides = append $sides (printf "(%s ? %s.%s : %s)" (join " && " $guards) $root (join "." $path) $empty) }}
{{- end }}
{{- join " != " $sides }}
{{- end }}

{{- /* Fails rendering when the policy given as a value moves pod templates where the conditions
       do not look: a redefined built-in workload kind, or template paths outside spec. */}}
{{- define "gpu-admission.checkPolicyForConditions" -}}
{{- $policy := .Values.policy }}
{{- if kindIs "string" $policy }}{{ $policy = fromYaml $policy }}{{ end }}
{{- /* Policies of other shapes are for `policy lint` to report, not for this check. */}}
{{- $workloads := list }}
{{- if kindIs "map" $policy }}
{{- $spec := get $policy "spec" }}
{{- if kindIs "map" $spec }}
{{- $w := get $spec "workloads" }}
{{- if kindIs "slice" $w }}{{ $workloads = $w }}{{ end }}
{{- end }}
{{- end }}
{{- range $i, $w := $workloads }}
{{- if kindIs "map" $w }}
{{- $apiVersion := toString (get $w "apiVersion") }}
{{- $group := regexReplaceAll "/?[^/]*$" $apiVersion "" }}
{{- if has $group (list "" "apps" "batch") }}
{{- fail (printf "policy spec.workloads[%d] redefines %s %v, whose UPDATEs the chart's matchConditions send only when its built-in pod template changes: remove the entry, or set webhooks.validating.skipUnjudgedUpdates=false" $i $apiVersion (get $w "kind")) }}
{{- end }}
{{- $templates := get $w "templates" }}
{{- if kindIs "slice" $templates }}
{{- range $templates }}
{{- if not (hasPrefix "spec." (toString .)) }}
{{- fail (printf "policy spec.workloads[%d] (%v) has a pod template outside spec (%v), which the chart's matchConditions do not compare: put the path under spec, or set webhooks.validating.skipUnjudgedUpdates=false" $i (get $w "kind") .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpu-admission.validatingMatchConditions" -}}
{{- $update := "request.operation != 'UPDATE'" }}
{{- /* request.subResource is left out of the request when empty (omitempty), so read it only behind has(). */}}
{{- $sub := "has(request.subResource) && request.subResource != ''" }}
{{- if and .Values.webhooks.validating.skipUnjudgedUpdates (semverCompare ">=1.28.0-0" .Capabilities.KubeVersion.Version) }}
{{- include "gpu-admission.checkPolicyForConditions" . }}
# Pod UPDATEs are judged on labels (tenant-label), annotations (device and MIG annotations) and
# spec; status, finalizers and owner references changes are not.
- name: pod-update-changes-labels-annotations-or-spec
  expression: >-
    {{ $update }} || request.resource.group != '' || request.resource.resource != 'pods' ||
    {{ $sub }} ||
    {{ include "gpu-admission.cel.changed" "metadata.labels" }} ||
    {{ include "gpu-admission.cel.changed" "metadata.annotations" }} ||
    {{ include "gpu-admission.cel.changed" "spec" }}
# Workloads are judged by their pod template alone: scaling, suspending or relabelling one is not.
- name: workload-update-changes-pod-template
  expression: >-
    {{ $update }} || {{ $sub }} ||
    !(request.resource.group == 'apps' && request.resource.resource in ['deployments', 'statefulsets', 'daemonsets', 'replicasets'] ||
    request.resource.group == 'batch' && request.resource.resource == 'jobs' ||
    request.resource.group == '' && request.resource.resource == 'replicationcontrollers') ||
    {{ include "gpu-admission.cel.changed" "spec.template" }}
- name: cronjob-update-changes-job-template
  expression: >-
    {{ $update }} || {{ $sub }} || request.resource.group != 'batch' ||
    request.resource.resource != 'cronjobs' ||
    {{ include "gpu-admission.cel.changed" "spec.jobTemplate" }}
- name: podtemplate-update-changes-template
  expression: >-
    {{ $update }} || {{ $sub }} || request.resource.group != '' ||
    request.resource.resource != 'podtemplates' ||
    {{ include "gpu-admission.cel.changed" "template" }}
# The built-in ML kinds keep every pod template under spec.
- name: ml-workload-update-changes-spec
  expression: >-
    {{ $update }} || {{ $sub }} ||
    !(request.resource.group in {{ include "gpu-admission.mlGroups" . }}) ||
    {{ include "gpu-admission.cel.changed" "spec" }}
# A claim's spec cannot change after creation; its status is sent below.
- name: claim-update-changes-spec
  expression: >-
    {{ $update }} || {{ $sub }} || request.resource.group != 'resource.k8s.io' ||
    {{ include "gpu-admission.cel.changed" "spec" }}
# A PodGroup is judged by its spec.resourceClaims (immutable); its status is a subresource.
- name: podgroup-update-changes-resource-claims
  expression: >-
    {{ $update }} || {{ $sub }} || request.resource.group != 'scheduling.k8s.io' ||
    {{ include "gpu-admission.cel.changed" (list "spec.resourceClaims" "[]") }}
# Allocation is judged when it is set, and when it is reserved for a new consumer.
- name: claim-status-update-allocates
  expression: >-
    {{ $update }} || !(has(request.subResource) && request.subResource == 'status') || request.resource.group != 'resource.k8s.io' ||
    has(object.status) && has(object.status.allocation) &&
    (!has(oldObject.status) || !has(oldObject.status.allocation) ||
    {{ include "gpu-admission.cel.changed" (list "status.reservedFor" "[]") }})
{{- end }}
{{- with .Values.webhooks.validating.matchConditions }}
{{ toYaml . }}
{{- end }}
{{- end }}
