// Tests that run `gpu-admission serve` the way the rendered chart starts it (its arguments, its
// certificate), and of the cluster-state values (--cluster, RBAC, the service account token).
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Every flag the Deployment passes is one `gpu-admission serve` knows.
func TestServeAcceptsTheChartsFlags(t *testing.T) {
	bin := binary(t)
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	for _, a := range strs(container(t, mustRender(t, Options{})), "args") {
		if strings.HasPrefix(a, "--") && !strings.Contains(string(out), a) {
			t.Errorf("the chart passes %s, which `gpu-admission serve --help` does not list:\n%s", a, out)
		}
	}
}

// Runs the real server with the chart's arguments, policy and generated certificate, and talks to
// it the way the API server does: TLS verified against the caBundle for NAME.NS.svc.
func TestServeWithTheRenderedChart(t *testing.T) {
	bin := binary(t)
	res := mustRender(t, generateMode()) // the certificate rendered, mounted as the Secret would be
	dir := t.TempDir()
	mounts := map[string]string{"/etc/gpu-admission/policy": filepath.Join(dir, "policy"), "/etc/gpu-admission/tls": filepath.Join(dir, "tls")}
	for _, d := range mounts {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(mounts["/etc/gpu-admission/policy"], "policy.yaml"), []byte(renderedPolicy(t, res)), 0o644)
	secret := stringMap(get(one(t, res, "Secret"), "data"))
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		raw, _ := base64.StdEncoding.DecodeString(secret[k])
		os.WriteFile(filepath.Join(mounts["/etc/gpu-admission/tls"], k), raw, 0o600)
	}
	port, metricsPort := freePort(t), freePort(t)
	var args []string
	for _, a := range strs(container(t, res), "args") {
		for from, to := range mounts {
			a = strings.Replace(a, from, to, 1)
		}
		a = strings.Replace(a, "0.0.0.0:8443", fmt.Sprintf("127.0.0.1:%d", port), 1)
		a = strings.Replace(a, "0.0.0.0:9090", fmt.Sprintf("127.0.0.1:%d", metricsPort), 1)
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()

	bundle, _ := base64.StdEncoding.DecodeString(str(one(t, res, "ValidatingWebhookConfiguration"), "webhooks", 0, "clientConfig", "caBundle"))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("caBundle holds no PEM certificate")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: "gpu-admission.gpu-admission.svc", MinVersion: tls.VersionTLS12}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("gpu-admission serve exited (%v) before becoming ready:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 after 15s (last error %v):\n%s", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp, err := client.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}

	// A privileged pod in a tenant namespace: the chart's default policy finds it, and the chart's
	// default enforcement (audit) admits it with the finding in the audit annotations.
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"chart-test-1",
"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"research","operation":"CREATE","userInfo":{"username":"alice"},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"research"},
"spec":{"containers":[{"name":"c","image":"busybox","securityContext":{"privileged":true}}]}}}}`
	resp, err := client.Post(base+"/validate", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatalf("POST /validate: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Response struct {
			UID              string            `json:"uid"`
			Allowed          bool              `json:"allowed"`
			AuditAnnotations map[string]string `json:"auditAnnotations"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Response.UID != "chart-test-1" || !out.Response.Allowed ||
		!strings.Contains(out.Response.AuditAnnotations["privileged"], "privileged") {
		t.Errorf("POST /validate of a privileged pod: HTTP %d %s", resp.StatusCode, body)
	}

	checkServedPolicyConfigMap(t, client, base, res)

	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)); err != nil {
		t.Errorf("GET /metrics: %v", err)
	} else {
		m, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(m), "gpu_admission_requests_total") {
			t.Errorf("/metrics lacks gpu_admission_requests_total")
		}
	}

	// SIGTERM: exit 0 well within the drain period the chart passes.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("gpu-admission serve exited with %v after SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("gpu-admission serve still running 20s after SIGTERM")
	}
}

