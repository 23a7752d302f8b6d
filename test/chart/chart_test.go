// Tests for charts/gpu-admission: the chart is rendered like `helm template` (render.go) and every
// rendered object is checked against the chart's contract. The policy in the rendered ConfigMap is linted
// with the gpu-admission binary named by $GPU_ADMISSION_BINARY (run.sh test BINARY sets it; CTest
// always does). Without it those checks are skipped with a "SKIP" message.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultValues(t *testing.T) {
	res := mustRender(t, Options{})
	// Self-managed certificates: no Secret is rendered, a Role and a ClusterRole grant its writes.
	expectEq(t, "kinds (hooks aside)", kinds(withoutHooks(res)), []string{
		"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ConfigMap", "Deployment",
		"MutatingWebhookConfiguration", "NetworkPolicy", "PodDisruptionBudget", "ResourceQuota", "Role", "RoleBinding",
		"Service", "ServiceAccount", "ValidatingWebhookConfiguration",
	})
	checkMetadata(t, res, testRelease, testNamespace)
	checkDeployment(t, res)
	checkNetworkPolicy(t, res)
	expectEq(t, "PDB minAvailable", get(one(t, res, "PodDisruptionBudget"), "spec", "minAvailable"), float64(1))
	bundles := checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	checkSelfManaged(t, res, "gpu-admission", testNamespace, bundles)

	// Install order: the webhook configurations come after the Deployment.
	var order []string
	for _, m := range res.Manifests {
		order = append(order, m.Kind())
	}
	if last := order[len(order)-2:]; last[0] != "MutatingWebhookConfiguration" || last[1] != "ValidatingWebhookConfiguration" {
		t.Errorf("install order %v: webhook configurations must come last", order)
	}

	// The default policy is the built-in one, byte for byte, and lints clean.
	builtin, err := os.ReadFile(filepath.Join(sourceDir(), "..", "..", "webhook", "io", "default-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderedPolicy(t, res); got != string(builtin) {
		t.Errorf("the chart's default policy differs from webhook/io/default-policy.yaml; copy it into values.yaml (policy: |)")
	}
	expectLintPasses(t, res)
}

func TestEveryRenderIsDifferentButConsistent(t *testing.T) {
	// `helm template` has no cluster: in generate mode each render generates a new CA, consistent
	// within itself.
	a := mustRender(t, generateMode())
	b := mustRender(t, generateMode())
	ca := stringMap(get(one(t, a, "Secret"), "data"))["ca.crt"]
	cb := stringMap(get(one(t, b, "Secret"), "data"))["ca.crt"]
	if ca == cb {
		t.Errorf("two renders without lookup produced the same CA")
	}
}

