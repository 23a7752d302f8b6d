// The chart tests' shared helpers: the chart loaded once, rendering with values, reading rendered
// objects by path, running the gpu-admission binary (lint) and the checks every render shares
// (metadata, the webhook's pod spec and container).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// ---- loading and rendering ----

const (
	testRelease   = "gpu-admission"
	testNamespace = "gpu-admission"
)

var loadedChart *Chart

func chart(t *testing.T) *Chart {
	t.Helper()
	if loadedChart == nil {
		c, err := LoadChart(defaultChartDir())
		if err != nil {
			t.Fatalf("loading the chart: %v", err)
		}
		loadedChart = c
	}
	return loadedChart
}

// vals builds an override layer from YAML text.
func vals(t *testing.T, text string) map[string]interface{} {
	t.Helper()
	v, err := ParseValues([]byte(text))
	if err != nil {
		t.Fatalf("test values: %v\n%s", err, text)
	}
	return v
}

func renderWith(t *testing.T, opts Options) (*Result, error) {
	t.Helper()
	if opts.ReleaseName == "" {
		opts.ReleaseName = testRelease
	}
	if opts.Namespace == "" {
		opts.Namespace = testNamespace
	}
	return Render(chart(t), opts)
}

func mustRender(t *testing.T, opts Options) *Result {
	t.Helper()
	res, err := renderWith(t, opts)
	if err != nil {
		t.Fatalf("render failed: %v", err)
	}
	return res
}

func renderValues(t *testing.T, text string) *Result {
	t.Helper()
	return mustRender(t, Options{Values: []map[string]interface{}{vals(t, text)}})
}

func mustFail(t *testing.T, opts Options, wantInError string) {
	t.Helper()
	_, err := renderWith(t, opts)
	if err == nil {
		t.Fatalf("render succeeded, want an error containing %q", wantInError)
	}
	if !strings.Contains(err.Error(), wantInError) {
		t.Fatalf("render error %q does not contain %q", err, wantInError)
	}
}

// ---- object access ----

type obj = map[string]interface{}

func all(res *Result, kind string) []obj {
	var out []obj
	for _, m := range res.Manifests {
		if m.Kind() == kind {
			out = append(out, m.Object)
		}
	}
	return out
}

func one(t *testing.T, res *Result, kind string) obj {
	t.Helper()
	l := all(res, kind)
	if len(l) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(l))
	}
	return l[0]
}

func named(t *testing.T, res *Result, kind, name string) obj {
	t.Helper()
	for _, o := range all(res, kind) {
		if str(o, "metadata", "name") == name {
			return o
		}
	}
	t.Fatalf("no %s named %q", kind, name)
	return nil
}

// get walks maps by string keys and lists by int indices; nil when absent.
func get(v interface{}, path ...interface{}) interface{} {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]interface{})
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v interface{}, path ...interface{}) string {
	s, _ := get(v, path...).(string)
	return s
}

func num(t *testing.T, v interface{}, path ...interface{}) float64 {
	t.Helper()
	n, ok := get(v, path...).(float64)
	if !ok {
		t.Fatalf("%v: want a number, got %#v", path, get(v, path...))
	}
	return n
}

func list(v interface{}, path ...interface{}) []interface{} {
	l, _ := get(v, path...).([]interface{})
	return l
}

