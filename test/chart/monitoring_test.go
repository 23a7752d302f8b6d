// The chart's monitoring objects. The PrometheusRule: its alerts pass `promtool check rules` and
// `promtool test rules` (alerts_test.yaml, one test or more per alert), each links a runbook
// section of docs/operations.md and carries a severity, the autoscaler and audit alerts come with
// autoscaling.enabled and audit.enabled, and every metric they read is one the binaries (or
// kube-state-metrics) export, used as its type allows. The Grafana dashboard's ConfigMap holds
// dashboard JSON whose queries name metrics the binary registers and sum the labelled counters.
package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every alert: the optional ones need autoscaling and the audit.
const allAlerts = "prometheusRule: {enabled: true}\nautoscaling: {enabled: true}\naudit: {enabled: true}"

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sourceDir(), "..", "..", rel))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return string(data)
}

// The anchors GitHub gives the headings of a Markdown file: lower case, punctuation but '-'
// dropped, spaces turned into '-'.
func markdownAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(heading, ""), " ", "-")] = true
	}
	return anchors
}

func alertRules(t *testing.T, values string) []interface{} {
	t.Helper()
	rule := one(t, renderValues(t, values), "PrometheusRule")
	var rules []interface{}
	for _, group := range list(rule, "spec", "groups") {
		rules = append(rules, list(group, "rules")...)
	}
	if len(rules) == 0 {
		t.Fatalf("the PrometheusRule has no rules")
	}
	return rules
}

func alertNames(rules []interface{}) []string {
	var names []string
	for _, r := range rules {
		names = append(names, str(r, "alert"))
	}
	return names
}

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: apt-get install prometheus (Debian's package ships promtool)")
	}
	rule := one(t, renderValues(t, allAlerts), "PrometheusRule")
	groups := list(rule, "spec", "groups")
	for _, group := range groups {
		for _, r := range list(group, "rules") {
			delete(r.(map[string]interface{}), "annotations")
		}
	}
	rules, err := yaml.Marshal(map[string]interface{}{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(sourceDir(), "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s\nrules:\n%s", strings.Join(args, " "), err, out, rules)
		}
	}
	// Every alert has a test that expects it to fire.
	for _, name := range alertNames(alertRules(t, allAlerts)) {
		if !regexp.MustCompile(`alertname: ` + name + `\n\s+exp_alerts:\n\s+- exp_labels`).Match(tests) {
			t.Errorf("alerts_test.yaml has no test in which %s fires", name)
		}
	}
}

// The autoscaler's alerts come with autoscaling.enabled, the audit's with audit.enabled; the
// degraded alert counts against the HPA's floor while the HPA owns the replica count.
func TestAlertSetsFollowTheValues(t *testing.T) {
	base := []string{"GpuAdmissionWebhookDown", "GpuAdmissionWebhookDegraded", "GpuAdmissionPolicyReloadFailing",
		"GpuAdmissionCertificateExpiringSoon", "GpuAdmissionSlowResponses", "GpuAdmissionInvalidRequests",
		"GpuAdmissionEvaluationErrors", "GpuAdmissionClusterStateNotSynced"}
	hpa := []string{"GpuAdmissionAutoscalerMaxedOut", "GpuAdmissionReplicasBelowMinimum"}
	audit := []string{"GpuAdmissionAuditRunFailing", "GpuAdmissionAuditStale"}
	for _, c := range []struct {
		values string
		want   [][]string
	}{
		{"prometheusRule: {enabled: true}", [][]string{base}},
		{"prometheusRule: {enabled: true}\nautoscaling: {enabled: true}", [][]string{base, hpa}},
		{"prometheusRule: {enabled: true}\naudit: {enabled: true}", [][]string{base, audit}},
		{allAlerts, [][]string{base, hpa, audit}},
	} {
		var want []string
		for _, w := range c.want {
			want = append(want, w...)
		}
		expectEq(t, c.values, alertNames(alertRules(t, c.values)), want)
	}
	degraded := func(values string) string {
		for _, r := range alertRules(t, values) {
			if str(r, "alert") == "GpuAdmissionWebhookDegraded" {
				return str(r, "expr")
			}
		}
		return ""
	}
	expectEq(t, "degraded, replicaCount 3", degraded("prometheusRule: {enabled: true}\nreplicaCount: 3"),
		`count(up{job="gpu-admission", namespace="gpu-admission"} == 1) < 3`)
	expectEq(t, "degraded, autoscaling", degraded("prometheusRule: {enabled: true}\nreplicaCount: 5\nautoscaling: {enabled: true, minReplicas: 4, maxReplicas: 8}"),
		`count(up{job="gpu-admission", namespace="gpu-admission"} == 1) < 4`)
	// The audit's alerts follow its interval: failing for 1.5 intervals, stale after 3.
	for _, r := range alertRules(t, "prometheusRule: {enabled: true}\naudit: {enabled: true, interval: 1h}") {
		switch str(r, "alert") {
		case "GpuAdmissionAuditRunFailing":
			expectEq(t, "audit failing for", str(r, "for"), "5400s")
		case "GpuAdmissionAuditStale":
			expectEq(t, "audit stale for", str(r, "for"), "1h")
			if !strings.Contains(str(r, "expr"), "> 10800\n") {
				t.Errorf("GpuAdmissionAuditStale with a 1h interval: %s, want a threshold of 10800 s", str(r, "expr"))
			}
		}
	}
}

