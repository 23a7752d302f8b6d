// Tests of the chart's webhook configurations: rules, namespace exclusions, failurePolicy,
// timeouts, the optional mutating webhook and extra workload kinds.
package main

import (
	"sort"
	"strings"
	"testing"
)

type webhookWant struct {
	namespace       string
	service         string
	validating      string // failurePolicy
	mutating        string
	timeout         float64  // the validating webhook's
	mutatingTimeout float64  // 0: the default, 3
	extraExcluded   []string // namespaces excluded besides the release's and kube-system; nil: defaultExcluded
	objectSelector  bool     // an objectSelector is set on purpose
}

// The GPU stack's namespaces, excluded from both webhook configurations by default.
var defaultExcluded = []string{"gpu-operator", "nvidia-device-plugin", "nvidia-dra-driver-gpu", "nvidia-network-operator"}

// The validating rules the chart must register, as group/version/resource:OPERATION.
var wantValidatingRules = []string{
	"/v1/pods:CREATE", "/v1/pods:UPDATE", "/v1/pods/ephemeralcontainers:UPDATE",
	"/v1/replicationcontrollers:CREATE", "/v1/replicationcontrollers:UPDATE",
	"/v1/podtemplates:CREATE", "/v1/podtemplates:UPDATE",
	"apps/v1/daemonsets:CREATE", "apps/v1/daemonsets:UPDATE",
	"apps/v1/deployments:CREATE", "apps/v1/deployments:UPDATE",
	"apps/v1/replicasets:CREATE", "apps/v1/replicasets:UPDATE",
	"apps/v1/statefulsets:CREATE", "apps/v1/statefulsets:UPDATE",
	"batch/v1/cronjobs:CREATE", "batch/v1/cronjobs:UPDATE",
	"batch/v1/jobs:CREATE", "batch/v1/jobs:UPDATE",
	"resource.k8s.io/v1/resourceclaims:CREATE", "resource.k8s.io/v1/resourceclaims:UPDATE",
	"resource.k8s.io/v1/resourceclaimtemplates:CREATE", "resource.k8s.io/v1/resourceclaimtemplates:UPDATE",
	"resource.k8s.io/v1beta2/resourceclaims:CREATE", "resource.k8s.io/v1beta2/resourceclaims:UPDATE",
	"resource.k8s.io/v1beta2/resourceclaimtemplates:CREATE", "resource.k8s.io/v1beta2/resourceclaimtemplates:UPDATE",
	"resource.k8s.io/v1beta1/resourceclaims:CREATE", "resource.k8s.io/v1beta1/resourceclaims:UPDATE",
	"resource.k8s.io/v1beta1/resourceclaimtemplates:CREATE", "resource.k8s.io/v1beta1/resourceclaimtemplates:UPDATE",
	"scheduling.k8s.io/v1beta1/podgroups:CREATE", "scheduling.k8s.io/v1beta1/podgroups:UPDATE",
	"scheduling.k8s.io/v1alpha3/podgroups:CREATE", "scheduling.k8s.io/v1alpha3/podgroups:UPDATE",
	"scheduling.k8s.io/v1alpha2/podgroups:CREATE", "scheduling.k8s.io/v1alpha2/podgroups:UPDATE",
}

var wantMutatingRules = []string{"/v1/pods:CREATE"}

// With cluster state on, a claim's allocation (its status) is judged too.
var wantAllocationRules = []string{
	"resource.k8s.io/v1/resourceclaims/status:UPDATE", "resource.k8s.io/v1beta2/resourceclaims/status:UPDATE",
	"resource.k8s.io/v1beta1/resourceclaims/status:UPDATE",
}

func init() { sort.Strings(wantValidatingRules) }

// The validating rules for a render: those above, plus allocations unless --cluster is off.
func wantValidating(t *testing.T, res *Result) []string {
	t.Helper()
	want := append([]string{}, wantValidatingRules...)
	if argValue(t, container(t, res), "--cluster") != "off" {
		want = append(want, wantAllocationRules...)
	}
	sort.Strings(want)
	return want
}

