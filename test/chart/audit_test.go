// The optional audit (audit.enabled): a one-replica Deployment running `gpu-admission audit` with
// its own ServiceAccount, a list-only ClusterRole (plus its PolicyReports with
// audit.writeReports), a metrics Service, ServiceMonitor and NetworkPolicy of its own. Off by
// default; on, no selector of the webhook may pick up the audit pod.
package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const auditName = testRelease + "-audit"

// isAudit: the object belongs to the audit (named <fullname>-audit).
func isAudit(m Manifest) bool { return strings.HasSuffix(m.Name(), "-audit") }

// webhookOnly is the render without the audit's objects, for the webhook's own checks.
func webhookOnly(res *Result) *Result {
	out := &Result{Notes: res.Notes, Values: res.Values}
	for _, m := range res.Manifests {
		if !isAudit(m) {
			out.Manifests = append(out.Manifests, m)
		}
	}
	return out
}

func auditPod(t *testing.T, res *Result) (spec, c obj) {
	t.Helper()
	d := named(t, res, "Deployment", auditName)
	spec, _ = get(d, "spec", "template", "spec").(obj)
	cs := list(spec, "containers")
	if len(cs) != 1 {
		t.Fatalf("the audit pod has %d containers, want 1", len(cs))
	}
	return spec, cs[0].(obj)
}

// auditRules flattens the audit ClusterRole into sorted "group/resource:verb,verb" entries and
// fails on anything but plain resource rules.
func auditRules(t *testing.T, res *Result) []string {
	t.Helper()
	var got []string
	for _, rule := range list(named(t, res, "ClusterRole", auditName), "rules") {
		if len(list(rule, "resourceNames")) > 0 || len(list(rule, "nonResourceURLs")) > 0 {
			t.Errorf("unexpected rule fields in %v", rule)
		}
		verbs := strs(rule, "verbs")
		sort.Strings(verbs)
		for _, group := range strs(rule, "apiGroups") {
			for _, resource := range strs(rule, "resources") {
				got = append(got, group+"/"+resource+":"+strings.Join(verbs, ","))
			}
		}
	}
	sort.Strings(got)
	return got
}

// What the audit may list: the core workloads, DRA claims and the built-in ML kinds.
var wantAuditReads = []string{
	"/namespaces:list", "/pods:list", "/podtemplates:list", "/replicationcontrollers:list",
	"apps/daemonsets:list", "apps/deployments:list", "apps/replicasets:list", "apps/statefulsets:list",
	"batch/cronjobs:list", "batch/jobs:list",
	"batch.volcano.sh/jobs:list",
	"jobset.x-k8s.io/jobsets:list",
	"kubeflow.org/jaxjobs:list", "kubeflow.org/mpijobs:list", "kubeflow.org/paddlejobs:list",
	"kubeflow.org/pytorchjobs:list", "kubeflow.org/tfjobs:list", "kubeflow.org/xgboostjobs:list",
	"leaderworkerset.x-k8s.io/leaderworkersets:list",
	"ray.io/rayclusters:list", "ray.io/rayjobs:list", "ray.io/rayservices:list",
	"resource.k8s.io/resourceclaims:list", "resource.k8s.io/resourceclaimtemplates:list",
	"scheduling.k8s.io/podgroups:list",
	"trainer.kubeflow.org/trainingruntimes:list", "trainer.kubeflow.org/trainjobs:list",
}

const (
	openReportRule = "openreports.io/reports:create,delete,get,list,update"
	wgReportRule   = "wgpolicyk8s.io/policyreports:create,delete,get,list,update"
)

func sorted(l ...string) []string {
	out := append([]string{}, l...)
	sort.Strings(out)
	return out
}

