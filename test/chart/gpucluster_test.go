// Tests for what the chart does for GPU clusters: the GPU stack's namespaces left out of the webhook
// configurations and exempt in the policy, the mutating timeout, the priority class and the
// ResourceQuota that admits it, host networking, the architectures, the pre-delete hook, and the
// default install as a cluster admin reads it. The UPDATEs the matchConditions skip are tested case
// by case in conditions_test.go.
package main

import (
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func webhookConfig(t *testing.T, res *Result, kind string) obj {
	t.Helper()
	return list(one(t, res, kind), "webhooks")[0].(obj)
}

// The values of the chart's NotIn expression (the last of the namespaceSelector's expressions).
func excludedNamespaces(t *testing.T, h obj) []string {
	t.Helper()
	exprs := list(h, "namespaceSelector", "matchExpressions")
	if len(exprs) == 0 {
		t.Fatalf("%s has no namespaceSelector expression", str(h, "name"))
	}
	last := exprs[len(exprs)-1]
	if str(last, "key") != "kubernetes.io/metadata.name" || str(last, "operator") != "NotIn" {
		t.Fatalf("%s: the last namespaceSelector expression is %v, want the chart's NotIn", str(h, "name"), last)
	}
	return strs(last, "values")
}

func policyExemptNamespaces(t *testing.T, res *Result) []string {
	t.Helper()
	var p obj
	if err := yaml.Unmarshal([]byte(renderedPolicy(t, res)), &p); err != nil {
		t.Fatalf("the rendered policy is not YAML: %v", err)
	}
	return strs(p, "spec", "exemptions", "namespaces")
}

// Every namespace the configurations leave out is exempt in the chart's default policy and the other
// way round, so the audit and `check` (which read the policy) agree with what the API server sends.
func TestGpuStackNamespacesAreExcludedAndExempt(t *testing.T) {
	res := mustRender(t, Options{})
	exempt := sorted(policyExemptNamespaces(t, res)...)
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		excluded := sorted(excludedNamespaces(t, webhookConfig(t, res, kind))...)
		expectEq(t, kind+" excluded namespaces = the default policy's exempt namespaces", excluded, exempt)
	}
	for _, ns := range append([]string{"kube-system", testNamespace}, defaultExcluded...) {
		found := false
		for _, e := range exempt {
			found = found || e == ns
		}
		if !found {
			t.Errorf("namespace %s is neither excluded nor exempt by default", ns)
		}
	}
}

// webhooks.namespaceSelector keeps the user's terms; the chart's NotIn comes last and always.
func TestNamespaceSelectorIsMerged(t *testing.T) {
	res := renderValues(t, `
webhooks:
  excludedNamespaces: [cert-manager]
  namespaceSelector:
    matchLabels: {gpu-admission.io/enabled: "true"}
    matchExpressions: [{key: tier, operator: NotIn, values: [sandbox]}]
`)
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		h := webhookConfig(t, res, kind)
		expectEq(t, kind+" matchLabels", stringMap(get(h, "namespaceSelector", "matchLabels")), map[string]string{"gpu-admission.io/enabled": "true"})
		exprs := list(h, "namespaceSelector", "matchExpressions")
		if len(exprs) != 2 || str(exprs[0], "key") != "tier" {
			t.Fatalf("%s matchExpressions = %v, want the user's then the chart's", kind, exprs)
		}
		expectEq(t, kind+" excluded", excludedNamespaces(t, h), []string{testNamespace, "kube-system", "cert-manager"})
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "webhooks: {namespaceSelector: {matchExpressions: [{key: a, operator: Equals}]}}")}},
		"must be one of the following")
}

func TestMutatingTimeout(t *testing.T) {
	res := mustRender(t, Options{})
	expectEq(t, "validating timeout", get(webhookConfig(t, res, "ValidatingWebhookConfiguration"), "timeoutSeconds"), float64(5))
	expectEq(t, "mutating timeout", get(webhookConfig(t, res, "MutatingWebhookConfiguration"), "timeoutSeconds"), float64(3))
	res = renderValues(t, "webhooks: {timeoutSeconds: 4, mutating: {timeoutSeconds: 0}}")
	expectEq(t, "mutating timeout 0 follows webhooks.timeoutSeconds", get(webhookConfig(t, res, "MutatingWebhookConfiguration"), "timeoutSeconds"), float64(4))
	for _, bad := range []string{"6", "-1"} {
		opts := Options{Values: []map[string]interface{}{vals(t, "webhooks: {mutating: {timeoutSeconds: "+bad+"}}")}}
		mustFail(t, opts, "webhooks.mutating.timeoutSeconds")
		opts.SkipSchema = true
		mustFail(t, opts, "webhooks.mutating.timeoutSeconds must be between 1 and 5")
	}
}

