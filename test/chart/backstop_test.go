// The chart's backstop (templates/backstop.yaml): when it is installed (backstop.enabled, following
// `enforcement`), what it installs (files/backstop.yaml for the default policy, backstop.policies
// for another, never the default's export for another policy), how the chart adapts the exported
// objects (labels, names, the namespaces the webhooks leave out, actions capped by `enforcement`),
// that files/backstop.yaml is the current export, and that a privileged pod is refused by the
// rendered policies as a real CEL engine evaluates them.
package main

import (
	"os"
	"sort"
	"strings"
	"testing"
)

var backstopKinds = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

func backstopObjects(res *Result) (policies, bindings []obj) {
	return all(res, backstopKinds[0]), all(res, backstopKinds[1])
}

func names(objs []obj) []string {
	var out []string
	for _, o := range objs {
		out = append(out, str(o, "metadata", "name"))
	}
	sort.Strings(out)
	return out
}

func bundledBackstop(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(backstopFile(defaultChartDir()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBackstopFileIsCurrent(t *testing.T) {
	want, err := BackstopFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := bundledBackstop(t); got != want {
		t.Errorf("charts/gpu-admission/files/backstop.yaml is not the current export of the default policy: " +
			"run test/chart/run.sh backstop BUILD/gpu-admission")
	}
}

func TestBackstopFollowsEnforcement(t *testing.T) {
	for _, c := range []struct {
		values  string
		want    bool
		actions string // every binding's validationActions[0]
	}{
		{"", false, ""}, // enforcement: audit (the first install observes)
		{"enforcement: warn", false, ""},
		{"enforcement: enforce", true, "Deny"},
		{"enforcement: enforce\nbackstop: {enabled: false}", false, ""},
		{"enforcement: audit\nbackstop: {enabled: true}", true, "Audit"},
		{"enforcement: warn\nbackstop: {enabled: true}", true, "Warn"},
	} {
		res := renderValues(t, c.values)
		policies, bindings := backstopObjects(res)
		if got := len(policies) > 0; got != c.want {
			t.Errorf("%q: backstop installed = %v, want %v", c.values, got, c.want)
			continue
		}
		if !c.want {
			continue
		}
		checkMetadata(t, res, testRelease, testNamespace)
		expectEq(t, c.values+": policies and bindings", names(policies), names(bindings))
		for _, b := range bindings {
			expectEq(t, c.values+": "+str(b, "metadata", "name")+" actions", list(b, "spec", "validationActions"), []interface{}{c.actions})
			expectEq(t, "policyName", str(b, "spec", "policyName"), str(b, "metadata", "name"))
		}
		for _, p := range policies {
			name := str(p, "metadata", "name")
			if !strings.HasPrefix(name, testRelease+"-gpu-admission-") && !strings.HasPrefix(name, "gpu-admission-") {
				t.Errorf("%s: not named after the release", name)
			}
			if str(p, "metadata", "labels", "app.kubernetes.io/component") != "backstop" {
				t.Errorf("%s: no app.kubernetes.io/component=backstop label", name)
			}
			// The webhooks' exclusions and the policy's own exempt namespaces.
			var excluded []string
			for _, e := range list(p, "spec", "matchConstraints", "namespaceSelector", "matchExpressions") {
				if str(e, "operator") == "NotIn" {
					for _, v := range list(e, "values") {
						excluded = append(excluded, v.(string))
					}
				}
			}
			for _, ns := range []string{testNamespace, "kube-system", "gpu-operator", "nvidia-dra-driver-gpu"} {
				if !containsString(excluded, ns) {
					t.Errorf("%s: namespace %s is not left out (%v)", name, ns, excluded)
				}
			}
		}
	}
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestBackstopOfAnotherPolicy(t *testing.T) {
	other := "policy: |\n  apiVersion: gpu-admission.io/v1alpha1\n  kind: GpuAdmissionPolicy\n  metadata: {name: other}\n" +
		"  spec: {exemptions: {namespaces: [kube-system, team-ops]}}\n"
	// Left to follow enforcement, the default policy's backstop is never installed for another
	// policy, and NOTES.txt says what to do.
	res0 := renderValues(t, "enforcement: enforce\n"+other)
	if p, _ := backstopObjects(res0); len(p) != 0 {
		t.Errorf("the default policy's backstop is installed for another policy: %v", names(p))
	}
	if !strings.Contains(res0.Notes, "--set-file backstop.policies=FILE") {
		t.Errorf("NOTES.txt does not say how to install the backstop of another policy:\n%s", res0.Notes)
	}
	if !strings.Contains(renderValues(t, "enforcement: enforce").Notes, "Backstop: ValidatingAdmissionPolicies") {
		t.Error("NOTES.txt does not mention the backstop")
	}
	// Asked for explicitly, the chart says what to do.
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "backstop: {enabled: true}\n"+other)}},
		"gpu-admission policy export --format vap --policy FILE")
	// Given the export of that policy, the chart installs it.
	exported, err := BackstopFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	res := mustRender(t, Options{Values: []map[string]interface{}{vals(t, "enforcement: enforce\n"+other),
		{"backstop": map[string]interface{}{"policies": exported}}}})
	if p, _ := backstopObjects(res); len(p) == 0 {
		t.Error("backstop.policies was not installed")
	}
	// Anything but policies and bindings is refused.
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "enforcement: enforce"),
		{"backstop": map[string]interface{}{"policies": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}}}},
		"only ValidatingAdmissionPolicies")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "backstop: {enabled: maybe}")}}, "backstop.enabled")
}