// checkClusterState: --cluster follows the `cluster` value; with cluster state on, the pod mounts
// its token and a ClusterRole grants exactly get/list/watch on namespaces, resourceclaims,
// resourceclaimtemplates and podgroups and get on pods, bound to the pod's ServiceAccount; with it off, no
// token and no RBAC.
func checkClusterState(t *testing.T, res *Result, spec obj, c obj) {
	t.Helper()
	mode := argValue(t, c, "--cluster")
	on := mode != "off"
	expectEq(t, "pod automountServiceAccountToken", get(spec, "automountServiceAccountToken"), on || selfManaged(c))
	res = withoutHooks(res)     // the pre-delete hook has a grant of its own (gpucluster_test.go)
	res = withoutCertsRBAC(res) // self-managed certificates have theirs (certs_test.go)
	roles, bindings := all(res, "ClusterRole"), all(res, "ClusterRoleBinding")
	if !on {
		if len(roles)+len(bindings)+len(all(res, "Role"))+len(all(res, "RoleBinding")) != 0 {
			t.Errorf("--cluster off, but RBAC objects are rendered")
		}
		return
	}
	if len(roles) == 0 && len(bindings) == 0 {
		return // rbac.create: false (the operator grants it)
	}
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("want one ClusterRole and one ClusterRoleBinding, got %d and %d", len(roles), len(bindings))
	}
	var got []string
	for _, rule := range list(roles[0], "rules") {
		verbs := strs(rule, "verbs")
		sort.Strings(verbs)
		for _, group := range strs(rule, "apiGroups") {
			for _, resource := range strs(rule, "resources") {
				got = append(got, group+"/"+resource+":"+strings.Join(verbs, ","))
			}
		}
		if len(list(rule, "resourceNames")) > 0 || len(list(rule, "nonResourceURLs")) > 0 {
			t.Errorf("unexpected rule fields in %v", rule)
		}
	}
	sort.Strings(got)
	expectEq(t, "ClusterRole rules", got, []string{
		"/namespaces:get,list,watch",
		"/pods:get",
		"resource.k8s.io/resourceclaims:get,list,watch",
		"resource.k8s.io/resourceclaimtemplates:get,list,watch",
		"scheduling.k8s.io/podgroups:get,list,watch",
	})
	b := bindings[0]
	expectEq(t, "binding roleRef", str(b, "roleRef", "name"), str(roles[0], "metadata", "name"))
	expectEq(t, "binding roleRef kind", str(b, "roleRef", "kind"), "ClusterRole")
	subjects := list(b, "subjects")
	if len(subjects) != 1 {
		t.Fatalf("binding subjects = %v", subjects)
	}
	expectEq(t, "binding subject kind", str(subjects[0], "kind"), "ServiceAccount")
	expectEq(t, "binding subject name", str(subjects[0], "name"), str(spec, "serviceAccountName"))
	expectEq(t, "binding subject namespace", str(subjects[0], "namespace"), str(one(t, res, "Deployment"), "metadata", "namespace"))
}

func TestClusterStateValues(t *testing.T) {
	res := mustRender(t, Options{})
	expectEq(t, "default --cluster", argValue(t, container(t, res), "--cluster"), "auto")
	off := renderValues(t, "cluster: \"off\"\n")
	checkDeployment(t, off)
	checkNetworkPolicy(t, off)
	expectEq(t, "--cluster off", argValue(t, container(t, off), "--cluster"), "off")
	required := renderValues(t, "cluster: required\n")
	checkDeployment(t, required)
	expectEq(t, "--cluster required", argValue(t, container(t, required), "--cluster"), "required")
	noRBAC := renderValues(t, "rbac: {create: false}\n")
	if len(all(noRBAC, "ClusterRole")) != 0 {
		t.Errorf("rbac.create false still renders a ClusterRole")
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "cluster: sometimes\n")}}, "cluster")
}