func flattenRules(t *testing.T, rules []interface{}) []string {
	t.Helper()
	set := map[string]bool{}
	for _, r := range rules {
		for _, g := range strs(r, "apiGroups") {
			for _, v := range strs(r, "apiVersions") {
				for _, res := range strs(r, "resources") {
					for _, op := range strs(r, "operations") {
						if g == "*" || v == "*" || res == "*" || op == "*" {
							t.Errorf("wildcard rule %v", r)
						}
						set[g+"/"+v+"/"+res+":"+op] = true
					}
				}
			}
		}
		if s := str(r, "scope"); s != "" && s != "Namespaced" {
			t.Errorf("rule scope %q", s)
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkWebhooks checks both configurations against the chart's contract and returns their caBundles.
func checkWebhooks(t *testing.T, res *Result, want webhookWant) []string {
	t.Helper()
	svc := one(t, res, "Service")
	expectEq(t, "Service name", str(svc, "metadata", "name"), want.service)
	var bundles []string
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		cfg := one(t, res, kind)
		hooks := list(cfg, "webhooks")
		if len(hooks) == 0 {
			t.Fatalf("%s has no webhooks", kind)
		}
		for _, h := range hooks {
			if str(h, "name") == policyWebhookName {
				checkPolicyWebhook(t, res, h, want)
				bundles = append(bundles, str(h, "clientConfig", "caBundle"))
				continue
			}
			checkWebhook(t, res, svc, kind, h, want)
			bundles = append(bundles, str(h, "clientConfig", "caBundle"))
		}
	}
	return bundles
}

// checkWebhook checks one webhook of a configuration of `kind`: review versions, side effects,
// timeout, failurePolicy and rules, its selectors and its client config.
func checkWebhook(t *testing.T, res *Result, svc obj, kind string, h interface{}, want webhookWant) {
	t.Helper()
	name := str(h, "name")
	if strings.Count(name, ".") < 2 {
		t.Errorf("%s webhook name %q is not fully qualified", kind, name)
	}
	expectEq(t, name+" admissionReviewVersions", strs(h, "admissionReviewVersions"), []string{"v1"})
	expectEq(t, name+" sideEffects", str(h, "sideEffects"), "None")
	wantTimeout := want.timeout
	if kind == "MutatingWebhookConfiguration" {
		wantTimeout = want.mutatingTimeout
		if wantTimeout == 0 {
			wantTimeout = 3
		}
	}
	if to := num(t, h, "timeoutSeconds"); to < 1 || to > 5 || to != wantTimeout {
		t.Errorf("%s timeoutSeconds = %v, want %v (<= 5)", name, to, wantTimeout)
	}
	wantFP := want.validating
	if kind == "MutatingWebhookConfiguration" {
		wantFP = want.mutating
		expectEq(t, name+" reinvocationPolicy", str(h, "reinvocationPolicy"), "IfNeeded")
		expectEq(t, name+" rules", flattenRules(t, list(h, "rules")), wantMutatingRules)
	} else {
		if get(h, "reinvocationPolicy") != nil {
			t.Errorf("%s: reinvocationPolicy on a validating webhook", name)
		}
		expectEq(t, name+" rules", flattenRules(t, list(h, "rules")), wantValidating(t, res))
	}
	expectEq(t, name+" failurePolicy", str(h, "failurePolicy"), wantFP)
	expectEq(t, name+" matchPolicy", str(h, "matchPolicy"), "Equivalent")
	checkWebhookSelectors(t, h, name, want)
	checkWebhookClientConfig(t, svc, kind, h, name, want)
}

// checkWebhookSelectors: in namespaceSelector, the release namespace, kube-system and the GPU
// stack's namespaces are never sent (the chart's expression comes last, after any of the
// user's); no objectSelector unless one is set on purpose.
func checkWebhookSelectors(t *testing.T, h interface{}, name string, want webhookWant) {
	t.Helper()
	exprs := list(h, "namespaceSelector", "matchExpressions")
	if len(exprs) == 0 {
		t.Errorf("%s namespaceSelector = %v, want the chart's NotIn expression", name, get(h, "namespaceSelector"))
	} else {
		last := exprs[len(exprs)-1]
		expectEq(t, name+" namespaceSelector key", str(last, "key"), "kubernetes.io/metadata.name")
		expectEq(t, name+" namespaceSelector operator", str(last, "operator"), "NotIn")
		extra := want.extraExcluded
		if extra == nil {
			extra = defaultExcluded
		}
		wantNS := append([]string{want.namespace, "kube-system"}, extra...)
		expectEq(t, name+" excluded namespaces", strs(last, "values"), wantNS)
	}
	if get(h, "objectSelector") != nil && !want.objectSelector {
		t.Errorf("%s has an objectSelector: pods could opt out with a label", name)
	}
}

// checkWebhookClientConfig: clientConfig points at the Service's port 443 in the release namespace.
func checkWebhookClientConfig(t *testing.T, svc obj, kind string, h interface{}, name string, want webhookWant) {
	t.Helper()
	if get(h, "clientConfig", "url") != nil {
		t.Errorf("%s uses clientConfig.url", name)
	}
	expectEq(t, name+" service name", str(h, "clientConfig", "service", "name"), want.service)
	expectEq(t, name+" service namespace", str(h, "clientConfig", "service", "namespace"), want.namespace)
	wantPath := "/validate"
	if kind == "MutatingWebhookConfiguration" {
		wantPath = "/mutate"
	}
	expectEq(t, name+" path", str(h, "clientConfig", "service", "path"), wantPath)
	port := num(t, h, "clientConfig", "service", "port")
	found := false
	for _, p := range list(svc, "spec", "ports") {
		if num(t, p, "port") == port {
			found = true
		}
	}
	if !found || port != 443 {
		t.Errorf("%s calls Service port %v, want 443 (a port of the Service)", name, port)
	}
}

func TestFailurePolicyIgnore(t *testing.T) {
	res := renderValues(t, "webhooks: {failurePolicy: Ignore}")
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	res = renderValues(t, "webhooks: {failurePolicy: Ignore, validating: {failurePolicy: Fail}}")
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Fail", mutating: "Ignore", timeout: 5})
}

// A plain install observes: serve --enforcement audit and failurePolicy Ignore. enforce turns both
// on; an explicit failurePolicy wins over the one enforcement implies.
func TestEnforcementSetsTheFlagAndFailurePolicy(t *testing.T) {
	res := mustRender(t, Options{})
	expectEq(t, "default --enforcement", argValue(t, container(t, res), "--enforcement"), "audit")
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	warn := renderValues(t, "enforcement: warn")
	expectEq(t, "--enforcement warn", argValue(t, container(t, warn), "--enforcement"), "warn")
	checkWebhooks(t, warn, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	enforce := renderValues(t, "enforcement: enforce")
	expectEq(t, "--enforcement enforce", argValue(t, container(t, enforce), "--enforcement"), "enforce")
	checkWebhooks(t, enforce, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Fail", mutating: "Fail", timeout: 5})
	pinned := renderValues(t, "{enforcement: enforce, webhooks: {mutating: {failurePolicy: Ignore}}}")
	checkWebhooks(t, pinned, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Fail", mutating: "Ignore", timeout: 5})
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "enforcement: dryrun")}}, "enforcement")
}

func TestInvalidFailurePolicy(t *testing.T) {
	opts := Options{Values: []map[string]interface{}{vals(t, "webhooks: {failurePolicy: fail}")}}
	mustFail(t, opts, "webhooks.failurePolicy")
	opts.SkipSchema = true
	mustFail(t, opts, "must be Fail or Ignore")
}

func TestTimeoutSeconds(t *testing.T) {
	for _, bad := range []string{"10", "6", "0"} {
		opts := Options{Values: []map[string]interface{}{vals(t, "webhooks: {timeoutSeconds: "+bad+"}")}}
		mustFail(t, opts, "webhooks.timeoutSeconds")
		// The template refuses too when the schema is skipped (helm --skip-schema-validation).
		opts.SkipSchema = true
		mustFail(t, opts, "webhooks.timeoutSeconds must be between 1 and 5")
	}
	res := renderValues(t, "webhooks: {timeoutSeconds: 3}")
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 3})
	// --set gives integers, values files give floats: both work.
	set := map[string]interface{}{}
	if err := ParseSet(set, "webhooks.timeoutSeconds=4"); err != nil {
		t.Fatal(err)
	}
	res = mustRender(t, Options{Values: []map[string]interface{}{set}})
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 4})
	set = map[string]interface{}{}
	ParseSet(set, "webhooks.timeoutSeconds=10")
	mustFail(t, Options{Values: []map[string]interface{}{set}, SkipSchema: true}, "webhooks.timeoutSeconds must be between 1 and 5")
}

