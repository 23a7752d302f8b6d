{{/*
The chart name, truncated to 63 characters (the DNS label limit).
*/}}
{{- define "gpu-admission.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects, truncated to 63 characters. It is also the Service name,
so it appears in the serving certificate's DNS names.
*/}}
{{- define "gpu-admission.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "gpu-admission.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: immutable on the Deployment, so never add to them.
*/}}
{{- define "gpu-admission.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Standard labels on every object.
*/}}
{{- define "gpu-admission.labels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpu-admission
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Seconds the server may spend draining after SIGTERM (its --grace-period).
*/}}
{{- define "gpu-admission.drainSeconds" -}}
{{- $drain := sub (int .Values.terminationGracePeriodSeconds) (add (int .Values.preStopSleepSeconds) 5) }}
{{- if lt (int $drain) 1 }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must exceed preStopSleepSeconds (%v) by more than 5 seconds" .Values.terminationGracePeriodSeconds .Values.preStopSleepSeconds) }}
{{- end }}
{{- $drain }}
{{- end }}

{{/*
The ServiceAccount name.
*/}}
{{- define "gpu-admission.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-admission.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The container image reference: repository@digest, else repository:tag (tag defaults to appVersion).
*/}}
{{- define "gpu-admission.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion (toString .Values.image.tag)) }}
{{- end }}
{{- end }}

{{/*
The Secret holding tls.crt and tls.key (and ca.crt in the generate and cert-manager modes).
*/}}
{{- define "gpu-admission.tlsSecretName" -}}
{{- if and (eq (include "gpu-admission.certsMode" .) "external") .Values.certificates.external.secretName }}
{{- .Values.certificates.external.secretName }}
{{- else }}
{{- printf "%s-tls" (include "gpu-admission.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The Secret in which `serve --certs self-managed` keeps its CA and serving certificate. The webhook
creates it (not Helm), so it is named apart from the -tls Secret of the other modes.
*/}}
{{- define "gpu-admission.selfManagedSecretName" -}}
{{- .Values.certificates.selfManaged.secretName | default (printf "%s-certs" (include "gpu-admission.fullname" .)) }}
{{- end }}

{{/*
"true" when the webhook talks to the API server: cluster state (--cluster), or self-managed
certificates (the Secret and the caBundles). Else "".
*/}}
{{- define "gpu-admission.apiAccess" -}}
{{- if or (ne .Values.cluster "off") (eq (include "gpu-admission.certsMode" .) "self-managed") }}true{{ end }}
{{- end }}

{{/*
"true" when the ValidatingWebhookConfiguration is rendered: /validate for the workloads, or for the
policy ConfigMap (webhooks.policyConfigMap). Else "".
*/}}
{{- define "gpu-admission.validatingConfiguration" -}}
{{- if or .Values.webhooks.validating.enabled .Values.webhooks.policyConfigMap.enabled }}true{{ end }}
{{- end }}

{{/*
The label that marks the policy ConfigMap; the policy webhook's objectSelector selects on it.
*/}}
{{- define "gpu-admission.policyLabel" -}}
gpu-admission.io/policy: "true"
{{- end }}

{{/*
The ConfigMap holding policy.yaml.
*/}}
{{- define "gpu-admission.policyConfigMapName" -}}
{{- printf "%s-policy" (include "gpu-admission.fullname" .) }}
{{- end }}

{{/*
The four DNS names the API server may use for the Service, as a YAML list: NAME, NAME.NS,
NAME.NS.svc and NAME.NS.svc.<clusterDomain>. The API server itself uses NAME.NS.svc.
*/}}
{{- define "gpu-admission.dnsNames" -}}
{{- $svc := include "gpu-admission.fullname" . }}
{{- $ns := .Release.Namespace }}
- {{ $svc }}
- {{ printf "%s.%s" $svc $ns }}
- {{ printf "%s.%s.svc" $svc $ns }}
- {{ printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain }}
{{- end }}

{{/*
The webhook configurations' namespaceSelector: never call the webhook for the release namespace
(so the webhook can always be repaired or scaled, whatever its state) or kube-system, plus
webhooks.excludedNamespaces, added to webhooks.namespaceSelector's own terms (all must match).
kubernetes.io/metadata.name is set on every namespace since 1.21.
*/}}
{{- define "gpu-admission.excludedNamespaces" -}}
{{- concat (list .Release.Namespace "kube-system") .Values.webhooks.excludedNamespaces | uniq | toJson }}
{{- end }}

{{- define "gpu-admission.namespaceSelector" -}}
{{- $user := .Values.webhooks.namespaceSelector | default dict }}
{{- $notIn := dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (include "gpu-admission.excludedNamespaces" . | fromJsonArray) }}
{{- $selector := dict "matchExpressions" (append ($user.matchExpressions | default list) $notIn) }}
{{- with $user.matchLabels }}
{{- $_ := set $selector "matchLabels" . }}
{{- end }}
{{- toYaml $selector }}
{{- end }}

{{/*
A webhook's failurePolicy: its own override, else webhooks.failurePolicy; Fail or Ignore.
Call with (list $ "validating") or (list $ "mutating").
*/}}
{{- define "gpu-admission.failurePolicy" -}}
{{- $root := index . 0 }}
{{- $which := index . 1 }}
{{- $byEnforcement := ternary "Fail" "Ignore" (eq (toString $root.Values.enforcement) "enforce") }}
{{- $policy := default (default $byEnforcement $root.Values.webhooks.failurePolicy) (index $root.Values.webhooks $which).failurePolicy }}
{{- if not (has $policy (list "Fail" "Ignore")) }}
{{- fail (printf "webhooks.%s.failurePolicy / webhooks.failurePolicy must be Fail or Ignore, got %q" $which (toString $policy)) }}
{{- end }}
{{- $policy }}
{{- end }}

{{/*
Checks on values that the template engine enforces even where values.schema.json is skipped.
Renders nothing; included by the Deployment and the webhook configurations.
*/}}
{{- define "gpu-admission.validateValues" -}}
{{- $certs := (.Values.certs | default dict).mode | default "" }}
{{- if not (has $certs (list "self-managed" "cert-manager" "provided")) }}
{{- fail (printf "certs.mode must be self-managed, cert-manager or provided, got %q" (toString $certs)) }}
{{- end }}
{{- $mode := .Values.certificates.mode | default "" }}
{{- if not (has $mode (list "" "self-managed" "cert-manager" "external" "generate")) }}
{{- fail (printf "certificates.mode must be empty (certs.mode decides), self-managed, cert-manager, external or generate, got %q" (toString $mode)) }}
{{- end }}
{{- $timeout := int .Values.webhooks.timeoutSeconds }}
{{- if or (lt $timeout 1) (gt $timeout 5) }}
{{- fail (printf "webhooks.timeoutSeconds must be between 1 and 5, got %v: a slower webhook eats the API server's request budget" .Values.webhooks.timeoutSeconds) }}
{{- end }}
{{- $mutatingTimeout := int (.Values.webhooks.mutating.timeoutSeconds | default 0) }}
{{- if or (lt $mutatingTimeout 0) (gt $mutatingTimeout 5) }}
{{- fail (printf "webhooks.mutating.timeoutSeconds must be between 1 and 5 (0: webhooks.timeoutSeconds), got %v: a slower webhook eats the API server's request budget" .Values.webhooks.mutating.timeoutSeconds) }}
{{- end }}
{{- if lt (int .Values.replicaCount) 2 }}
{{- fail (printf "replicaCount must be at least 2, got %v: with one replica every reschedule leaves the cluster without a webhook" .Values.replicaCount) }}
{{- end }}
{{- /* The fewest replicas there can be: replicaCount, or the HPA's minReplicas when it owns the count. */}}
{{- $floorName := "replicaCount" }}
{{- $floor := .Values.replicaCount }}
{{- $autoscaling := .Values.autoscaling | default dict }}
{{- if $autoscaling.enabled }}
{{- if lt (int $autoscaling.minReplicas) 2 }}
{{- fail (printf "autoscaling.minReplicas must be at least 2, got %v: with one replica every reschedule leaves the cluster without a webhook" $autoscaling.minReplicas) }}
{{- end }}
{{- if lt (int $autoscaling.maxReplicas) (int $autoscaling.minReplicas) }}
{{- fail (printf "autoscaling.maxReplicas (%v) must be at least autoscaling.minReplicas (%v)" $autoscaling.maxReplicas $autoscaling.minReplicas) }}
{{- end }}
{{- if not (dig "requests" "cpu" "" (.Values.resources | default dict)) }}
{{- fail "autoscaling.enabled needs resources.requests.cpu: the HorizontalPodAutoscaler's CPU target is a percentage of the CPU request, and without one it cannot scale" }}
{{- end }}
{{- if and $autoscaling.targetMemoryUtilizationPercentage (not (dig "requests" "memory" "" (.Values.resources | default dict))) }}
{{- fail "autoscaling.targetMemoryUtilizationPercentage needs resources.requests.memory: the target is a percentage of the memory request" }}
{{- end }}
{{- if not (or $autoscaling.targetCPUUtilizationPercentage $autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail "autoscaling.enabled needs a target: set autoscaling.targetCPUUtilizationPercentage (or targetMemoryUtilizationPercentage)" }}
{{- end }}
{{- $floorName = "autoscaling.minReplicas" }}
{{- $floor = $autoscaling.minReplicas }}
{{- end }}
{{- if and .Values.podDisruptionBudget.enabled (not (kindIs "string" .Values.podDisruptionBudget.minAvailable)) }}
{{- if ge (int .Values.podDisruptionBudget.minAvailable) (int $floor) }}
{{- fail (printf "podDisruptionBudget.minAvailable (%v) must be below %s (%v), or node drains block forever" .Values.podDisruptionBudget.minAvailable $floorName $floor) }}
{{- end }}
{{- end }}
{{- if and (eq (include "gpu-admission.certsMode" .) "external") (not .Values.certificates.external.caBundle) }}
{{- fail "certificates.external.caBundle is required with certs.mode provided (certificates.mode external): the base64 PEM CA that signed the serving certificate (printed by `gpu-admission certs`)" }}
{{- end }}
{{- end }}

{{/*
The serving Certificate in cert-manager mode (named like the Secret it writes).
*/}}
{{- define "gpu-admission.servingCertificateName" -}}
{{- printf "%s-tls" (include "gpu-admission.fullname" .) }}
{{- end }}

{{/*
The webhook configurations' annotations block (empty when there is none). In cert-manager mode,
cert-manager's cainjector fills caBundle from the serving Certificate's ca.crt.
*/}}
{{- define "gpu-admission.webhookAnnotations" -}}
{{- if or (eq (include "gpu-admission.certsMode" .) "cert-manager") .Values.webhooks.annotations }}
annotations:
  {{- if eq (include "gpu-admission.certsMode" .) "cert-manager" }}
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "gpu-admission.servingCertificateName" .) }}
  {{- end }}
  {{- with .Values.webhooks.annotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The audit's objects: <fullname>-audit, cut so the Service name stays a 63-character DNS label.
*/}}
{{- define "gpu-admission.audit.fullname" -}}
{{- printf "%s-audit" (include "gpu-admission.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{/*
The audit pod's selector labels. Its app.kubernetes.io/name is not the webhook's, so no selector
of the webhook matches an audit pod: not the webhook Deployment's own (immutable, so it cannot
gain a component label), nor the Service's, the PodDisruptionBudget's (an audit pod must never
count as an available webhook), the NetworkPolicy's, the HorizontalPodAutoscaler's (it scales on
the Deployment's selector) or the spread constraints'.
*/}}
{{- define "gpu-admission.audit.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-audit" (include "gpu-admission.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: audit
{{- end }}

{{/*
Standard labels on the audit's objects.
*/}}
{{- define "gpu-admission.audit.labels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.audit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpu-admission
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Checks on the audit values that hold even where values.schema.json is skipped. Renders nothing.
*/}}
{{- define "gpu-admission.audit.validateValues" -}}
{{- if not (regexMatch "^[1-9][0-9]*(s|m|h)$" (toString .Values.audit.interval)) }}
{{- fail (printf "audit.interval must be a duration such as 30s, 10m or 1h, got %q" (toString .Values.audit.interval)) }}
{{- end }}
{{- $port := int .Values.audit.metricsPort }}
{{- if or (lt $port 1) (gt $port 65535) }}
{{- fail (printf "audit.metricsPort must be a port number between 1 and 65535, got %v" .Values.audit.metricsPort) }}
{{- end }}
{{- end }}

{{/*
The ports the webhook listens on: hostNetwork.* on the node's network, else containerPorts.*.
*/}}
{{- define "gpu-admission.webhookPort" -}}
{{- int (ternary .Values.hostNetwork.webhookPort .Values.containerPorts.webhook .Values.hostNetwork.enabled) }}
{{- end }}

{{- define "gpu-admission.metricsPort" -}}
{{- int (ternary .Values.hostNetwork.metricsPort .Values.containerPorts.metrics .Values.hostNetwork.enabled) }}
{{- end }}

{{/*
An affinity with the architectures' required node affinity added: kubernetes.io/arch In
`architectures` joins every nodeSelectorTerm (terms are alternatives, so each needs it), or is
the only term. Call with (list $ AFFINITY); renders YAML, or nothing for an empty affinity.
*/}}
{{- define "gpu-admission.affinity" -}}
{{- $root := index . 0 }}
{{- $affinity := deepCopy (index . 1 | default dict) }}
{{- with $root.Values.architectures }}
{{- $arch := dict "key" "kubernetes.io/arch" "operator" "In" "values" . }}
{{- $node := $affinity.nodeAffinity | default dict }}
{{- $required := $node.requiredDuringSchedulingIgnoredDuringExecution | default dict }}
{{- $terms := list }}
{{- range ($required.nodeSelectorTerms | default (list dict)) }}
{{- $terms = append $terms (set (deepCopy .) "matchExpressions" (append (.matchExpressions | default list) $arch)) }}
{{- end }}
{{- $_ := set $required "nodeSelectorTerms" $terms }}
{{- $_ = set $node "requiredDuringSchedulingIgnoredDuringExecution" $required }}
{{- $_ = set $affinity "nodeAffinity" $node }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}

{{/*
Labels of the pre-delete hook's objects and pod: a name of its own, so no selector of the webhook
(Service, PodDisruptionBudget, NetworkPolicy, spread) picks the hook's pod up.
*/}}
{{- define "gpu-admission.hookLabels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
app.kubernetes.io/name: {{ printf "%s-pre-delete" (include "gpu-admission.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: pre-delete-hook
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpu-admission
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The backstop (templates/backstop.yaml): "true" when it is installed. backstop.enabled decides when
it is true or false; left empty, it follows `enforcement` (on once the chart enforces).
*/}}
{{- define "gpu-admission.backstopEnabled" -}}
{{- $v := .Values.backstop.enabled }}
{{- if kindIs "bool" $v }}{{ $v }}{{ else if eq (toString $v) "" }}{{ eq (toString .Values.enforcement) "enforce" }}
{{- else }}{{ fail (printf "backstop.enabled must be true, false or empty (follow enforcement), got %q" (toString $v)) }}{{ end }}
{{- end }}

{{/*
The backstop's objects as text: backstop.policies when set, else files/backstop.yaml (the export of
the built-in default policy) while the policy value is that policy; "" otherwise. The export's
first line records the SHA-256 of the policy text it was made from.
*/}}
{{- define "gpu-admission.backstopText" -}}
{{- if .Values.backstop.policies }}
{{- .Values.backstop.policies }}
{{- else }}
{{- $bundled := .Files.Get "files/backstop.yaml" }}
{{- $made := regexFind "[0-9a-f]{64}" (regexFind "^# policy-sha256: [0-9a-f]{64}" $bundled) }}
{{- $policy := .Values.policy }}
{{- if and (kindIs "string" $policy) (eq (sha256sum $policy) $made) }}
{{- $bundled }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The certificate mode in force: certs.mode (self-managed, cert-manager, provided), unless the older
certificates.mode names one (self-managed, cert-manager, external, generate). "provided" and
"external" are the same mode: a Secret the operator manages. Returns the internal name.
*/}}
{{- define "gpu-admission.certsMode" -}}
{{- $legacy := .Values.certificates.mode | default "" }}
{{- if $legacy }}{{ $legacy }}
{{- else }}
{{- $mode := (.Values.certs | default dict).mode | default "self-managed" }}
{{- if eq $mode "provided" }}external{{ else }}{{ $mode }}{{ end }}
{{- end }}
{{- end }}