// checkAuditRBAC: exactly the wanted rules, never watch, Secrets or a wildcard, bound to the
// audit pod's own ServiceAccount, whose token only the pod spec mounts.
func checkAuditRBAC(t *testing.T, res *Result, want []string) {
	t.Helper()
	got := auditRules(t, res)
	expectEq(t, "audit ClusterRole rules", got, sorted(want...))
	for _, r := range got {
		if strings.Contains(r, "watch") || strings.Contains(r, "secrets") || strings.Contains(r, "*") {
			t.Errorf("the audit ClusterRole grants %s", r)
		}
	}
	spec, _ := auditPod(t, res)
	sa := named(t, res, "ServiceAccount", auditName)
	expectEq(t, "audit serviceAccountName", str(spec, "serviceAccountName"), auditName)
	expectEq(t, "audit ServiceAccount automountServiceAccountToken", get(sa, "automountServiceAccountToken"), false)
	expectEq(t, "audit pod automountServiceAccountToken", get(spec, "automountServiceAccountToken"), true)
	b := named(t, res, "ClusterRoleBinding", auditName)
	expectEq(t, "audit binding roleRef", stringMap(get(b, "roleRef")),
		map[string]string{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": auditName})
	subjects := list(b, "subjects")
	if len(subjects) != 1 {
		t.Fatalf("audit binding subjects = %v, want the audit ServiceAccount only", subjects)
	}
	expectEq(t, "audit binding subject", stringMap(subjects[0]),
		map[string]string{"kind": "ServiceAccount", "name": auditName, "namespace": testNamespace})
	// The webhook's grant stays the webhook's.
	for _, b := range all(res, "ClusterRoleBinding") {
		if str(b, "metadata", "name") != auditName && str(b, "subjects", 0, "name") == auditName {
			t.Errorf("ClusterRoleBinding %s binds the audit ServiceAccount", str(b, "metadata", "name"))
		}
	}
}

// matches: every key of selector has its value in labels (a matchLabels selector).
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkSelectorsApart: no selector of the webhook selects the audit pod (or its Service), and the
// audit's selectors select no webhook pod.
func checkSelectorsApart(t *testing.T, res *Result) {
	t.Helper()
	auditPodLabels := stringMap(get(named(t, res, "Deployment", auditName), "spec", "template", "metadata", "labels"))
	expectEq(t, "audit pod component label", auditPodLabels["app.kubernetes.io/component"], "audit")
	hook := named(t, res, "Deployment", testRelease)
	hookPodLabels := stringMap(get(hook, "spec", "template", "metadata", "labels"))
	hookSpec := get(hook, "spec", "template", "spec")

	webhookSelectors := map[string]map[string]string{
		"webhook Deployment selector": stringMap(get(hook, "spec", "selector", "matchLabels")),
		"webhook Service selector":    stringMap(get(named(t, res, "Service", testRelease), "spec", "selector")),
		"webhook PodDisruptionBudget": stringMap(get(named(t, res, "PodDisruptionBudget", testRelease), "spec", "selector", "matchLabels")),
	}
	if nps := all(res, "NetworkPolicy"); len(nps) > 0 {
		webhookSelectors["webhook NetworkPolicy"] = stringMap(get(named(t, res, "NetworkPolicy", testRelease), "spec", "podSelector", "matchLabels"))
	}
	for i, c := range list(hookSpec, "topologySpreadConstraints") {
		webhookSelectors[fmt.Sprintf("webhook topologySpreadConstraints[%d]", i)] = stringMap(get(c, "labelSelector", "matchLabels"))
	}
	for _, term := range list(hookSpec, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution") {
		webhookSelectors["webhook podAntiAffinity"] = stringMap(get(term, "podAffinityTerm", "labelSelector", "matchLabels"))
	}
	for what, sel := range webhookSelectors {
		if len(sel) == 0 {
			t.Errorf("%s is empty", what)
		}
		if matches(sel, auditPodLabels) {
			t.Errorf("%s %v selects the audit pod %v", what, sel, auditPodLabels)
		}
	}
	auditSvc := named(t, res, "Service", auditName)
	if sm := all(res, "ServiceMonitor"); len(sm) > 0 {
		sel := stringMap(get(named(t, res, "ServiceMonitor", testRelease), "spec", "selector", "matchLabels"))
		if matches(sel, stringMap(get(auditSvc, "metadata", "labels"))) {
			t.Errorf("the webhook's ServiceMonitor selects the audit Service")
		}
		auditSM := named(t, res, "ServiceMonitor", auditName)
		sel = stringMap(get(auditSM, "spec", "selector", "matchLabels"))
		if !matches(sel, stringMap(get(auditSvc, "metadata", "labels"))) {
			t.Errorf("the audit ServiceMonitor %v does not select the audit Service", sel)
		}
		if matches(sel, stringMap(get(named(t, res, "Service", testRelease), "metadata", "labels"))) {
			t.Errorf("the audit ServiceMonitor selects the webhook Service")
		}
		expectEq(t, "audit ServiceMonitor port", str(auditSM, "spec", "endpoints", 0, "port"), "metrics")
	}

	auditSelectors := map[string]map[string]string{
		"audit Deployment selector": stringMap(get(named(t, res, "Deployment", auditName), "spec", "selector", "matchLabels")),
		"audit Service selector":    stringMap(get(auditSvc, "spec", "selector")),
	}
	if nps := all(res, "NetworkPolicy"); len(nps) > 0 {
		auditSelectors["audit NetworkPolicy"] = stringMap(get(named(t, res, "NetworkPolicy", auditName), "spec", "podSelector", "matchLabels"))
	}
	for what, sel := range auditSelectors {
		if !matches(sel, auditPodLabels) {
			t.Errorf("%s %v does not select the audit pod %v", what, sel, auditPodLabels)
		}
		if matches(sel, hookPodLabels) {
			t.Errorf("%s %v selects the webhook pods %v", what, sel, hookPodLabels)
		}
	}
}

// checkAudit checks the audit Deployment, its Service and NetworkPolicy; wantArgs are its args.
func checkAudit(t *testing.T, res *Result, wantArgs []string) {
	t.Helper()
	d := named(t, res, "Deployment", auditName)
	expectEq(t, "audit replicas", get(d, "spec", "replicas"), float64(1))
	expectEq(t, "audit strategy", stringMap(get(d, "spec", "strategy")), map[string]string{"type": "Recreate"})
	spec, c := auditPod(t, res)
	checkRestricted(t, "audit", spec, c)
	expectEq(t, "audit args", strs(c, "args"), wantArgs)

	// The image, pull settings and security contexts are the webhook's.
	hookSpec, hookC := podSpec(t, webhookOnly(res)), container(t, webhookOnly(res))
	for _, f := range []string{"image", "imagePullPolicy", "securityContext"} {
		expectEq(t, "audit "+f, get(c, f), get(hookC, f))
	}
	for _, f := range []string{"imagePullSecrets", "securityContext"} {
		expectEq(t, "audit pod "+f, get(spec, f), get(hookSpec, f))
	}

	// The policy: the webhook's ConfigMap, mounted as a directory; no other volume but /tmp.
	mounts := map[string]string{}
	for _, m := range list(c, "volumeMounts") {
		if get(m, "subPath") != nil || get(m, "subPathExpr") != nil {
			t.Errorf("audit volumeMount %s uses subPath: policy updates would never reach it", str(m, "name"))
		}
		mounts[str(m, "name")] = str(m, "mountPath")
	}
	policyArg := argValue(t, c, "--policy")
	cm := named(t, res, "ConfigMap", testRelease+"-policy")
	for _, v := range list(spec, "volumes") {
		switch {
		case get(v, "configMap") != nil:
			expectEq(t, "audit policy ConfigMap", str(v, "configMap", "name"), str(cm, "metadata", "name"))
			if mounts[str(v, "name")]+"/policy.yaml" != policyArg {
				t.Errorf("audit --policy %s is not policy.yaml of the ConfigMap mounted at %s", policyArg, mounts[str(v, "name")])
			}
		case get(v, "emptyDir") != nil:
		default:
			t.Errorf("audit volume %v: the audit needs only the policy (and /tmp)", v)
		}
	}

	// /healthz and /metrics on the named metrics port, which the args listen on.
	port := containerPort(t, c, "metrics")
	if !strings.HasSuffix(argValue(t, c, "--metrics-listen"), fmt.Sprintf(":%v", port)) {
		t.Errorf("--metrics-listen %s is not the metrics port %v", argValue(t, c, "--metrics-listen"), port)
	}
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		expectEq(t, "audit "+probe+" path", str(c, probe, "httpGet", "path"), "/healthz")
		if s := str(c, probe, "httpGet", "scheme"); s != "" && s != "HTTP" {
			t.Errorf("audit %s scheme %s, want HTTP", probe, s)
		}
		expectEq(t, "audit "+probe+" port", containerPort(t, c, get(c, probe, "httpGet", "port")), port)
	}
	svc := named(t, res, "Service", auditName)
	expectEq(t, "audit Service port", str(svc, "spec", "ports", 0, "name"), "metrics")
	expectEq(t, "audit Service target", containerPort(t, c, get(svc, "spec", "ports", 0, "targetPort")), port)
	if n := len(list(svc, "spec", "ports")); n != 1 {
		t.Errorf("the audit Service has %d ports, want metrics only", n)
	}

	// NetworkPolicy: ingress only to the metrics port, egress only to the API server's ports.
	if len(all(res, "NetworkPolicy")) > 0 {
		np := named(t, res, "NetworkPolicy", auditName)
		var in []float64
		for _, rule := range list(np, "spec", "ingress") {
			if len(list(rule, "ports")) == 0 {
				t.Errorf("an audit ingress rule allows every port: %v", rule)
			}
			for _, p := range list(rule, "ports") {
				in = append(in, num(t, p, "port"))
			}
		}
		expectEq(t, "audit NetworkPolicy ingress ports", in, []float64{port})
		if types := strs(np, "spec", "policyTypes"); len(types) == 2 {
			var out []float64
			for _, rule := range list(np, "spec", "egress") {
				if len(list(rule, "ports")) == 0 {
					t.Errorf("an audit egress rule allows every port: %v", rule)
				}
				for _, p := range list(rule, "ports") {
					out = append(out, num(t, p, "port"))
				}
			}
			expectEq(t, "audit NetworkPolicy egress ports (API server)", out, []float64{443, 6443})
		}
	}

	// The webhook is unchanged beside it.
	hook := webhookOnly(res)
	checkDeployment(t, hook)
	checkNetworkPolicy(t, hook)
	checkSelectorsApart(t, res)
}

var defaultAuditArgs = []string{"audit", "--policy", "/etc/gpu-admission/policy/policy.yaml",
	"--interval", "10m", "--metrics-listen", "0.0.0.0:9091", "--write-reports"}

func TestAuditOffByDefault(t *testing.T) {
	for _, values := range []string{"{}", "serviceMonitor: {enabled: true}\nnetworkPolicy: {enabled: true}",
		"audit: {enabled: false, extraResources: [{apiGroup: example.com, resources: [things]}]}"} {
		res := renderValues(t, values)
		for _, m := range res.Manifests {
			if isAudit(m) || strings.Contains(m.Source, "audit") {
				t.Errorf("audit disabled (%s), but %s/%s is rendered from %s", values, m.Kind(), m.Name(), m.Source)
			}
		}
		if strings.Contains(res.Notes, auditName) || strings.Contains(res.Notes, "policyreports") {
			t.Errorf("NOTES.txt mentions the audit although it is off:\n%s", res.Notes)
		}
	}
}

func TestAuditEnabled(t *testing.T) {
	res := renderValues(t, "audit: {enabled: true}")
	checkMetadata(t, res, testRelease, testNamespace)
	var auditKinds []string
	for _, m := range res.Manifests {
		if isAudit(m) {
			auditKinds = append(auditKinds, m.Kind())
		}
	}
	sort.Strings(auditKinds)
	expectEq(t, "audit objects", auditKinds, []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "Service", "ServiceAccount"})
	checkAudit(t, res, defaultAuditArgs)
	checkAuditRBAC(t, res, append(append([]string{}, wantAuditReads...), openReportRule, wgReportRule))
	_, c := auditPod(t, res)
	expectEq(t, "audit resources", get(c, "resources"), obj{
		"requests": obj{"cpu": "50m", "memory": "64Mi"}, "limits": obj{"memory": "256Mi"}})
	spec, _ := auditPod(t, res)
	expectEq(t, "audit nodeSelector", stringMap(get(spec, "nodeSelector")), map[string]string{"kubernetes.io/os": "linux"})
	if get(spec, "priorityClassName") != nil || get(spec, "tolerations") != nil {
		t.Errorf("audit pod sets a priority class or tolerations by default: %v", spec)
	}
	// Its only affinity is the architectures' (the image's).
	expectEq(t, "audit affinity", get(spec, "affinity"), vals(t, `
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}]}]`))
	// The webhook's objects are exactly those of a render without the audit.
	var hookKinds []string
	for _, m := range webhookOnly(res).Manifests {
		hookKinds = append(hookKinds, m.Kind())
	}
	sort.Strings(hookKinds)
	expectEq(t, "webhook objects beside the audit", hookKinds, kinds(mustRender(t, Options{})))

	for _, want := range []string{"kubectl get reports.openreports.io -A", "kubectl get policyreports -A",
		"svc/" + auditName + " 9091:9091", "gpu_admission_audit_",
		"neither openreports.io/v1alpha1 nor wgpolicyk8s.io/v1alpha2 is served"} {
		if !strings.Contains(res.Notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, res.Notes)
		}
	}
	for _, served := range []string{"wgpolicyk8s.io/v1alpha2", "openreports.io/v1alpha1"} {
		withCRD := mustRender(t, Options{Values: []map[string]interface{}{vals(t, "audit: {enabled: true}")}, APIVersions: []string{served}})
		if strings.Contains(withCRD.Notes, "WARNING") {
			t.Errorf("NOTES.txt warns although %s is served:\n%s", served, withCRD.Notes)
		}
	}
}

