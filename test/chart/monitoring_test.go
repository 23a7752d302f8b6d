// The chart's monitoring objects. The PrometheusRule: its alerts pass `promtool check rules` and
// `promtool test rules` (alerts_test.yaml, one test or more per alert), each links a runbook
// section of docs/operations.md and carries a severity, the autoscaler and audit alerts come with
// autoscaling.enabled and audit.enabled, and every metric they read is one the binaries (or
// kube-state-metrics) export, used as its type allows. The Grafana dashboard: its ConfigMap is
// labelled for the sidecar, its JSON is laid out soundly (unique ids, a grid without overlaps,
// the datasource variable on every panel and query), and every query reads exported metrics of
// the release the variables select, as their types allow (exported_metrics_test.go says where
// the names and types come from).
package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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
		"GpuAdmissionCertificateExpiringSoon", "GpuAdmissionExceptionExpiringSoon", "GpuAdmissionSlowResponses", "GpuAdmissionInvalidRequests",
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

func TestGrafanaDashboardConfigMap(t *testing.T) {
	if len(all(mustRender(t, Options{}), "ConfigMap")) != 1 {
		t.Errorf("want only the policy ConfigMap by default")
	}
	res := renderValues(t, "grafanaDashboard: {enabled: true, annotations: {example.com/owner: platform}}")
	checkMetadata(t, res, testRelease, testNamespace)
	cm := named(t, res, "ConfigMap", testRelease+"-dashboard")
	expectEq(t, "sidecar label", stringMap(get(cm, "metadata", "labels"))["grafana_dashboard"], "1")
	expectEq(t, "annotations without a folder", stringMap(get(cm, "metadata", "annotations")), map[string]string{"example.com/owner": "platform"})
	cm = named(t, renderValues(t, `grafanaDashboard: {enabled: true, namespace: monitoring, folder: GPU, labels: {dashboards: gpu}}`),
		"ConfigMap", testRelease+"-dashboard")
	expectEq(t, "namespace", str(cm, "metadata", "namespace"), "monitoring")
	expectEq(t, "folder annotation", stringMap(get(cm, "metadata", "annotations")), map[string]string{"grafana_folder": "GPU"})
	expectEq(t, "replaced sidecar label", stringMap(get(cm, "metadata", "labels"))["dashboards"], "gpu")
	cm = named(t, renderValues(t, `grafanaDashboard: {enabled: true, folder: GPU, folderAnnotation: k8s-sidecar-target-directory}`),
		"ConfigMap", testRelease+"-dashboard")
	expectEq(t, "named folder annotation", stringMap(get(cm, "metadata", "annotations")), map[string]string{"k8s-sidecar-target-directory": "GPU"})
	if str(cm, "data", "gpu-admission.json") != strings.TrimSuffix(repoFile(t, "charts/gpu-admission/files/dashboard.json"), "\n") {
		t.Errorf("the ConfigMap does not hold files/dashboard.json as it is")
	}
}

func dashboard(t *testing.T) map[string]interface{} {
	t.Helper()
	var d map[string]interface{}
	if err := json.Unmarshal([]byte(repoFile(t, "charts/gpu-admission/files/dashboard.json")), &d); err != nil {
		t.Fatalf("files/dashboard.json is not JSON: %v", err)
	}
	return d
}

// dashboardPanels: every panel, those inside collapsed rows too.
func dashboardPanels(d map[string]interface{}) []interface{} {
	var out []interface{}
	for _, p := range list(d, "panels") {
		out = append(out, p)
		out = append(out, list(p, "panels")...)
	}
	return out
}

const datasourceUID = "${datasource}"