// The webhook runs as system-cluster-critical, and outside kube-system the chart adds the
// ResourceQuota without which the API server refuses pods of that class.
func TestPriorityClassAndItsQuota(t *testing.T) {
	quota := func(t *testing.T, res *Result) obj {
		t.Helper()
		qs := all(res, "ResourceQuota")
		if len(qs) != 1 {
			t.Fatalf("want one ResourceQuota, got %d", len(qs))
		}
		q := qs[0]
		expectEq(t, "quota name", str(q, "metadata", "name"), testRelease+"-critical-pods")
		exprs := list(q, "spec", "scopeSelector", "matchExpressions")
		if len(exprs) != 1 || str(exprs[0], "scopeName") != "PriorityClass" || str(exprs[0], "operator") != "In" {
			t.Fatalf("quota scopeSelector = %v, want PriorityClass In [...]", get(q, "spec", "scopeSelector"))
		}
		if len(stringMap(get(q, "spec", "hard"))) != 1 {
			t.Errorf("quota hard = %v, want pods only", get(q, "spec", "hard"))
		}
		return q
	}
	pods := func(q obj) string { return str(q, "spec", "hard", "pods") }
	classes := func(q obj) []string { return strs(list(q, "spec", "scopeSelector", "matchExpressions")[0], "values") }

	res := mustRender(t, Options{})
	expectEq(t, "default priorityClassName", str(podSpec(t, res), "priorityClassName"), "system-cluster-critical")
	q := quota(t, res)
	expectEq(t, "quota classes", classes(q), []string{"system-cluster-critical"})
	expectEq(t, "quota pods: twice (2 replicas + 1 surge)", pods(q), "6")

	q = quota(t, renderValues(t, "priorityClassName: system-node-critical\nautoscaling: {enabled: true, maxReplicas: 5}\nmaxSurge: 2"))
	expectEq(t, "system-node-critical quota classes", classes(q), []string{"system-node-critical"})
	expectEq(t, "quota pods with an HPA: twice (5 + 2)", pods(q), "14")
	q = quota(t, renderValues(t, "maxSurge: 50%\naudit: {enabled: true, priorityClassName: system-node-critical}"))
	expectEq(t, "quota classes with the audit's", classes(q), []string{"system-cluster-critical", "system-node-critical"})
	expectEq(t, "quota pods: twice (2 + every replica again) + the audit's 2", pods(q), "10")
	expectEq(t, "priorityClassQuota.pods", pods(quota(t, renderValues(t, "priorityClassQuota: {pods: 3}"))), "3")

	// No quota where the class needs none, or where it is not wanted.
	for _, c := range []struct{ what, ns, values string }{
		{"in kube-system", "kube-system", ""},
		{"turned off", "", "priorityClassQuota: {enabled: false}"},
		{"another class", "", "priorityClassName: gpu-infra"},
		{"no class", "", `priorityClassName: ""`},
	} {
		res := mustRender(t, Options{Namespace: c.ns, Values: []map[string]interface{}{vals(t, c.values)}})
		if n := len(all(res, "ResourceQuota")); n != 0 {
			t.Errorf("%s: %d ResourceQuotas, want none", c.what, n)
		}
	}
	expectEq(t, "no class", get(podSpec(t, renderValues(t, `priorityClassName: ""`)), "priorityClassName"), nil)
}