// audit.reportApi pins the report API: --report-api, write access to that API alone, NOTES.txt
// naming its reports and warning when the cluster does not serve it.
func TestAuditReportAPI(t *testing.T) {
	for _, c := range []struct{ api, rule, kubectl, other string }{
		{"openreports.io/v1alpha1", openReportRule, "kubectl get reports.openreports.io -A", "policyreports"},
		{"wgpolicyk8s.io/v1alpha2", wgReportRule, "kubectl get policyreports -A", "reports.openreports.io"},
	} {
		values := "audit: {enabled: true, reportApi: " + c.api + "}"
		res := renderValues(t, values)
		checkAudit(t, res, append(append([]string{}, defaultAuditArgs...), "--report-api", c.api))
		checkAuditRBAC(t, res, append(append([]string{}, wantAuditReads...), c.rule))
		if !strings.Contains(res.Notes, c.kubectl) || strings.Contains(res.Notes, c.other) {
			t.Errorf("NOTES.txt (%s) should name %q and not %q:\n%s", c.api, c.kubectl, c.other, res.Notes)
		}
		if !strings.Contains(res.Notes, "WARNING: "+c.api+" (audit.reportApi) is not served") {
			t.Errorf("NOTES.txt does not warn that %s is not served:\n%s", c.api, res.Notes)
		}
		served := mustRender(t, Options{Values: []map[string]interface{}{vals(t, values)}, APIVersions: []string{c.api}})
		if strings.Contains(served.Notes, "WARNING") {
			t.Errorf("NOTES.txt warns although %s is served:\n%s", c.api, served.Notes)
		}
	}
	// Without writeReports the API is not passed and nothing is written.
	res := renderValues(t, "audit: {enabled: true, writeReports: false, reportApi: openreports.io/v1alpha1}")
	checkAudit(t, res, defaultAuditArgs[:len(defaultAuditArgs)-1])
	checkAuditRBAC(t, res, wantAuditReads)
}

