// The chart's monitoring objects: the PrometheusRule's alerts run through `promtool test rules`
// (alerts_test.yaml), each alert links a runbook section of docs/operations.md, the two error
// alerts tell client junk from evaluation errors, and the Grafana dashboard's ConfigMap holds
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

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: apt-get install prometheus (Debian's package ships promtool)")
	}
	rule := one(t, renderValues(t, "prometheusRule: {enabled: true}"), "PrometheusRule")
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
	// Every alert has a test.
	for _, r := range list(rule, "spec", "groups", 0, "rules") {
		name := str(r, "alert")
		if !strings.Contains(string(tests), "alertname: "+name+"\n") {
			t.Errorf("alerts_test.yaml has no test of %s", name)
		}
	}
}

func TestAlertRunbooksAndSeverities(t *testing.T) {
	const base = "https://docs.example.com/gpu-admission/operations.md"
	anchors := markdownAnchors(repoFile(t, "docs/operations.md"))
	severities := map[string]string{}
	for _, r := range alertRules(t, "prometheusRule: {enabled: true, runbookBaseUrl: "+base+"}") {
		name := str(r, "alert")
		severities[name] = str(r, "labels", "severity")
		url := str(r, "annotations", "runbook_url")
		anchor := strings.TrimPrefix(url, base+"#")
		if anchor == url || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q is not %s#<a heading of docs/operations.md>", name, url, base)
		}
		if anchor != strings.ToLower(name) {
			t.Errorf("%s: runbook anchor %q, want %q", name, anchor, strings.ToLower(name))
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