func TestHostNetwork(t *testing.T) {
	spec := podSpec(t, mustRender(t, Options{}))
	if get(spec, "hostNetwork") != nil || get(spec, "dnsPolicy") != nil {
		t.Errorf("hostNetwork or dnsPolicy set by default: %v %v", get(spec, "hostNetwork"), get(spec, "dnsPolicy"))
	}
	res := renderValues(t, "hostNetwork: {enabled: true}")
	spec = podSpec(t, res)
	expectEq(t, "hostNetwork", get(spec, "hostNetwork"), true)
	expectEq(t, "dnsPolicy", str(spec, "dnsPolicy"), "ClusterFirstWithHostNet")
	c := container(t, res)
	expectEq(t, "webhook port on the node", containerPort(t, c, "https"), float64(18443))
	expectEq(t, "metrics port on the node", containerPort(t, c, "metrics"), float64(19090))
	expectEq(t, "--listen", argValue(t, c, "--listen"), "0.0.0.0:18443")
	expectEq(t, "--metrics-listen", argValue(t, c, "--metrics-listen"), "0.0.0.0:19090")
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		expectEq(t, probe+" port", containerPort(t, c, get(c, probe, "httpGet", "port")), float64(18443))
	}
	checkNetworkPolicy(t, res) // its ingress ports are the node ports
	svc := one(t, res, "Service")
	for _, p := range list(svc, "spec", "ports") {
		if _, named := get(p, "targetPort").(string); !named {
			t.Errorf("Service port %v targets a number, not the container port's name", p)
		}
	}
	if !strings.Contains(res.Notes, `the namespace needs Pod Security
"privileged"`) {
		t.Errorf("NOTES.txt does not say the namespace needs Pod Security privileged:\n%s", res.Notes)
	}
	c = container(t, renderValues(t, "hostNetwork: {enabled: true, webhookPort: 12443, metricsPort: 12090}"))
	expectEq(t, "hostNetwork.webhookPort", argValue(t, c, "--listen"), "0.0.0.0:12443")
	expectEq(t, "hostNetwork.metricsPort", argValue(t, c, "--metrics-listen"), "0.0.0.0:12090")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "hostNetwork: {enabled: true, webhookPort: 70000}")}}, "hostNetwork.webhookPort")
}

// The architectures' required node affinity: one term alone, or added to each of the user's terms.
func TestArchitectures(t *testing.T) {
	archTerm := obj{"key": "kubernetes.io/arch", "operator": "In", "values": []interface{}{"amd64", "arm64"}}
	res := renderValues(t, "audit: {enabled: true}")
	for what, spec := range map[string]obj{"webhook": podSpec(t, webhookOnly(res)), "audit": func() obj { s, _ := auditPod(t, res); return s }()} {
		terms := list(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		expectEq(t, what+" node affinity", terms, []interface{}{obj{"matchExpressions": []interface{}{archTerm}}})
	}
	if hook := podSpec(t, webhookOnly(res)); len(list(hook, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")) != 1 {
		t.Errorf("the default podAntiAffinity is gone: %v", get(hook, "affinity"))
	}

	spec := podSpec(t, renderValues(t, `
architectures: [arm64]
affinity:
  podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions: [{key: pool, operator: In, values: [system]}]
        - matchFields: [{key: metadata.name, operator: In, values: [node-a]}]
`))
	arm := obj{"key": "kubernetes.io/arch", "operator": "In", "values": []interface{}{"arm64"}}
	expectEq(t, "user terms, each with the architectures", list(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"),
		[]interface{}{
			obj{"matchExpressions": []interface{}{obj{"key": "pool", "operator": "In", "values": []interface{}{"system"}}, arm}},
			obj{"matchFields": []interface{}{obj{"key": "metadata.name", "operator": "In", "values": []interface{}{"node-a"}}}, "matchExpressions": []interface{}{arm}},
		})
	if get(spec, "affinity", "podAffinity") == nil || get(spec, "affinity", "podAntiAffinity") != nil {
		t.Errorf("the user's affinity is not kept as it is: %v", get(spec, "affinity"))
	}

	spec = podSpec(t, renderValues(t, "architectures: []"))
	if get(spec, "affinity", "nodeAffinity") != nil || get(spec, "affinity", "podAntiAffinity") == nil {
		t.Errorf("architectures: [] still constrains nodes, or lost the spread: %v", get(spec, "affinity"))
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, `architectures: ["amd64,arm64"]`)}}, "architectures")
}

func isHookObject(o obj) bool {
	_, ok := stringMap(get(o, "metadata", "annotations"))["helm.sh/hook"]
	return ok
}

// withoutHooks is the render without Helm hooks: what `kubectl apply` of deploy/ would create.
func withoutHooks(res *Result) *Result {
	out := &Result{Notes: res.Notes, Values: res.Values}
	for _, m := range res.Manifests {
		if !isHookObject(m.Object) {
			out.Manifests = append(out.Manifests, m)
		}
	}
	return out
}