// writeReports false: no --write-reports and no write access at all.
func TestAuditWithoutReports(t *testing.T) {
	res := renderValues(t, "audit: {enabled: true, writeReports: false}")
	checkAudit(t, res, defaultAuditArgs[:len(defaultAuditArgs)-1])
	checkAuditRBAC(t, res, wantAuditReads)
	if strings.Contains(res.Notes, "policyreports") || strings.Contains(res.Notes, "WARNING") {
		t.Errorf("NOTES.txt speaks of reports although writeReports is false:\n%s", res.Notes)
	}
}

// Every built-in ML kind of policy/config/ml_kinds.cpp is listable: the plural its CRD uses is
// the kind in lower case plus "s" for all of them.
func TestAuditListsEveryBuiltinKind(t *testing.T) {
	granted := map[string]bool{}
	for _, r := range auditRules(t, renderValues(t, "audit: {enabled: true}")) {
		granted[r] = true
	}
	rows := regexp.MustCompile(`\{"([a-z0-9.-]*)", "([A-Za-z]+)",`).FindAllStringSubmatch(repoFile(t, "policy/config/ml_kinds.cpp"), -1)
	if len(rows) < 15 {
		t.Fatalf("found only %d rows in policy/config/ml_kinds.cpp", len(rows))
	}
	for _, row := range rows {
		if want := row[1] + "/" + strings.ToLower(row[2]) + "s:list"; !granted[want] {
			t.Errorf("the audit ClusterRole does not grant %s (kind %s of policy/config/ml_kinds.cpp)", want, row[2])
		}
	}
}