func TestReleaseNameAndNamespace(t *testing.T) {
	res := mustRender(t, Options{ReleaseName: "acme", Namespace: "gpu-system", Values: []map[string]interface{}{vals(t, "webhooks: {excludedNamespaces: [cert-manager, kube-system]}"), generateMode().Values[0]}})
	checkMetadata(t, res, "acme", "gpu-system")
	checkDeployment(t, res)
	bundles := checkWebhooks(t, res, webhookWant{namespace: "gpu-system", service: "acme-gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5, extraExcluded: []string{"cert-manager"}})
	checkGeneratedCertificates(t, res, "acme-gpu-admission", "gpu-system", bundles)
	if !strings.Contains(res.Notes, "kubectl delete validatingwebhookconfiguration/acme-gpu-admission mutatingwebhookconfiguration/acme-gpu-admission") {
		t.Errorf("NOTES.txt lacks the emergency removal command:\n%s", res.Notes)
	}

	res = mustRender(t, Options{ReleaseName: "gpu-admission-prod", Namespace: "ops"})
	expectEq(t, "Service name (release name contains the chart name)", str(one(t, res, "Service"), "metadata", "name"), "gpu-admission-prod")
	res = mustRender(t, Options{ReleaseName: "x", Namespace: "ops", Values: []map[string]interface{}{vals(t, "fullnameOverride: admission"), generateMode().Values[0]}})
	bundles = checkWebhooks(t, res, webhookWant{namespace: "ops", service: "admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	checkGeneratedCertificates(t, res, "admission", "ops", bundles)
}

func TestMonitoring(t *testing.T) {
	res := renderValues(t, "serviceMonitor: {enabled: true, labels: {release: prom}}\nprometheusRule: {enabled: true}")
	checkMetadata(t, res, testRelease, testNamespace)
	sm := one(t, res, "ServiceMonitor")
	svc := one(t, res, "Service")
	svcLabels := stringMap(get(svc, "metadata", "labels"))
	for k, v := range stringMap(get(sm, "spec", "selector", "matchLabels")) {
		if svcLabels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not match the Service", k, v)
		}
	}
	expectEq(t, "ServiceMonitor extra label", stringMap(get(sm, "metadata", "labels"))["release"], "prom")
	port := str(sm, "spec", "endpoints", 0, "port")
	found := false
	for _, p := range list(svc, "spec", "ports") {
		found = found || str(p, "name") == port
	}
	if !found {
		t.Errorf("ServiceMonitor scrapes port %q, which the Service does not name", port)
	}
	rule := one(t, res, "PrometheusRule")
	var exprs []string
	for _, r := range list(rule, "spec", "groups", 0, "rules") {
		exprs = append(exprs, str(r, "expr"))
	}
	joined := strings.Join(exprs, "\n")
	for _, metric := range []string{"gpu_admission_policy_last_reload_success", "gpu_admission_tls_certificate_expiry_timestamp_seconds",
		"gpu_admission_request_duration_seconds_bucket", "gpu_admission_request_errors_total", `up{job="gpu-admission", namespace="gpu-admission"}`} {
		if !strings.Contains(joined, metric) {
			t.Errorf("no alert uses %s", metric)
		}
	}
	// Nothing optional by default.
	def := mustRender(t, Options{})
	if len(all(def, "ServiceMonitor"))+len(all(def, "PrometheusRule")) != 0 {
		t.Errorf("monitoring objects rendered by default")
	}
}

func TestEverythingOptionalRenders(t *testing.T) {
	res := renderValues(t, `
image: {repository: registry.example.com/gpu-admission, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
imagePullSecrets: [{name: regcred}]
commonLabels: {team: platform}
podAnnotations: {example.com/owner: platform}
podLabels: {tier: control-plane}
priorityClassName: system-cluster-critical
extraArgs: ["--example"]
extraEnv: [{name: TZ, value: UTC}]
tolerations: [{key: CriticalAddonsOnly, operator: Exists}]
serviceAccount: {annotations: {example.com/a: b}}
service: {annotations: {example.com/c: d}}
webhooks: {annotations: {example.com/e: f}, excludedNamespaces: [cert-manager]}
topologySpreadConstraints:
  - {topologyKey: kubernetes.io/hostname, maxSkew: 1, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Ignore}
  - {topologyKey: topology.kubernetes.io/zone, maxSkew: 1, whenUnsatisfiable: ScheduleAnyway}
certificates: {mode: cert-manager}
serviceMonitor: {enabled: true, relabelings: [{action: labeldrop, regex: pod}]}
prometheusRule: {enabled: true, additionalAlertLabels: {team: platform}}
`)
	checkMetadata(t, res, testRelease, testNamespace)
	checkDeployment(t, res)
	c := container(t, res)
	expectEq(t, "image", str(c, "image"), "registry.example.com/gpu-admission@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	expectEq(t, "last arg", strs(c, "args")[len(strs(c, "args"))-1], "--example")
	tsc := list(podSpec(t, res), "topologySpreadConstraints")
	expectEq(t, "user nodeTaintsPolicy kept", str(tsc, 0, "nodeTaintsPolicy"), "Ignore")
	expectEq(t, "user whenUnsatisfiable kept", str(tsc, 0, "whenUnsatisfiable"), "DoNotSchedule")
	for _, m := range res.Manifests {
		if stringMap(get(m.Object, "metadata", "labels"))["team"] != "platform" {
			t.Errorf("%s/%s lacks commonLabels", m.Kind(), m.Name())
		}
	}
	expectEq(t, "webhook annotation", stringMap(get(one(t, res, "ValidatingWebhookConfiguration"), "metadata", "annotations"))["example.com/e"], "f")
}

func TestValuesSchemaRejectsTypos(t *testing.T) {
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "webhooks: {failurepolicy: Ignore}")}}, "Additional property failurepolicy is not allowed")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "replicas: 3")}}, "Additional property replicas is not allowed")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "image: {digest: latest}")}}, "image.digest")
	// The chart's own defaults satisfy the schema.
	var problems []string
	validateSchema(chart(t).Schema, chart(t).Values, "", &problems)
	if len(problems) > 0 {
		t.Errorf("values.yaml fails values.schema.json:\n%s", strings.Join(problems, "\n"))
	}
}

