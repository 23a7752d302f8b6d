// The metrics the binaries export, by name and type, for the dashboard and alert checks: read
// from a running `gpu-admission serve` (cluster state on, against a stand-in API server, after
// requests that touch every family) and a running `gpu-admission audit --interval` (one run
// against the same stand-in), by scraping their /metrics. Without the binary the names and
// types come from the sources that register them (webhook/ops/metrics_internal.h,
// webhook/audit/audit_metrics.cpp); TestExportedMetricsMatchTheSources checks the two agree.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// standInAPIServer answers what serve's cluster state and the audit ask of an API server: a
// namespace list and a watch that stays open, no resource.k8s.io, discovery of the core group
// with pods and namespaces, and a pod list with one privileged pod. It returns a kubeconfig.
func standInAPIServer(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	namespaces := `{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` +
		`{"metadata":{"name":"research","uid":"n1","resourceVersion":"90","labels":{"kubernetes.io/metadata.name":"research"}}},` +
		`{"metadata":{"name":"ml-platform","uid":"n2","resourceVersion":"91","labels":{"kubernetes.io/metadata.name":"ml-platform"}}}]}`
	pods := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` +
		`{"metadata":{"name":"p","namespace":"ml-platform","uid":"p1","resourceVersion":"95"},` +
		`"spec":{"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}}]}`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/namespaces" && r.URL.Query().Get("watch") != "":
			w.WriteHeader(200)
			io.WriteString(w, `{"type":"BOOKMARK","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"resourceVersion":"101"}}}`+"\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-done:
			}
		case r.URL.Path == "/api/v1/namespaces":
			io.WriteString(w, namespaces)
		case r.URL.Path == "/api/v1/pods":
			io.WriteString(w, pods)
		case r.URL.Path == "/apis":
			io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		case r.URL.Path == "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[`+
				`{"name":"pods","namespaced":true,"kind":"Pod","verbs":["get","list","watch"]},`+
				`{"name":"namespaces","namespaced":false,"kind":"Namespace","verbs":["get","list","watch"]}]}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: stand-in, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: test, user: {token: test-token}}]
contexts: [{name: stand-in, context: {cluster: stand-in, user: test}}]
current-context: stand-in
`, srv.URL, base64.StdEncoding.EncodeToString(ca))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// metricsPolicy is the chart's default policy with an exception for privileged pods in the
// namespace research, so exceptions_applied_total gets a series.
func metricsPolicy(t *testing.T) string {
	t.Helper()
	var policy map[string]interface{}
	if err := yaml.Unmarshal([]byte(renderedPolicy(t, mustRender(t, Options{}))), &policy); err != nil {
		t.Fatal(err)
	}
	spec := policy["spec"].(map[string]interface{})
	spec["exceptions"] = []interface{}{map[string]interface{}{"name": "metrics-test", "reason": "the chart's metrics test",
		"rules": []interface{}{"privileged"}, "namespaces": []interface{}{"research"}, "expires": "2999-01-01T00:00:00Z"}}
	// A tenant that observes: its mutations are withheld.
	spec["tenants"] = append(spec["tenants"].([]interface{}), map[string]interface{}{"name": "observer",
		"namespaces": []interface{}{"observe-*"}, "enforcement": "audit"})
	out, err := yaml.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProcess runs the binary until the test ends; its stderr is in the returned buffer.
func startProcess(t *testing.T, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, &stderr
}

// waitFor polls check every 100 ms until it returns "", and fails with its last answer after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, logs *strings.Builder, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problem := check()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after %s\n%s", what, problem, timeout, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricsEnv is a running serve and audit against the stand-in API server, after requests that
// give every metric family of serve a series and one audit run.
type metricsEnv struct {
	serveMetrics, auditMetrics string // host:port
}

func startMetricsEnv(t *testing.T) metricsEnv {
	t.Helper()
	kubeconfig, policy := standInAPIServer(t), metricsPolicy(t)
	port, servePort, auditPort := freePort(t), freePort(t), freePort(t)
	env := metricsEnv{fmt.Sprintf("127.0.0.1:%d", servePort), fmt.Sprintf("127.0.0.1:%d", auditPort)}
	_, serveLog := startProcess(t, "serve", "--policy", policy, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--metrics-listen", env.serveMetrics, "--cluster", "required", "--kubeconfig", kubeconfig)
	_, auditLog := startProcess(t, "audit", "--policy", policy, "--kubeconfig", kubeconfig, "--interval", "5s",
		"--metrics-listen", env.auditMetrics)

	client := &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	waitFor(t, "serve's /readyz", 20*time.Second, serveLog, func() string {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		return map[bool]string{true: "", false: resp.Status}[resp.StatusCode == 200]
	})
	review := func(uid, ns, pod string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",
"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"` + ns + `","operation":"CREATE","userInfo":{"username":"alice"},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `"},"spec":` + pod + `}}}`
	}
	privileged := `{"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}`
	gpu := `{"containers":[{"name":"c","image":"cuda","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}`
	for _, r := range []struct{ path, body string }{
		{"/validate", review("m1", "research", privileged)},    // excepted
		{"/validate", review("m2", "ml-platform", privileged)}, // denied
		{"/mutate", review("m3", "research", gpu)},
		{"/mutate", review("m4", "observe-a", gpu)}, // withheld
		{"/validate", "not JSON"},                   // a client error
		{"/nowhere", "{}"},                          // HTTP 404
	} {
		resp, err := client.Post(base+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			t.Fatalf("POST %s: %v", r.path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitFor(t, "the audit's first run", 20*time.Second, auditLog, func() string {
		text, err := scrape(env.auditMetrics)
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(text, "\ngpu_admission_audit_last_run_success 1") {
			return "without a successful run"
		}
		return ""
	})
	return env
}

func scrape(hostPort string) (string, error) {
	resp, err := http.Get("http://" + hostPort + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), err
}

// exposition reads the text format: the type of each family, and the families with samples.
func exposition(text string) (types map[string]string, sampled map[string]bool) {
	types, sampled = map[string]string{}, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		} else if line != "" && !strings.HasPrefix(line, "#") {
			name := line[:strings.IndexAny(line+" ", "{ ")]
			if fam, _, _ := family(name, types); fam != "" {
				sampled[fam] = true
			}
		}
	}
	return types, sampled
}

// sourceMetrics: the families registered in the sources, by name and type.
func sourceMetrics(t *testing.T) (serve, audit map[string]string) {
	helper := regexp.MustCompile(`\b(counter|gauge)\(\s*"(gpu_admission_\w+)"`)
	builder := regexp.MustCompile(`Build(Counter|Gauge|Histogram)\(\)\s*\.Name\("(gpu_admission_\w+)"\)`)
	read := func(file string) map[string]string {
		names := map[string]string{}
		text := repoFile(t, file)
		for _, m := range helper.FindAllStringSubmatch(text, -1) {
			names[m[2]] = m[1]
		}
		for _, m := range builder.FindAllStringSubmatch(text, -1) {
			names[m[2]] = strings.ToLower(m[1])
		}
		return names
	}
	serve, audit = read("webhook/ops/metrics_internal.h"), read("webhook/audit/audit_metrics.cpp")
	if len(serve) < 20 || len(audit) < 5 {
		t.Fatalf("found only %d metric families in metrics_internal.h and %d in audit_metrics.cpp", len(serve), len(audit))
	}
	return serve, audit
}

var exportedCache map[string]string

// exportedMetrics: every family serve and the audit export, name to type (counter, gauge,
// histogram), scraped from the running binaries, or read from the sources without the binary.
func exportedMetrics(t *testing.T) map[string]string {
	t.Helper()
	if exportedCache != nil {
		return exportedCache
	}
	types := map[string]string{}
	if os.Getenv("GPU_ADMISSION_BINARY") == "" {
		t.Log("GPU_ADMISSION_BINARY is not set: metric names and types come from the sources, not from /metrics")
		serve, audit := sourceMetrics(t)
		for _, m := range []map[string]string{serve, audit} {
			for name, typ := range m {
				types[name] = typ
			}
		}
		return types
	}
	env := startMetricsEnv(t)
	for _, target := range []string{env.serveMetrics, env.auditMetrics} {
		text, err := scrape(target)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := exposition(text)
		for name, typ := range got {
			types[name] = typ
		}
	}
	exportedCache = types
	return types
}

// What the binaries export is what their sources register, the requests of startMetricsEnv give
// every family a series (so the dashboard test sees every name), and promtool finds nothing to
// object to in either exposition.
func TestExportedMetricsMatchTheSources(t *testing.T) {
	if os.Getenv("GPU_ADMISSION_BINARY") == "" {
		t.Skip("skipped: GPU_ADMISSION_BINARY is not set (run.sh test BUILD/gpu-admission)")
	}
	env := startMetricsEnv(t)
	serveSrc, auditSrc := sourceMetrics(t)
	for _, c := range []struct {
		what, target string
		want         map[string]string
	}{{"serve", env.serveMetrics, serveSrc}, {"audit", env.auditMetrics, auditSrc}} {
		text, err := scrape(c.target)
		if err != nil {
			t.Fatal(err)
		}
		if promtool, err := exec.LookPath("promtool"); err == nil {
			lint := exec.Command(promtool, "check", "metrics")
			lint.Stdin = strings.NewReader(text)
			if out, err := lint.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics on %s's /metrics: %v\n%s", c.what, err, out)
			}
		}
		types, sampled := exposition(text)
		var names []string
		for name := range c.want {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if types[name] != c.want[name] {
				t.Errorf("%s exports %s as %q, its source registers a %s", c.what, name, types[name], c.want[name])
			} else if !sampled[name] {
				t.Errorf("%s exports no series of %s after the test's requests", c.what, name)
			}
		}
		for name := range types {
			if c.want[name] == "" {
				t.Errorf("%s exports %s, which the test did not find in its source", c.what, name)
			}
		}
	}
}