func TestAuditValues(t *testing.T) {
	res := renderValues(t, `
commonLabels: {team: platform}
imagePullSecrets: [{name: regcred}]
image: {repository: registry.example.com/gpu-admission, tag: "0.2.0"}
serviceMonitor: {enabled: true, labels: {release: prom}}
networkPolicy: {metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}
audit:
  enabled: true
  interval: 1h
  metricsPort: 9100
  nodeSelector: {pool: system}
  tolerations: [{key: CriticalAddonsOnly, operator: Exists}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}
  priorityClassName: low
  resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
  extraResources:
    - {apiGroup: example.com, resources: [trainingjobs, sweeps]}
`)
	checkMetadata(t, res, testRelease, testNamespace)
	checkAudit(t, res, []string{"audit", "--policy", "/etc/gpu-admission/policy/policy.yaml",
		"--interval", "1h", "--metrics-listen", "0.0.0.0:9100", "--write-reports"})
	checkAuditRBAC(t, res, append(append([]string{}, wantAuditReads...), openReportRule, wgReportRule,
		"example.com/sweeps:list", "example.com/trainingjobs:list"))
	spec, c := auditPod(t, res)
	expectEq(t, "audit image", str(c, "image"), "registry.example.com/gpu-admission:0.2.0")
	// Maps merge with the defaults, as in Helm.
	expectEq(t, "audit nodeSelector", stringMap(get(spec, "nodeSelector")), map[string]string{"pool": "system", "kubernetes.io/os": "linux"})
	expectEq(t, "audit toleration", str(spec, "tolerations", 0, "key"), "CriticalAddonsOnly")
	expectEq(t, "audit affinity", str(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
		"nodeSelectorTerms", 0, "matchExpressions", 0, "key"), "pool")
	expectEq(t, "audit priorityClassName", str(spec, "priorityClassName"), "low")
	expectEq(t, "audit memory limit", str(c, "resources", "limits", "memory"), "128Mi")
	expectEq(t, "audit Service port", get(named(t, res, "Service", auditName), "spec", "ports", 0, "port"), float64(9100))
	expectEq(t, "audit ServiceMonitor label", stringMap(get(named(t, res, "ServiceMonitor", auditName), "metadata", "labels"))["release"], "prom")
	expectEq(t, "audit metrics from", str(named(t, res, "NetworkPolicy", auditName), "spec", "ingress", 0, "from", 0,
		"namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"), "monitoring")
	for _, m := range res.Manifests {
		if isAudit(m) && stringMap(get(m.Object, "metadata", "labels"))["team"] != "platform" {
			t.Errorf("%s/%s lacks commonLabels", m.Kind(), m.Name())
		}
	}
	// The webhook's own pod settings stay the webhook's.
	hookSpec := podSpec(t, webhookOnly(res))
	if str(hookSpec, "priorityClassName") != "system-cluster-critical" || str(hookSpec, "nodeSelector", "pool") != "" {
		t.Errorf("audit pod settings leaked into the webhook pod: %v", hookSpec)
	}

	// A policy change restarts the audit (a new checksum), never the webhook.
	other := renderValues(t, "audit: {enabled: true}\npolicy: |\n  kind: GpuAdmissionPolicy\n")
	sum := func(r *Result) string {
		return str(named(t, r, "Deployment", auditName), "spec", "template", "metadata", "annotations", "checksum/policy")
	}
	if a, b := sum(renderValues(t, "audit: {enabled: true}")), sum(other); a == "" || a == b {
		t.Errorf("the audit's checksum/policy does not follow the policy: %q and %q", a, b)
	}

	// No NetworkPolicy without networkPolicy.enabled; ingress only without denyEgress.
	if n := len(all(renderValues(t, "audit: {enabled: true}\nnetworkPolicy: {enabled: false}"), "NetworkPolicy")); n != 0 {
		t.Errorf("%d NetworkPolicies although networkPolicy.enabled is false", n)
	}
	open := named(t, renderValues(t, "audit: {enabled: true}\nnetworkPolicy: {denyEgress: false}"), "NetworkPolicy", auditName)
	expectEq(t, "audit policyTypes without denyEgress", strs(open, "spec", "policyTypes"), []string{"Ingress"})

	// rbac.create false: the ServiceAccount, no ClusterRole or binding (the grant is the operator's).
	noRBAC := renderValues(t, "audit: {enabled: true}\nrbac: {create: false}")
	named(t, noRBAC, "ServiceAccount", auditName)
	if n := len(all(noRBAC, "ClusterRole")) + len(all(noRBAC, "ClusterRoleBinding")); n != 0 {
		t.Errorf("rbac.create false still renders %d RBAC objects", n)
	}

	// Long release names: every audit name stays a 63-character DNS label.
	long := mustRender(t, Options{ReleaseName: strings.Repeat("r", 60), Values: []map[string]interface{}{vals(t, "audit: {enabled: true}")}})
	for _, m := range long.Manifests {
		if isAudit(m) && (len(m.Name()) > 63 || strings.Contains(m.Name(), "--")) {
			t.Errorf("%s name %q is not a valid DNS label", m.Kind(), m.Name())
		}
	}
}