// `helm uninstall` first runs a Job that deletes exactly the release's two webhook configurations.
func TestPreDeleteHook(t *testing.T) {
	res := mustRender(t, Options{ReleaseName: "acme", Namespace: "gpu-system"})
	const name = "acme-gpu-admission-pre-delete"
	var hooks []string
	for _, m := range res.Manifests {
		if !isHookObject(m.Object) {
			continue
		}
		hooks = append(hooks, m.Kind()+" "+m.Name())
		a := stringMap(get(m.Object, "metadata", "annotations"))
		expectEq(t, m.Kind()+" hook", a["helm.sh/hook"], "pre-delete")
		expectEq(t, m.Kind()+" hook-delete-policy", a["helm.sh/hook-delete-policy"], "before-hook-creation,hook-succeeded")
		wantWeight := "-10" // RBAC before the Job
		if m.Kind() == "Job" {
			wantWeight = "0"
		}
		expectEq(t, m.Kind()+" hook-weight", a["helm.sh/hook-weight"], wantWeight)
	}
	sort.Strings(hooks)
	expectEq(t, "hook objects", hooks, []string{"ClusterRole " + name, "ClusterRoleBinding " + name, "Job " + name, "ServiceAccount " + name})

	// The grant: get and delete on the two configurations of this release, nothing else.
	role := named(t, res, "ClusterRole", name)
	expectEq(t, "hook ClusterRole rules", get(role, "rules"), vals(t, `
rules:
  - apiGroups: [admissionregistration.k8s.io]
    resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations]
    resourceNames: [acme-gpu-admission]
    verbs: [get, delete]`)["rules"])
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		expectEq(t, kind+" name (the grant's resourceName)", str(one(t, res, kind), "metadata", "name"), "acme-gpu-admission")
	}
	binding := named(t, res, "ClusterRoleBinding", name)
	expectEq(t, "hook binding role", str(binding, "roleRef", "name"), name)
	expectEq(t, "hook binding subject", get(binding, "subjects"), []interface{}{obj{"kind": "ServiceAccount", "name": name, "namespace": "gpu-system"}})

	job := named(t, res, "Job", name)
	spec, _ := get(job, "spec", "template", "spec").(obj)
	c := list(spec, "containers")[0].(obj)
	expectEq(t, "hook image", str(c, "image"), "registry.k8s.io/kubectl:v1.34.0")
	expectEq(t, "hook kubectl arguments", strs(c, "args"), []string{"delete",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/acme-gpu-admission",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/acme-gpu-admission", "--ignore-not-found", "--wait=false"})
	expectEq(t, "hook serviceAccountName", str(spec, "serviceAccountName"), name)
	expectEq(t, "hook restartPolicy", str(spec, "restartPolicy"), "Never")
	checkRestricted(t, "pre-delete hook", spec, c)
	if get(job, "spec", "activeDeadlineSeconds") == nil {
		t.Errorf("the hook Job has no deadline: a stuck uninstall would wait for Helm's timeout")
	}
	// None of the webhook's selectors picks the hook's pod up.
	podLabels := stringMap(get(job, "spec", "template", "metadata", "labels"))
	webhookSelector := stringMap(get(one(t, res, "Service"), "spec", "selector"))
	if matches(webhookSelector, podLabels) {
		t.Errorf("the webhook Service selects the hook's pod: %v", podLabels)
	}

	if !strings.Contains(res.Notes, "`helm uninstall` removes both first") {
		t.Errorf("NOTES.txt does not say how the webhook configurations go at uninstall:\n%s", res.Notes)
	}
	for _, v := range []string{"hooks: {preDelete: false}", "rbac: {create: false}"} {
		off := renderValues(t, v)
		for _, m := range off.Manifests {
			if isHookObject(m.Object) {
				t.Errorf("%s: hook %s %s is still rendered", v, m.Kind(), m.Name())
			}
		}
		if !strings.Contains(off.Notes, "Before `helm uninstall`, delete both yourself") {
			t.Errorf("%s: NOTES.txt does not say to delete the webhook configurations before uninstalling:\n%s", v, off.Notes)
		}
	}
	job = named(t, renderValues(t, "hooks: {image: mirror.example.com/kubectl:v1.34.0}"), "Job", testRelease+"-pre-delete")
	expectEq(t, "hooks.image", str(job, "spec", "template", "spec", "containers", 0, "image"), "mirror.example.com/kubectl:v1.34.0")

	// deploy/ is applied with kubectl, which would run a hook at once: it carries none.
	files, err := DeployFiles(defaultChartDir())
	if err != nil {
		t.Fatal(err)
	}
	for file, text := range files {
		if strings.Contains(text, "helm.sh/hook") {
			t.Errorf("deploy/%s carries a Helm hook", file)
		}
	}
}