func TestGrafanaDashboardLayout(t *testing.T) {
	d := dashboard(t)
	expectEq(t, "uid", str(d, "uid"), "gpu-admission")
	vars := map[string]interface{}{}
	for _, v := range list(d, "templating", "list") {
		vars[str(v, "name")] = v
		if str(v, "type") == "query" {
			expectEq(t, "variable "+str(v, "name")+" datasource", str(v, "datasource", "uid"), datasourceUID)
		}
	}
	expectEq(t, "datasource variable", str(vars["datasource"], "type")+" "+str(vars["datasource"], "query"), "datasource prometheus")
	for _, name := range []string{"namespace", "job", "audit_job", "tenant"} {
		if str(vars[name], "type") != "query" {
			t.Errorf("no query variable %s", name)
		}
	}
	expectEq(t, "tenant: several, and all", []interface{}{get(vars["tenant"], "multi"), get(vars["tenant"], "includeAll")}, []interface{}{true, true})

	ids := map[float64]string{}
	var cells [][]bool // the 24-column grid, row by row
	for _, p := range dashboardPanels(d) {
		title, typ := str(p, "title"), str(p, "type")
		id := num(t, p, "id")
		if other, dup := ids[id]; dup {
			t.Errorf("panels %q and %q share id %v", other, title, id)
		}
		ids[id] = title
		x, y, w, h := num(t, p, "gridPos", "x"), num(t, p, "gridPos", "y"), num(t, p, "gridPos", "w"), num(t, p, "gridPos", "h")
		if w < 1 || h < 1 || x < 0 || y < 0 || x+w > 24 {
			t.Errorf("panel %q: gridPos %v is off the 24-column grid", title, get(p, "gridPos"))
			continue
		}
		for row := int(y); row < int(y+h); row++ {
			for len(cells) <= row {
				cells = append(cells, make([]bool, 24))
			}
			for col := int(x); col < int(x+w); col++ {
				if cells[row][col] {
					t.Errorf("panel %q overlaps another at column %d, row %d", title, col, row)
				}
				cells[row][col] = true
			}
		}
		if typ == "row" {
			expectEq(t, "row "+title+" width", w, 24.0)
			continue
		}
		if title == "" || str(p, "description") == "" {
			t.Errorf("panel %v needs a title and a description", id)
		}
		if str(p, "datasource", "uid") != datasourceUID {
			t.Errorf("panel %q: datasource %v, want the variable %s", title, get(p, "datasource"), datasourceUID)
		}
		refIDs := map[string]bool{}
		for _, target := range list(p, "targets") {
			if str(target, "datasource", "uid") != datasourceUID {
				t.Errorf("panel %q, query %s: datasource %v, want %s", title, str(target, "refId"), get(target, "datasource"), datasourceUID)
			}
			if refIDs[str(target, "refId")] || str(target, "expr") == "" {
				t.Errorf("panel %q: query %q has no expression or a refId used twice", title, str(target, "refId"))
			}
			refIDs[str(target, "refId")] = true
		}
		if len(refIDs) == 0 {
			t.Errorf("panel %q has no query", title)
		}
	}
}

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct{ where, expr, legend string }

func dashboardQueries(t *testing.T, d map[string]interface{}) []dashboardQuery {
	var out []dashboardQuery
	labelValues := regexp.MustCompile(`^label_values\((.*), *\w+\)$`)
	for _, v := range list(d, "templating", "list") {
		if str(v, "type") != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(str(v, "query", "query"))
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", str(v, "name"), str(v, "query", "query"))
			continue
		}
		out = append(out, dashboardQuery{"variable " + str(v, "name"), m[1], ""})
	}
	for _, p := range dashboardPanels(d) {
		for _, target := range list(p, "targets") {
			out = append(out, dashboardQuery{"panel " + strings.TrimSpace(str(p, "title")) + " " + str(target, "refId"),
				str(target, "expr"), str(target, "legendFormat")})
		}
	}
	return out
}

func TestGrafanaDashboardQueries(t *testing.T) {
	types := exportedMetrics(t)
	labelled := map[string]bool{"gpu_admission_requests_total": true, "gpu_admission_rule_results_total": true,
		"gpu_admission_audit_violations": true}
	used := map[string]bool{}
	for _, q := range dashboardQueries(t, dashboard(t)) {
		uses, err := promqlMetrics(q.expr)
		if err != nil || len(uses) == 0 {
			t.Errorf("%s: %s: %v", q.where, q.expr, err)
			continue
		}
		variable := strings.HasPrefix(q.where, "variable ")
		for _, u := range uses {
			fam, _, _ := family(u.Name, types)
			used[fam] = true
			// label_values() needs series, of any type.
			if p := checkUse(u, types); p != "" && u.Name != "up" && !(variable && fam != "") {
				t.Errorf("%s: %s\n  in %s", q.where, p, q.expr)
			}
			// The release the variables select: the webhook's Service, or the audit's.
			job := `job="$job"`
			if strings.HasPrefix(u.Name, "gpu_admission_audit_") {
				job = `job="$audit_job"`
			}
			if variable {
				if !strings.Contains(q.expr, "{") { // the first variable lists every namespace
					continue
				}
				job = ""
			}
			for _, m := range []string{`namespace="$namespace"`, job} {
				if !strings.Contains(u.Matchers, m) {
					t.Errorf("%s: %s{%s} does not select %s", q.where, u.Name, u.Matchers, m)
				}
			}
			// Series labelled by tenant follow the tenant variable and are summed, so a new
			// label never splits a line.
			if labelled[fam] && !variable {
				if !strings.Contains(u.Matchers, `tenant=~"$tenant"`) {
					t.Errorf("%s: %s does not follow the tenant variable", q.where, u.Name)
				}
				if len(u.Funcs) == 0 || u.Funcs[0] != "sum" {
					t.Errorf("%s: %s is not summed by the labels it shows: %s", q.where, u.Name, q.expr)
				}
			}
		}
	}
	var missing []string
	for name := range types {
		if !used[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no panel shows %s", strings.Join(missing, ", "))
	}
}