// The policy's spec.workloads kinds need audit.extraResources: NOTES.txt names each missing one.
func TestAuditNotesNameUngrantedWorkloads(t *testing.T) {
	policy := "  apiVersion: gpu-admission.io/v1alpha1\n  kind: GpuAdmissionPolicy\n  metadata: {name: x}\n  spec:\n" +
		"    workloads:\n      - {apiVersion: example.com/v1, kind: TrainingJob, templates: [spec.template]}\n"
	res := renderValues(t, "audit: {enabled: true}\npolicy: |\n"+policy)
	if !strings.Contains(res.Notes, "spec.workloads kind TrainingJob (example.com/v1) is not in audit.extraResources") ||
		!strings.Contains(res.Notes, "{apiGroup: example.com, resources: [<its plural, e.g. trainingjobs>]}") {
		t.Errorf("NOTES.txt does not name the ungranted kind:\n%s", res.Notes)
	}
	res = renderValues(t, "audit: {enabled: true, extraResources: [{apiGroup: example.com, resources: [trainingjobs]}]}\npolicy: |\n"+policy)
	if strings.Contains(res.Notes, "TrainingJob") {
		t.Errorf("NOTES.txt warns about a granted kind:\n%s", res.Notes)
	}
	// Policies of other shapes render without a warning (lint, not NOTES.txt, reports them).
	for _, p := range []string{"true", "kind: GpuAdmissionPolicy\n", "spec: x\n", "spec: {workloads: x}\n", "spec: {workloads: [x, 3]}\n"} {
		res := mustRender(t, Options{Values: []map[string]interface{}{vals(t, "audit: {enabled: true}"), {"policy": p}}})
		if strings.Contains(res.Notes, "spec.workloads") {
			t.Errorf("policy %q: NOTES.txt warns about spec.workloads:\n%s", p, res.Notes)
		}
	}
}