func TestAlertRunbooksAndSeverities(t *testing.T) {
	const base = "https://docs.example.com/gpu-admission/operations.md"
	doc := repoFile(t, "docs/operations.md")
	anchors := markdownAnchors(doc)
	severities := map[string]string{}
	for _, r := range alertRules(t, strings.Replace(allAlerts, "enabled: true}", "enabled: true, runbookBaseUrl: "+base+"}", 1)) {
		name := str(r, "alert")
		severities[name] = str(r, "labels", "severity")
		if s := severities[name]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", name, s)
		}
		url := str(r, "annotations", "runbook_url")
		anchor := strings.TrimPrefix(url, base+"#")
		if anchor == url || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q is not %s#<a heading of docs/operations.md>", name, url, base)
		}
		if anchor != strings.ToLower(name) {
			t.Errorf("%s: runbook anchor %q, want %q", name, anchor, strings.ToLower(name))
		}
		if str(r, "annotations", "summary") == "" || len(str(r, "annotations", "description")) < 80 {
			t.Errorf("%s: a summary and a description that says what to do are needed", name)
		}
		if !strings.Contains(doc, "| "+name+" | "+severities[name]+" |") {
			t.Errorf("docs/operations.md's table of alerts has no row \"| %s | %s |\"", name, severities[name])
		}
	}
	client, server := severities["GpuAdmissionInvalidRequests"], severities["GpuAdmissionEvaluationErrors"]
	if client == "" || server == "" || client == server {
		t.Errorf("client errors (%q) and evaluation errors (%q) need alerts of their own, with distinct severities", client, server)
	}
	if severities["GpuAdmissionErrors"] != "" {
		t.Errorf("the old catch-all GpuAdmissionErrors alert is still there")
	}
}

// Metrics the alerts read from elsewhere: Prometheus' own up, and kube-state-metrics' gauges.
var externalMetrics = map[string]string{"up": "gauge",
	"kube_deployment_status_replicas_available":            "gauge",
	"kube_horizontalpodautoscaler_spec_min_replicas":       "gauge",
	"kube_horizontalpodautoscaler_spec_max_replicas":       "gauge",
	"kube_horizontalpodautoscaler_status_current_replicas": "gauge",
	"kube_horizontalpodautoscaler_spec_target_metric":      "gauge",
	"kube_horizontalpodautoscaler_status_target_metric":    "gauge",
}

