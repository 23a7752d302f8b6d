// A real Prometheus scraping a running `gpu-admission serve` (as two replicas, by pod label) and
// `gpu-admission audit --interval`, with the chart's PrometheusRule loaded: every dashboard query
// runs and returns series whose labels fill its legend, Prometheus records the metric types the
// dashboard relies on, and the alerts evaluate without errors and stay quiet on a healthy
// release. Skipped without the prometheus binary (Debian's prometheus package, which
// scripts/deps.sh installs) or without GPU_ADMISSION_BINARY.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

type promClient struct{ base string }

// get decodes the data of a Prometheus API answer into out.
func (p promClient) get(path string, query url.Values, out interface{}) error {
	resp, err := http.Get(p.base + path + "?" + query.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s", path, answer.Error)
	}
	return json.Unmarshal(answer.Data, out)
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
}

func (p promClient) query(expr string) ([]promSeries, error) {
	var data struct {
		Result []promSeries `json:"result"`
	}
	err := p.get("/api/v1/query", url.Values{"query": {expr}}, &data)
	return data.Result, err
}

func startPrometheus(t *testing.T, prometheus string, env metricsEnv) promClient {
	t.Helper()
	dir := t.TempDir()
	groups := list(one(t, renderValues(t, allAlerts), "PrometheusRule"), "spec", "groups")
	rules, err := yaml.Marshal(map[string]interface{}{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yaml]
scrape_configs:
  - job_name: gpu-admission
    static_configs:
      - {targets: [%[1]q], labels: {namespace: gpu-admission, pod: gpu-admission-a}}
      - {targets: [%[1]q], labels: {namespace: gpu-admission, pod: gpu-admission-b}}
  - job_name: gpu-admission-audit
    static_configs:
      - {targets: [%[2]q], labels: {namespace: gpu-admission, pod: gpu-admission-audit-a}}
`, env.serveMetrics, env.auditMetrics)
	for name, text := range map[string]string{"rules.yaml": string(rules), "prometheus.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+listen)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	p := promClient{"http://" + listen}
	// Both jobs up, and several scrapes of each target, so rate() has samples to work on.
	waitFor(t, "prometheus scraping serve and the audit", 60*time.Second, &logs, func() string {
		var targets struct {
			Active []struct {
				Labels map[string]string `json:"labels"`
				Health string            `json:"health"`
			} `json:"activeTargets"`
		}
		if err := p.get("/api/v1/targets", nil, &targets); err != nil {
			return err.Error()
		}
		if len(targets.Active) != 3 {
			return fmt.Sprintf("%d targets, want 3", len(targets.Active))
		}
		for _, target := range targets.Active {
			if target.Health != "up" {
				return fmt.Sprintf("target %v %s", target.Labels, target.Health)
			}
		}
		scraped, err := p.query(`count_over_time(up[1m]) >= 5`)
		if err != nil || len(scraped) != 3 {
			return fmt.Sprintf("fewer than 5 scrapes of each target (%v)", err)
		}
		return ""
	})
	return p
}

func TestPrometheusScrapesWhatTheDashboardAndAlertsRead(t *testing.T) {
	prometheus, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("skipped: prometheus not found (apt-get install prometheus; scripts/deps.sh installs it)")
	}
	if os.Getenv("GPU_ADMISSION_BINARY") == "" {
		t.Skip("skipped: GPU_ADMISSION_BINARY is not set (run.sh test BUILD/gpu-admission)")
	}
	env := startMetricsEnv(t)
	p := startPrometheus(t, prometheus, env)

	// The types Prometheus recorded are those the dashboard test checked the queries against.
	var metadata map[string][]struct {
		Type string `json:"type"`
	}
	if err := p.get("/api/v1/metadata", nil, &metadata); err != nil {
		t.Fatal(err)
	}
	for name, typ := range exportedMetrics(t) {
		if len(metadata[name]) == 0 || metadata[name][0].Type != typ {
			t.Errorf("Prometheus records %s as %v, want a %s", name, metadata[name], typ)
		}
	}

	// Every dashboard query, with the variables set to this release, returns series that
	// carry the labels its legend names.
	vars := strings.NewReplacer("$namespace", "gpu-admission", "$audit_job", "gpu-admission-audit",
		"$job", "gpu-admission", "$tenant", ".*", "$__rate_interval", "30s")
	legendLabel := regexp.MustCompile(`\{\{ *(\w+) *\}\}`)
	for _, q := range dashboardQueries(t, dashboard(t)) {
		expr := vars.Replace(q.expr)
		if strings.HasPrefix(q.where, "variable ") {
			expr = "group(" + expr + ")"
		}
		series, err := p.query(expr)
		if err != nil {
			t.Errorf("%s: %v\n  in %s", q.where, err, expr)
			continue
		}
		if len(series) == 0 {
			t.Errorf("%s returns no series: %s", q.where, expr)
		}
		for _, m := range legendLabel.FindAllStringSubmatch(q.legend, -1) {
			for _, s := range series {
				if s.Metric[m[1]] == "" {
					t.Errorf("%s: legend %q, but a series has no %s: %v", q.where, q.legend, m[1], s.Metric)
				}
			}
		}
	}

	// The alerts: loaded, evaluated without error, none pending or firing.
	time.Sleep(3 * time.Second) // a few evaluations with data
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name, Health, LastError string
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", nil, &rules); err != nil {
		t.Fatal(err)
	}
	loaded := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			loaded++
			if r.Health != "ok" {
				t.Errorf("alert %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	expectEq(t, "alerts loaded", loaded, len(alertRules(t, allAlerts)))
	var alerts struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.get("/api/v1/alerts", nil, &alerts); err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts.Alerts {
		t.Errorf("alert %s is %s on a healthy release: %v", a.Labels["alertname"], a.State, a.Labels)
	}
	// Without DRA the claims' gauges stay at 0: the cluster-state alert must not read them alone.
	if unserved, err := p.query(`gpu_admission_cluster_synced{resource="resourceclaims"} == 0`); err == nil {
		t.Logf("resourceclaims not served: %d series of gpu_admission_cluster_synced at 0, no alert", len(unserved))
	}
}