// Each refusal names the value, from the schema and, with the schema skipped, from the templates.
func TestAuditRefusals(t *testing.T) {
	for _, bad := range []struct{ values, want string }{
		{"audit: {enable: true}", "Additional property enable is not allowed"},
		{"audit: {enabled: \"yes\"}", "audit.enabled: Invalid type"},
		{"audit: {interval: 10 minutes}", "audit.interval: Does not match pattern"},
		{"audit: {interval: 0s}", "audit.interval: Does not match pattern"},
		{"audit: {interval: 600}", "audit.interval: Invalid type"},
		{"audit: {metricsPort: 0}", "audit.metricsPort: Must be greater than or equal to 1"},
		{"audit: {extraResources: [{apiGroup: example.com, resources: [\"*\"]}]}", "audit.extraResources.0.resources.0: Does not match pattern"},
		{"audit: {extraResources: [{apiGroup: example.com, resources: [pods/log]}]}", "audit.extraResources.0.resources.0: Does not match pattern"},
		{"audit: {extraResources: [{apiGroup: example.com}]}", "resources is required"},
		{"audit: {extraResources: [{apiGroup: example.com, resources: [things], verbs: [get]}]}", "Additional property verbs is not allowed"},
	} {
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, bad.values)}}, bad.want)
	}
	for _, v := range []string{"10 minutes", "1d", "0s", "-5m"} {
		mustFail(t, Options{SkipSchema: true, Values: []map[string]interface{}{{"audit": map[string]interface{}{"enabled": true, "interval": v}}}},
			"audit.interval must be a duration such as 30s, 10m or 1h, got \""+v+"\"")
	}
	mustFail(t, Options{SkipSchema: true, Values: []map[string]interface{}{vals(t, "audit: {enabled: true, metricsPort: 70000}")}},
		"audit.metricsPort must be a port number between 1 and 65535, got 70000")
}

// Every flag the audit Deployment passes is one `gpu-admission audit` knows. A binary without
// the audit command fails the test: the chart would deploy a pod that cannot start.
func TestAuditAcceptsTheChartsFlags(t *testing.T) {
	bin := binary(t)
	out, err := exec.Command(bin, "audit", "--help").CombinedOutput()
	if err != nil || strings.Contains(string(out), `unknown command "audit"`) {
		t.Fatalf("%s audit --help failed (%v): the chart's audit Deployment runs that command\n%s", bin, err, out)
	}
	_, c := auditPod(t, renderValues(t, "audit: {enabled: true}"))
	for _, a := range strs(c, "args") {
		if strings.HasPrefix(a, "--") && !strings.Contains(string(out), a) {
			t.Errorf("the chart passes %s, which `gpu-admission audit --help` does not list:\n%s", a, out)
		}
	}
}