// Every value in values.yaml carries a "# --" comment, on itself or on an enclosing map.
func TestValuesAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(defaultChartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type frame struct {
		indent     int
		documented bool
	}
	var stack []frame
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "- ") {
			continue
		}
		colon := strings.Index(trimmed, ":")
		if colon <= 0 {
			continue
		}
		key, rest := trimmed[:colon], strings.TrimSpace(trimmed[colon+1:])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		documented := false
		for j := i - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "#"); j-- {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), "# --") {
				documented = true
			}
		}
		inherited := false
		for _, f := range stack {
			inherited = inherited || f.documented
		}
		leaf := rest != "" && !strings.HasPrefix(rest, "#")
		if leaf && !documented && !inherited {
			t.Errorf("values.yaml:%d: %s has no \"# --\" comment", i+1, key)
		}
		if key == "policy" {
			break // the rest is the policy text
		}
		stack = append(stack, frame{indent, documented || inherited})
	}
}

func TestDeployManifestsAreUpToDate(t *testing.T) {
	files, err := DeployFiles(defaultChartDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(defaultDeployDir(), name))
		if err != nil {
			t.Fatalf("deploy/%s: %v (regenerate: test/chart/run.sh deploy)", name, err)
		}
		if string(got) != want {
			t.Errorf("deploy/%s is stale: regenerate it with test/chart/run.sh deploy", name)
		}
	}
	hooks := files["webhooks.yaml"]
	if n := strings.Count(hooks, "caBundle: ${CA_BUNDLE}"); n != 3 {
		t.Errorf("deploy/webhooks.yaml has %d caBundle placeholders, want 3 (policy, validate, mutate)", n)
	}
	// With the placeholder filled in, the plain manifests pass the same checks as the chart.
	ca := mustRender(t, generateMode())
	bundle := stringMap(get(one(t, ca, "Secret"), "data"))["ca.crt"]
	var ms []Manifest
	for _, name := range []string{"gpu-admission.yaml", "policy-configmap.yaml", "webhooks.yaml"} {
		text := strings.ReplaceAll(files[name], "${CA_BUNDLE}", bundle)
		text = text[strings.Index(text, "---\n"):] // drop the header comment
		docs, err := SplitManifests("deploy/"+name, text)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, docs...)
	}
	res := &Result{Manifests: append(ms, Manifest{Source: "secret", Object: one(t, ca, "Secret")})}
	checkDeployment(t, res)
	checkNetworkPolicy(t, res)
	expectEq(t, "deploy/ PDB minAvailable", get(one(t, res, "PodDisruptionBudget"), "spec", "minAvailable"), float64(1))
	checkWebhooks(t, res, webhookWant{namespace: "gpu-admission", service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	for _, m := range ms {
		if strings.Contains(m.Content, "managed-by: Helm") {
			t.Errorf("deploy/%s claims to be managed by Helm", m.Name())
		}
	}
	for _, sh := range []string{"install.sh", "uninstall.sh"} {
		if st, err := os.Stat(filepath.Join(defaultDeployDir(), sh)); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("deploy/%s is missing or not executable", sh)
		}
	}
}