func TestDisablingTheMutatingWebhook(t *testing.T) {
	res := renderValues(t, "webhooks: {mutating: {enabled: false}}")
	if len(all(res, "MutatingWebhookConfiguration")) != 0 {
		t.Errorf("mutating webhook rendered although disabled")
	}
	one(t, res, "ValidatingWebhookConfiguration")
}

// The built-in ML kinds are listed in values, off: none is registered by default; switched on,
// each is registered on /validate only, for CREATE and UPDATE, with no wildcard.
func TestExtraWorkloadKinds(t *testing.T) {
	res := renderValues(t, "{}")
	for _, h := range list(one(t, res, "ValidatingWebhookConfiguration"), "webhooks") {
		if str(h, "name") == policyWebhookName {
			continue // the policy ConfigMap's (certs_test.go)
		}
		expectEq(t, "default rules", flattenRules(t, list(h, "rules")), wantValidating(t, res))
	}
	on := renderValues(t, `webhooks:
  validating:
    extraKinds:
      - {name: kubeflow-training, enabled: true, apiGroup: kubeflow.org, apiVersions: [v1, v2beta1], resources: [pytorchjobs, mpijobs]}
      - {name: kuberay, enabled: true, apiGroup: ray.io, apiVersions: [v1], resources: [rayclusters]}
      - {name: volcano, enabled: false, apiGroup: batch.volcano.sh, apiVersions: [v1alpha1], resources: [jobs]}
`)
	want := wantValidating(t, on)
	want = append(want, "kubeflow.org/v1/pytorchjobs:CREATE", "kubeflow.org/v1/pytorchjobs:UPDATE",
		"kubeflow.org/v1/mpijobs:CREATE", "kubeflow.org/v1/mpijobs:UPDATE",
		"kubeflow.org/v2beta1/pytorchjobs:CREATE", "kubeflow.org/v2beta1/pytorchjobs:UPDATE",
		"kubeflow.org/v2beta1/mpijobs:CREATE", "kubeflow.org/v2beta1/mpijobs:UPDATE",
		"ray.io/v1/rayclusters:CREATE", "ray.io/v1/rayclusters:UPDATE")
	sort.Strings(want)
	for _, h := range list(one(t, on, "ValidatingWebhookConfiguration"), "webhooks") {
		if str(h, "name") == policyWebhookName {
			continue
		}
		expectEq(t, "rules with ML kinds", flattenRules(t, list(h, "rules")), want)
	}
	for _, h := range list(one(t, on, "MutatingWebhookConfiguration"), "webhooks") {
		expectEq(t, "mutating rules", flattenRules(t, list(h, "rules")), wantMutatingRules)
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, `webhooks: {validating: {extraKinds: [{name: x, apiGroup: a.io, apiVersions: ["*"], resources: [things]}]}}`)}}, "extraKinds")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, `webhooks: {validating: {extraKinds: [{name: x, apiGroup: a.io, resources: [things]}]}}`)}}, "apiVersions")
}