// Every metric an alert reads is exported and used as its type allows, and selected for this
// release: the webhook's Service, or the audit's, in the release namespace.
func TestAlertMetricsAreExported(t *testing.T) {
	types := map[string]string{}
	for name, typ := range exportedMetrics(t) {
		types[name] = typ
	}
	for name, typ := range externalMetrics {
		types[name] = typ
	}
	for _, r := range alertRules(t, allAlerts) {
		name, expr := str(r, "alert"), str(r, "expr")
		uses, err := promqlMetrics(expr)
		if err != nil || len(uses) == 0 {
			t.Errorf("%s: %s: %v", name, expr, err)
			continue
		}
		for _, u := range uses {
			if p := checkUse(u, types); p != "" {
				t.Errorf("%s: %s", name, p)
			}
			want := []string{`namespace="gpu-admission"`, `job="gpu-admission"`}
			switch {
			case strings.HasPrefix(u.Name, "gpu_admission_audit_"):
				want[1] = `job="gpu-admission-audit"`
			case strings.HasPrefix(u.Name, "kube_deployment_"):
				want[1] = `deployment="gpu-admission"`
			case strings.HasPrefix(u.Name, "kube_horizontalpodautoscaler_"):
				want[1] = `horizontalpodautoscaler="gpu-admission"`
			}
			for _, m := range want {
				if !strings.Contains(u.Matchers, m) {
					t.Errorf("%s: %s{%s} does not select %s", name, u.Name, u.Matchers, m)
				}
			}
		}
	}
}

// The metric families the binary registers (webhook/ops/metrics_internal.h), by name.
func registeredMetrics(t *testing.T) map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(gpu_admission_[a-z_]+)"`).FindAllStringSubmatch(repoFile(t, "webhook/ops/metrics_internal.h"), -1) {
		names[m[1]] = true
	}
	if len(names) < 15 {
		t.Fatalf("found only %d metric names in webhook/ops/metrics_internal.h", len(names))
	}
	return names
}

func TestGrafanaDashboard(t *testing.T) {
	if len(all(mustRender(t, Options{}), "ConfigMap")) != 1 {
		t.Errorf("want only the policy ConfigMap by default")
	}
	res := renderValues(t, "grafanaDashboard: {enabled: true, annotations: {grafana_folder: GPU}}")
	checkMetadata(t, res, testRelease, testNamespace)
	cm := named(t, res, "ConfigMap", testRelease+"-dashboard")
	expectEq(t, "sidecar label", stringMap(get(cm, "metadata", "labels"))["grafana_dashboard"], "1")
	expectEq(t, "folder annotation", stringMap(get(cm, "metadata", "annotations"))["grafana_folder"], "GPU")
	var dashboard map[string]interface{}
	if err := json.Unmarshal([]byte(str(cm, "data", "gpu-admission.json")), &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	expectEq(t, "uid", str(dashboard, "uid"), "gpu-admission")
	registered := registeredMetrics(t)
	metricName := regexp.MustCompile(`gpu_admission_[a-z_]+`)
	labelled := regexp.MustCompile(`gpu_admission_(requests_total|rule_results_total)`)
	used := map[string]bool{}
	for _, panel := range list(dashboard, "panels") {
		for _, target := range list(panel, "targets") {
			expr := str(target, "expr")
			for _, name := range metricName.FindAllString(expr, -1) {
				family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				if !registered[family] {
					t.Errorf("panel %q queries %s, which the binary does not export", str(panel, "title"), name)
				}
				used[family] = true
			}
			// Counters labelled by tenant and dry_run are summed, so a new label never splits a line.
			if labelled.MatchString(expr) && !strings.HasPrefix(expr, "sum by (") {
				t.Errorf("panel %q: %s is not summed by the labels it shows", str(panel, "title"), expr)
			}
		}
	}
	for _, name := range []string{"gpu_admission_requests_total", "gpu_admission_rule_results_total",
		"gpu_admission_request_errors_total", "gpu_admission_request_duration_seconds",
		"gpu_admission_policy_last_reload_success", "gpu_admission_build_info", "gpu_admission_exceptions_applied_total",
		"gpu_admission_cluster_decode_errors_total"} {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}