// The rendered policies (as the chart adapts them) refuse a privileged pod and admit a plain one,
// evaluated by the CEL engine: the chart changes no expression.
func TestBackstopRenderedPoliciesDecide(t *testing.T) {
	res := renderValues(t, "enforcement: enforce")
	policies, _ := backstopObjects(res)
	var privileged obj
	for _, p := range policies {
		if strings.HasSuffix(str(p, "metadata", "name"), "-privileged") {
			privileged = p
		}
	}
	if privileged == nil {
		t.Fatal("no privileged policy rendered")
	}
	pod := func(priv bool) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]interface{}{"name": "p", "namespace": "research"},
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
				"name": "c", "image": "busybox", "securityContext": map[string]interface{}{"privileged": priv}}}}}
	}
	request := map[string]interface{}{"operation": "CREATE", "namespace": "research",
		"userInfo": map[string]interface{}{"username": "alice"}}
	var jobs []celJob
	for _, priv := range []bool{true, false} {
		env := map[string]interface{}{"object": pod(priv), "oldObject": nil, "request": request}
		vars := map[string]interface{}{}
		// The variables the validations read, evaluated first (each may read the earlier ones).
		for _, v := range list(privileged, "spec", "variables") {
			r := evalCEL(t, []celJob{{str(v, "expression"), mergeEnv(env, map[string]interface{}{"variables": vars})}})[0]
			if r.Error != nil {
				t.Fatalf("variable %s: %s", str(v, "name"), *r.Error)
			}
			vars[str(v, "name")] = r.Value
		}
		for _, v := range list(privileged, "spec", "validations") {
			jobs = append(jobs, celJob{str(v, "expression"), mergeEnv(env, map[string]interface{}{"variables": vars})})
		}
	}
	results := evalCEL(t, jobs)
	half := len(results) / 2
	admitted := func(rs []celResult) bool {
		for _, r := range rs {
			if r.Error != nil {
				t.Fatalf("validation error: %s", *r.Error)
			}
			if r.Value != true {
				return false
			}
		}
		return true
	}
	if admitted(results[:half]) {
		t.Error("the rendered backstop admits a privileged pod")
	}
	if !admitted(results[half:]) {
		t.Error("the rendered backstop refuses a plain pod")
	}
}

func mergeEnv(a, b map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