func strs(v interface{}, path ...interface{}) []string {
	var out []string
	for _, x := range list(v, path...) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func expectEq(t *testing.T, what string, got, want interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func stringMap(v interface{}) map[string]string {
	out := map[string]string{}
	if m, ok := v.(map[string]interface{}); ok {
		for k, x := range m {
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// ---- the gpu-admission binary ----

func binary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("GPU_ADMISSION_BINARY")
	if bin == "" {
		t.Skip("SKIP: GPU_ADMISSION_BINARY is not set, so the rendered policy is not linted " +
			"(run.sh test BUILD/gpu-admission; CTest always sets it)")
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("GPU_ADMISSION_BINARY=%s is not an executable file (build it first: cmake --build build)", bin)
	}
	return bin
}

// lint runs `gpu-admission policy lint` on policy text and returns its exit code and output.
func lint(t *testing.T, policy string) (int, string) {
	t.Helper()
	bin := binary(t)
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "policy", "lint", file).CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("running %s: %v", bin, err)
	}
	return 0, string(out)
}

func renderedPolicy(t *testing.T, res *Result) string {
	t.Helper()
	cm := one(t, res, "ConfigMap")
	p, ok := get(cm, "data", "policy.yaml").(string)
	if !ok {
		t.Fatalf("ConfigMap has no data.policy.yaml")
	}
	return p
}

func expectLintPasses(t *testing.T, res *Result) {
	t.Helper()
	if rc, out := lint(t, renderedPolicy(t, res)); rc != 0 {
		t.Fatalf("gpu-admission policy lint on the rendered ConfigMap exited %d:\n%s", rc, out)
	}
}

// ---- shared checks ----

var standardLabels = []string{
	"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance",
	"app.kubernetes.io/version", "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of",
}

var clusterScoped = map[string]bool{"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true}

func checkMetadata(t *testing.T, res *Result, release, ns string) {
	t.Helper()
	for _, m := range res.Manifests {
		labels := stringMap(get(m.Object, "metadata", "labels"))
		for _, l := range standardLabels {
			if labels[l] == "" {
				t.Errorf("%s/%s has no %s label", m.Kind(), m.Name(), l)
			}
		}
		if labels["app.kubernetes.io/instance"] != release {
			t.Errorf("%s/%s: app.kubernetes.io/instance = %q, want %q", m.Kind(), m.Name(), labels["app.kubernetes.io/instance"], release)
		}
		gotNS := str(m.Object, "metadata", "namespace")
		if clusterScoped[m.Kind()] {
			if gotNS != "" {
				t.Errorf("cluster-scoped %s/%s has namespace %q", m.Kind(), m.Name(), gotNS)
			}
		} else if gotNS != ns && m.Kind() != "ServiceMonitor" && m.Kind() != "PrometheusRule" {
			t.Errorf("%s/%s: namespace %q, want %q", m.Kind(), m.Name(), gotNS, ns)
		}
	}
}

func kinds(res *Result) []string {
	var out []string
	for _, m := range res.Manifests {
		out = append(out, m.Kind())
	}
	sort.Strings(out)
	return out
}

func podSpec(t *testing.T, res *Result) obj {
	t.Helper()
	spec, ok := get(one(t, res, "Deployment"), "spec", "template", "spec").(obj)
	if !ok {
		t.Fatal("Deployment has no pod template spec")
	}
	return spec
}

func container(t *testing.T, res *Result) obj {
	t.Helper()
	cs := list(podSpec(t, res), "containers")
	if len(cs) != 1 {
		t.Fatalf("want one container, got %d", len(cs))
	}
	return cs[0].(obj)
}

// argValue returns the argument after flag in the container's args.
func argValue(t *testing.T, c obj, flag string) string {
	t.Helper()
	args := strs(c, "args")
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if strings.HasPrefix(a, flag+"=") {
			return strings.TrimPrefix(a, flag+"=")
		}
	}
	t.Fatalf("container args %v have no %s", args, flag)
	return ""
}

// containerPort resolves a probe or Service target port (a name or a number) to a container port.
func containerPort(t *testing.T, c obj, port interface{}) float64 {
	t.Helper()
	if n, ok := port.(float64); ok {
		return n
	}
	for _, p := range list(c, "ports") {
		if str(p, "name") == port {
			return num(t, p, "containerPort")
		}
	}
	t.Fatalf("container has no port named %v", port)
	return 0
}

func selectorLabels(t *testing.T, res *Result) map[string]string {
	t.Helper()
	sel := stringMap(get(one(t, res, "Deployment"), "spec", "selector", "matchLabels"))
	if len(sel) == 0 {
		t.Fatal("Deployment has no selector.matchLabels")
	}
	return sel
}