// The default install, read as a cluster admin reads it before applying: every object it creates,
// and what the API server will do with the two webhook configurations under each enforcement.
func TestDefaultInstallAsAClusterAdminReadsIt(t *testing.T) {
	res := mustRender(t, Options{})
	var installed, hooks []string
	for _, m := range res.Manifests {
		entry := m.Kind() + " " + m.Name()
		if ns := str(m.Object, "metadata", "namespace"); ns != "" {
			entry += " (namespace " + ns + ")"
		}
		if isHookObject(m.Object) {
			hooks = append(hooks, entry)
		} else {
			installed = append(installed, entry)
		}
	}
	// In Helm's install order: the webhook configurations come last, once the pods can answer.
	expectEq(t, "objects installed", installed, []string{
		"NetworkPolicy gpu-admission (namespace gpu-admission)",
		"ResourceQuota gpu-admission-critical-pods (namespace gpu-admission)",
		"PodDisruptionBudget gpu-admission (namespace gpu-admission)",
		"ServiceAccount gpu-admission (namespace gpu-admission)",
		"ConfigMap gpu-admission-policy (namespace gpu-admission)",
		"ClusterRole gpu-admission-ca-bundle",
		"ClusterRole gpu-admission-cluster-state",
		"ClusterRoleBinding gpu-admission-ca-bundle",
		"ClusterRoleBinding gpu-admission-cluster-state",
		"Role gpu-admission-certs (namespace gpu-admission)",
		"RoleBinding gpu-admission-certs (namespace gpu-admission)",
		"Service gpu-admission (namespace gpu-admission)",
		"Deployment gpu-admission (namespace gpu-admission)",
		"MutatingWebhookConfiguration gpu-admission",
		"ValidatingWebhookConfiguration gpu-admission",
	})
	expectEq(t, "objects created only by helm uninstall (pre-delete hook)", hooks, []string{
		"ServiceAccount gpu-admission-pre-delete (namespace gpu-admission)",
		"ClusterRole gpu-admission-pre-delete",
		"ClusterRoleBinding gpu-admission-pre-delete",
		"Job gpu-admission-pre-delete (namespace gpu-admission)",
	})
	t.Logf("installed:\n  %s\nat uninstall:\n  %s", strings.Join(installed, "\n  "), strings.Join(hooks, "\n  "))

	spec := podSpec(t, res)
	expectEq(t, "webhook priority", str(spec, "priorityClassName"), "system-cluster-critical")
	expectEq(t, "webhook architectures", strs(list(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")[0], "matchExpressions", 0, "values"), []string{"amd64", "arm64"})

	excluded := append([]string{"gpu-admission", "kube-system"}, defaultExcluded...)
	for _, c := range []struct{ enforcement, failurePolicy string }{{"audit", "Ignore"}, {"warn", "Ignore"}, {"enforce", "Fail"}} {
		r := renderValues(t, "enforcement: "+c.enforcement)
		v, m := webhookConfig(t, r, "ValidatingWebhookConfiguration"), webhookConfig(t, r, "MutatingWebhookConfiguration")
		for what, h := range map[string]obj{"validating": v, "mutating": m} {
			expectEq(t, c.enforcement+": "+what+" failurePolicy", str(h, "failurePolicy"), c.failurePolicy)
			expectEq(t, c.enforcement+": "+what+" excluded namespaces", excludedNamespaces(t, h), excluded)
			if get(h, "objectSelector") != nil {
				t.Errorf("%s: %s has an objectSelector by default", c.enforcement, what)
			}
		}
		expectEq(t, c.enforcement+": validating timeout", get(v, "timeoutSeconds"), float64(5))
		expectEq(t, c.enforcement+": mutating timeout", get(m, "timeoutSeconds"), float64(3))
		expectEq(t, c.enforcement+": validating matchConditions", len(list(v, "matchConditions")), 8)
		expectEq(t, c.enforcement+": mutating matchConditions", get(m, "matchConditions"), nil)
		expectEq(t, c.enforcement+": mutating rules", flattenRules(t, list(m, "rules")), wantMutatingRules)
	}
}
