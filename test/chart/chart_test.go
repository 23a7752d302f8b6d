// Tests for charts/gpu-admission: the chart is rendered like `helm template` (render.go) and every
// rendered object is checked against the chart's contract. The policy in the rendered ConfigMap is linted
// with the gpu-admission binary named by $GPU_ADMISSION_BINARY (run.sh test BINARY sets it; CTest
// always does). Without it those checks are skipped with a "SKIP" message.
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

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

// checkRestricted checks a pod spec and its container against Pod Security Standards
// "restricted": non-root UID 65532, no host namespaces, read-only root filesystem, no privilege
// escalation, every capability dropped, seccomp RuntimeDefault.
func checkRestricted(t *testing.T, what string, spec, c obj) {
	t.Helper()
	expectEq(t, what+" pod runAsNonRoot", get(spec, "securityContext", "runAsNonRoot"), true)
	expectEq(t, what+" pod runAsUser", get(spec, "securityContext", "runAsUser"), float64(65532))
	expectEq(t, what+" pod seccompProfile", str(spec, "securityContext", "seccompProfile", "type"), "RuntimeDefault")
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if get(spec, f) == true {
			t.Errorf("%s pod sets %s", what, f)
		}
	}
	sc := get(c, "securityContext")
	expectEq(t, what+" runAsNonRoot", get(sc, "runAsNonRoot"), true)
	expectEq(t, what+" runAsUser", get(sc, "runAsUser"), float64(65532))
	expectEq(t, what+" readOnlyRootFilesystem", get(sc, "readOnlyRootFilesystem"), true)
	expectEq(t, what+" allowPrivilegeEscalation", get(sc, "allowPrivilegeEscalation"), false)
	expectEq(t, what+" capabilities.drop", strs(sc, "capabilities", "drop"), []string{"ALL"})
	if add := list(sc, "capabilities", "add"); len(add) > 0 {
		t.Errorf("%s capabilities.add = %v", what, add)
	}
	expectEq(t, what+" seccompProfile", str(sc, "seccompProfile", "type"), "RuntimeDefault")
	if get(sc, "privileged") == true {
		t.Errorf("%s container is privileged", what)
	}
	for _, v := range list(spec, "volumes") {
		if get(v, "hostPath") != nil {
			t.Errorf("%s volume %s is a hostPath", what, str(v, "name"))
		}
	}
}

func checkDeployment(t *testing.T, res *Result) {
	t.Helper()
	d := one(t, res, "Deployment")
	if len(all(res, "HorizontalPodAutoscaler")) > 0 {
		// The HPA owns the count: a replicas field would reset it on every upgrade.
		if r := get(d, "spec", "replicas"); r != nil {
			t.Errorf("replicas = %v although a HorizontalPodAutoscaler owns the count", r)
		}
		checkHPA(t, res)
	} else if r := num(t, d, "spec", "replicas"); r < 2 {
		t.Errorf("replicas = %v, want >= 2", r)
	}
	expectEq(t, "strategy.type", str(d, "spec", "strategy", "type"), "RollingUpdate")
	expectEq(t, "rollingUpdate.maxUnavailable", get(d, "spec", "strategy", "rollingUpdate", "maxUnavailable"), float64(0))
	if s := get(d, "spec", "strategy", "rollingUpdate", "maxSurge"); s == nil || s == float64(0) {
		t.Errorf("rollingUpdate.maxSurge = %v, want at least 1", s)
	}
	sel := selectorLabels(t, res)
	podLabels := stringMap(get(d, "spec", "template", "metadata", "labels"))
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("pod template label %s = %q, selector wants %q", k, podLabels[k], v)
		}
	}
	for k := range stringMap(get(d, "spec", "template", "metadata", "annotations")) {
		if strings.Contains(k, "checksum") {
			t.Errorf("pod annotation %s would restart the webhook on policy or certificate changes it hot-reloads", k)
		}
	}

	spec := podSpec(t, res)
	// Spread: topology spread across hostname and zone, plus preferred anti-affinity.
	keys := map[string]bool{}
	for _, c := range list(spec, "topologySpreadConstraints") {
		keys[str(c, "topologyKey")] = true
		expectEq(t, "topologySpreadConstraints labelSelector", stringMap(get(c, "labelSelector", "matchLabels")), sel)
		if num(t, c, "maxSkew") < 1 {
			t.Errorf("maxSkew < 1")
		}
		w := str(c, "whenUnsatisfiable")
		if w != "ScheduleAnyway" && w != "DoNotSchedule" {
			t.Errorf("whenUnsatisfiable = %q", w)
		}
	}
	for _, k := range []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"} {
		if !keys[k] {
			t.Errorf("no topologySpreadConstraint on %s", k)
		}
	}
	terms := list(spec, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	if len(terms) == 0 {
		t.Errorf("no preferred podAntiAffinity")
	} else {
		expectEq(t, "podAntiAffinity topologyKey", str(terms[0], "podAffinityTerm", "topologyKey"), "kubernetes.io/hostname")
		expectEq(t, "podAntiAffinity selector", stringMap(get(terms[0], "podAffinityTerm", "labelSelector", "matchLabels")), sel)
	}

	c := container(t, res)
	checkRestricted(t, "webhook", spec, c)
	checkClusterState(t, res, spec, c)

	// Probes over HTTPS on the webhook port.
	webhookPort := containerPort(t, c, "https")
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		expectEq(t, probe+" path", str(c, probe, "httpGet", "path"), path)
		expectEq(t, probe+" scheme", str(c, probe, "httpGet", "scheme"), "HTTPS")
		expectEq(t, probe+" port", containerPort(t, c, get(c, probe, "httpGet", "port")), webhookPort)
	}
	expectEq(t, "--listen", argValue(t, c, "--listen"), fmt.Sprintf("0.0.0.0:%v", webhookPort))
	expectEq(t, "--metrics-listen", argValue(t, c, "--metrics-listen"), fmt.Sprintf("0.0.0.0:%v", containerPort(t, c, "metrics")))
	expectEq(t, "first argument", strs(c, "args")[0], "serve")

	for _, k := range []string{"requests.cpu", "requests.memory", "limits.cpu", "limits.memory"} {
		p := strings.Split(k, ".")
		if get(c, "resources", p[0], p[1]) == nil {
			t.Errorf("resources.%s is not set", k)
		}
	}

	// The policy ConfigMap and the TLS Secret are mounted as directories (updates propagate).
	mounts := map[string]string{}
	for _, m := range list(c, "volumeMounts") {
		if get(m, "subPath") != nil || get(m, "subPathExpr") != nil {
			t.Errorf("volumeMount %s uses subPath: updates would never reach the webhook", str(m, "name"))
		}
		mounts[str(m, "name")] = str(m, "mountPath")
	}
	vols := map[string]obj{}
	for _, v := range list(spec, "volumes") {
		vols[str(v, "name")] = v.(obj)
		if get(v, "hostPath") != nil {
			t.Errorf("volume %s is a hostPath", str(v, "name"))
		}
	}
	var policyVol, tlsVol string
	for name, v := range vols {
		if get(v, "configMap") != nil {
			policyVol = name
		}
		if get(v, "secret") != nil {
			tlsVol = name
		}
	}
	if policyVol == "" || tlsVol == "" {
		t.Fatalf("want a ConfigMap and a Secret volume, got %v", vols)
	}
	cm := one(t, res, "ConfigMap")
	expectEq(t, "policy volume ConfigMap", str(vols[policyVol], "configMap", "name"), str(cm, "metadata", "name"))
	policyArg := argValue(t, c, "--policy")
	if filepath.Dir(policyArg) != mounts[policyVol] || get(cm, "data", filepath.Base(policyArg)) == nil {
		t.Errorf("--policy %s is not a key of the ConfigMap mounted at %s", policyArg, mounts[policyVol])
	}
	for _, f := range []string{"--tls-cert", "--tls-key"} {
		if a := argValue(t, c, f); filepath.Dir(a) != mounts[tlsVol] {
			t.Errorf("%s %s is not in the Secret mounted at %s", f, a, mounts[tlsVol])
		}
	}

	// ServiceAccount: its token only through the pod spec (checkClusterState).
	if sas := all(res, "ServiceAccount"); len(sas) == 1 {
		expectEq(t, "serviceAccountName", str(spec, "serviceAccountName"), str(sas[0], "metadata", "name"))
		expectEq(t, "ServiceAccount automountServiceAccountToken", get(sas[0], "automountServiceAccountToken"), false)
	}

	// PodDisruptionBudget over the same pods, letting drains through: minAvailable at least 1 and
	// below the replica count (the HPA's minReplicas when it owns the count; checkHPA).
	pdb := one(t, res, "PodDisruptionBudget")
	expectEq(t, "PDB apiVersion", str(pdb, "apiVersion"), "policy/v1")
	if n, ok := get(pdb, "spec", "minAvailable").(float64); !ok || n < 1 {
		t.Errorf("PDB minAvailable = %v, want at least 1", get(pdb, "spec", "minAvailable"))
	} else if r, ok := get(d, "spec", "replicas").(float64); ok && n >= r {
		t.Errorf("PDB minAvailable %v is not below replicas %v: drains would block", n, r)
	}
	expectEq(t, "PDB selector", stringMap(get(pdb, "spec", "selector", "matchLabels")), sel)

	// Service: 443 -> the webhook port, plus metrics, over the same pods.
	svc := one(t, res, "Service")
	expectEq(t, "Service selector", stringMap(get(svc, "spec", "selector")), sel)
	ports := map[float64]float64{}
	for _, p := range list(svc, "spec", "ports") {
		ports[num(t, p, "port")] = containerPort(t, c, get(p, "targetPort"))
	}
	expectEq(t, "Service port 443 target", ports[443], webhookPort)
	expectEq(t, "Service metrics port target", ports[9090], containerPort(t, c, "metrics"))
}

// checkHPA checks the optional HorizontalPodAutoscaler: autoscaling/v2 on this Deployment, never
// below 2 replicas, a PodDisruptionBudget that lets drains through at minReplicas, Utilization
// targets only, and the requests those targets are percentages of. Returns the HPA.
func checkHPA(t *testing.T, res *Result) obj {
	t.Helper()
	hpa := one(t, res, "HorizontalPodAutoscaler")
	d := one(t, res, "Deployment")
	expectEq(t, "HPA apiVersion", str(hpa, "apiVersion"), "autoscaling/v2")
	expectEq(t, "HPA scaleTargetRef", stringMap(get(hpa, "spec", "scaleTargetRef")),
		map[string]string{"apiVersion": "apps/v1", "kind": "Deployment", "name": str(d, "metadata", "name")})
	expectEq(t, "HPA namespace", str(hpa, "metadata", "namespace"), str(d, "metadata", "namespace"))
	min, max := num(t, hpa, "spec", "minReplicas"), num(t, hpa, "spec", "maxReplicas")
	if min < 2 {
		t.Errorf("HPA minReplicas = %v, want >= 2", min)
	}
	if max < min {
		t.Errorf("HPA maxReplicas = %v is below minReplicas %v", max, min)
	}
	if pdbs := all(res, "PodDisruptionBudget"); len(pdbs) == 1 {
		if n, ok := get(pdbs[0], "spec", "minAvailable").(float64); ok && n >= min {
			t.Errorf("PDB minAvailable %v is not below the HPA's minReplicas %v: drains would block", n, min)
		}
	}
	metrics := list(hpa, "spec", "metrics")
	if len(metrics) == 0 {
		t.Errorf("HPA has no metrics")
	}
	c := container(t, res)
	for _, m := range metrics {
		expectEq(t, "HPA metric type", str(m, "type"), "Resource")
		expectEq(t, "HPA target type", str(m, "resource", "target", "type"), "Utilization")
		if u := num(t, m, "resource", "target", "averageUtilization"); u < 1 {
			t.Errorf("HPA averageUtilization = %v", u)
		}
		name := str(m, "resource", "name")
		if name != "cpu" && name != "memory" {
			t.Errorf("HPA metric on %q", name)
		}
		if get(c, "resources", "requests", name) == nil {
			t.Errorf("HPA scales on %s utilization, but the container requests no %s", name, name)
		}
	}
	return hpa
}

func checkNetworkPolicy(t *testing.T, res *Result) {
	t.Helper()
	np := one(t, res, "NetworkPolicy")
	expectEq(t, "NetworkPolicy podSelector", stringMap(get(np, "spec", "podSelector", "matchLabels")), selectorLabels(t, res))
	if types := strs(np, "spec", "policyTypes"); len(types) == 0 || types[0] != "Ingress" {
		t.Errorf("policyTypes = %v, want Ingress first", types)
	}
	var ports []float64
	for _, rule := range list(np, "spec", "ingress") {
		rp := list(rule, "ports")
		if len(rp) == 0 {
			t.Errorf("an ingress rule allows every port: %v", rule)
		}
		for _, p := range rp {
			ports = append(ports, num(t, p, "port"))
		}
	}
	sort.Float64s(ports)
	c := container(t, res)
	want := []float64{containerPort(t, c, "https"), containerPort(t, c, "metrics")}
	sort.Float64s(want)
	expectEq(t, "NetworkPolicy ingress ports", ports, want)

	// Egress: none with cluster state off; with it on, only the API server's ports.
	if types := strs(np, "spec", "policyTypes"); len(types) == 2 {
		egress := list(np, "spec", "egress")
		if argValue(t, c, "--cluster") == "off" {
			expectEq(t, "egress with --cluster off", len(egress), 0)
		} else {
			var egressPorts []float64
			for _, rule := range egress {
				if len(list(rule, "ports")) == 0 {
					t.Errorf("an egress rule allows every port: %v", rule)
				}
				for _, p := range list(rule, "ports") {
					egressPorts = append(egressPorts, num(t, p, "port"))
				}
			}
			expectEq(t, "NetworkPolicy egress ports (API server)", egressPorts, []float64{443, 6443})
		}
	}
}

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

			// namespaceSelector: the release namespace, kube-system and the GPU stack's namespaces
			// are never sent (the chart's expression comes last, after any of the user's).
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

			// clientConfig points at the Service's port 443 in the release namespace.
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
			bundles = append(bundles, str(h, "clientConfig", "caBundle"))
		}
	}
	return bundles
}

func decodePEMCerts(t *testing.T, what string, b64 string) []*x509.Certificate {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s is not base64: %v", what, err)
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			t.Fatalf("%s holds a %s PEM block", what, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		t.Fatalf("%s holds no PEM certificate", what)
	}
	return certs
}

func dnsNames(service, ns string) []string {
	return []string{service, service + "." + ns, service + "." + ns + ".svc", service + "." + ns + ".svc.cluster.local"}
}

// checkGeneratedCertificates checks the generate mode: the Secret's ca.crt is every caBundle, and
// the serving certificate chains to it for the four Service DNS names. Returns the Secret's data.
func checkGeneratedCertificates(t *testing.T, res *Result, service, ns string, bundles []string) map[string]string {
	t.Helper()
	secret := one(t, res, "Secret")
	expectEq(t, "Secret type", str(secret, "type"), "kubernetes.io/tls")
	expectEq(t, "Secret name", str(secret, "metadata", "name"), service+"-tls")
	data := stringMap(get(secret, "data"))
	for _, b := range bundles {
		if b != data["ca.crt"] {
			t.Errorf("a caBundle differs from the Secret's ca.crt")
		}
	}
	checkServingCert(t, data, decodePEMCerts(t, "ca.crt", data["ca.crt"]), service, ns)
	return data
}

func checkServingCert(t *testing.T, data map[string]string, cas []*x509.Certificate, service, ns string) {
	t.Helper()
	roots := x509.NewCertPool()
	for _, ca := range cas {
		if !ca.IsCA {
			t.Errorf("ca.crt %q is not a CA", ca.Subject)
		}
		roots.AddCert(ca)
	}
	leafs := decodePEMCerts(t, "tls.crt", data["tls.crt"])
	leaf := leafs[0]
	names := append([]string{}, leaf.DNSNames...)
	sort.Strings(names)
	want := dnsNames(service, ns)
	sort.Strings(want)
	expectEq(t, "serving certificate SANs", names, want)
	for _, name := range dnsNames(service, ns) {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate does not verify for %s against the CA: %v", name, err)
		}
	}
	if d := time.Until(leaf.NotAfter); d < 365*24*time.Hour {
		t.Errorf("serving certificate expires in %v", d)
	}
	crt, _ := base64.StdEncoding.DecodeString(data["tls.crt"])
	key, _ := base64.StdEncoding.DecodeString(data["tls.key"])
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatalf("tls.crt and tls.key do not form a key pair: %v", err)
	}
	if k, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("serving key is %T, want ECDSA P-256", pair.PrivateKey)
	}
}

// ---- tests ----

func TestDefaultValues(t *testing.T) {
	res := mustRender(t, Options{})
	expectEq(t, "kinds (hooks aside)", kinds(withoutHooks(res)), []string{
		"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "MutatingWebhookConfiguration", "NetworkPolicy",
		"PodDisruptionBudget", "ResourceQuota", "Secret", "Service", "ServiceAccount", "ValidatingWebhookConfiguration",
	})
	checkMetadata(t, res, testRelease, testNamespace)
	checkDeployment(t, res)
	checkNetworkPolicy(t, res)
	expectEq(t, "PDB minAvailable", get(one(t, res, "PodDisruptionBudget"), "spec", "minAvailable"), float64(1))
	bundles := checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	checkGeneratedCertificates(t, res, "gpu-admission", testNamespace, bundles)

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
	// `helm template` has no cluster: each render generates a new CA, consistent within itself.
	a := mustRender(t, Options{})
	b := mustRender(t, Options{})
	ca := stringMap(get(one(t, a, "Secret"), "data"))["ca.crt"]
	cb := stringMap(get(one(t, b, "Secret"), "data"))["ca.crt"]
	if ca == cb {
		t.Errorf("two renders without lookup produced the same CA")
	}
}

func TestCertManagerMode(t *testing.T) {
	res := renderValues(t, "certificates: {mode: cert-manager}")
	checkMetadata(t, res, testRelease, testNamespace)
	checkDeployment(t, res)
	if s := all(res, "Secret"); len(s) != 0 {
		t.Errorf("cert-manager mode renders a Secret")
	}
	bundles := checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	for _, b := range bundles {
		if b != "" {
			t.Errorf("cert-manager mode sets caBundle; cainjector owns it")
		}
	}

	// Self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate.
	selfSigned := named(t, res, "Issuer", "gpu-admission-selfsigned")
	if get(selfSigned, "spec", "selfSigned") == nil {
		t.Errorf("%s is not self-signed", str(selfSigned, "metadata", "name"))
	}
	caCert := named(t, res, "Certificate", "gpu-admission-ca")
	expectEq(t, "CA isCA", get(caCert, "spec", "isCA"), true)
	expectEq(t, "CA issuer", str(caCert, "spec", "issuerRef", "name"), "gpu-admission-selfsigned")
	caIssuer := named(t, res, "Issuer", "gpu-admission-ca")
	expectEq(t, "CA Issuer secret", str(caIssuer, "spec", "ca", "secretName"), str(caCert, "spec", "secretName"))

	serving := named(t, res, "Certificate", "gpu-admission-tls")
	expectEq(t, "serving issuer", str(serving, "spec", "issuerRef", "name"), "gpu-admission-ca")
	expectEq(t, "serving issuer kind", str(serving, "spec", "issuerRef", "kind"), "Issuer")
	expectEq(t, "serving dnsNames", strs(serving, "spec", "dnsNames"), dnsNames("gpu-admission", testNamespace))
	expectEq(t, "serving key", str(serving, "spec", "privateKey", "algorithm"), "ECDSA")
	for _, v := range list(podSpec(t, res), "volumes") {
		if get(v, "secret") != nil {
			expectEq(t, "mounted Secret", str(v, "secret", "secretName"), str(serving, "spec", "secretName"))
		}
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		ann := stringMap(get(one(t, res, kind), "metadata", "annotations"))
		expectEq(t, kind+" inject-ca-from", ann["cert-manager.io/inject-ca-from"], testNamespace+"/"+str(serving, "metadata", "name"))
	}
	for _, kind := range []string{"Issuer", "Certificate"} {
		for _, o := range all(res, kind) {
			expectEq(t, kind+" apiVersion", str(o, "apiVersion"), "cert-manager.io/v1")
		}
	}
	if !strings.Contains(res.Notes, "cert-manager.io/v1 is not served") {
		t.Errorf("NOTES.txt does not warn when cert-manager is missing")
	}
	withCM := mustRender(t, Options{Values: []map[string]interface{}{vals(t, "certificates: {mode: cert-manager}")}, APIVersions: []string{"cert-manager.io/v1"}})
	if strings.Contains(withCM.Notes, "WARNING") {
		t.Errorf("NOTES.txt warns although cert-manager.io/v1 is served")
	}
	expectLintPasses(t, res)
}

func TestCertManagerWithExistingIssuer(t *testing.T) {
	res := renderValues(t, "certificates: {mode: cert-manager, certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer, group: cert-manager.io}}}")
	if n := len(all(res, "Issuer")); n != 0 {
		t.Errorf("%d Issuers rendered although issuerRef is given", n)
	}
	serving := one(t, res, "Certificate")
	expectEq(t, "issuerRef", stringMap(get(serving, "spec", "issuerRef")), map[string]string{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
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

// specExamplePolicy is the example policy of the product specification.
const specExamplePolicy = `apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: example}
spec:
  exemptions:
    namespaces: [kube-system, gpu-operator, "infra-*"]
    usernames: []
  gpuResources:
    full: [nvidia.com/gpu]
    migPrefix: nvidia.com/mig-
    shared: [nvidia.com/gpu.shared]
  defaults:
    maxGpusPerPod: 2
    gpuTaints:
      - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  rules:
    privileged: deny
    host-namespaces: deny
    gpu-device-access: deny
    gpu-cap: warn
    mps-adversarial: deny
    gpu-tolerations: audit
    tenant-pool: deny
    tenant-label: deny
    mig-profile: deny
    gpu-sharing: deny
  mutations:
    mig-resources: true
    tenant-labels: true
    pool-selector: true
  pools:
    - name: a100-secure
      nodeSelector: {gpu.example.com/pool: a100-secure}
      trust: adversarial
      gpuModel: A100-SXM4-80GB
      mig: {strategy: mixed, defaultProfile: 1g.10gb}
      taints: [{key: gpu.example.com/pool, value: a100-secure, effect: NoSchedule}]
    - name: h100-shared
      nodeSelector: {gpu.example.com/pool: h100-shared}
      trust: cooperative
      gpuModel: H100-SXM5-80GB
      sharing: mps
  tenants:
    - name: alpha
      namespaces: [team-alpha, "alpha-*"]
      labels: {cost-center: cc-1042}
      maxGpusPerPod: 4
      pools: [a100-secure]
      defaultPool: a100-secure
`

func TestCustomPolicy(t *testing.T) {
	// As a string (what --set-file policy=FILE passes): the ConfigMap holds it byte for byte.
	res := mustRender(t, Options{Values: []map[string]interface{}{{"policy": specExamplePolicy}}})
	expectEq(t, "ConfigMap policy.yaml", renderedPolicy(t, res), specExamplePolicy)
	checkDeployment(t, res)
	expectLintPasses(t, res)

	// As a map: rendered as YAML with the same content.
	var m map[string]interface{}
	if err := yaml.Unmarshal([]byte(specExamplePolicy), &m); err != nil {
		t.Fatal(err)
	}
	res = mustRender(t, Options{Values: []map[string]interface{}{{"policy": m}}})
	var back map[string]interface{}
	if err := yaml.Unmarshal([]byte(renderedPolicy(t, res)), &back); err != nil {
		t.Fatalf("rendered map policy is not YAML: %v", err)
	}
	expectEq(t, "policy given as a map", back, m)
	expectLintPasses(t, res)
}

func TestPolicyTextSurvivesRendering(t *testing.T) {
	for _, p := range []string{
		"  indented: first line\nsecond: line\n",
		"no trailing newline",
		"trailing spaces   \n\ttab: inside\n",
		"unicode: \"é ✓ 中文\"\n---\nkey: \"quotes ' and \\\" and #hash\"\n",
		"\n\nleading blank lines\n\n\ntrailing blank lines\n\n",
		"true",
	} {
		res := mustRender(t, Options{Values: []map[string]interface{}{{"policy": p}}})
		want := p
		if strings.HasSuffix(p, "\n\n") {
			// Helm's toYaml drops the last line break, so trailing blank lines (meaningless in
			// YAML) collapse into one newline.
			want = strings.TrimRight(p, "\n") + "\n"
		}
		expectEq(t, "round trip", renderedPolicy(t, res), want)
	}
	mustFail(t, Options{Values: []map[string]interface{}{{"policy": ""}}}, "policy")
}

func TestLintRejectsABrokenPolicy(t *testing.T) {
	// Proves the lint checks above have teeth: an unknown pool reference must fail.
	broken := strings.Replace(specExamplePolicy, "pools: [a100-secure]", "pools: [a100-sec]", 1)
	res := mustRender(t, Options{Values: []map[string]interface{}{{"policy": broken}}})
	if rc, out := lint(t, renderedPolicy(t, res)); rc == 0 {
		t.Fatalf("gpu-admission policy lint accepted a policy with an unknown pool:\n%s", out)
	}
}

func TestReplicaCount(t *testing.T) {
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "replicaCount: 1")}}, "replicaCount")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "replicaCount: 1")}, SkipSchema: true}, "replicaCount must be at least 2")
	res := renderValues(t, "replicaCount: 3")
	expectEq(t, "replicas", get(one(t, res, "Deployment"), "spec", "replicas"), float64(3))
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "podDisruptionBudget: {minAvailable: 2}")}}, "must be below replicaCount")
	res = renderValues(t, `podDisruptionBudget: {minAvailable: "50%"}`)
	expectEq(t, "PDB minAvailable", get(one(t, res, "PodDisruptionBudget"), "spec", "minAvailable"), "50%")
}

// The HorizontalPodAutoscaler is off by default: the Deployment keeps replicaCount.
func TestAutoscalingOffByDefault(t *testing.T) {
	res := mustRender(t, Options{})
	if n := len(all(res, "HorizontalPodAutoscaler")); n != 0 {
		t.Fatalf("%d HorizontalPodAutoscalers rendered by default", n)
	}
	expectEq(t, "replicas", get(one(t, res, "Deployment"), "spec", "replicas"), float64(2))
	if !strings.Contains(res.Notes, "Replicas: 2\n") {
		t.Errorf("NOTES.txt does not give the replica count:\n%s", res.Notes)
	}
}

func TestAutoscaling(t *testing.T) {
	// The defaults (bench/README.md, "Sizing guide"): 2 to 6 replicas at 70% of the CPU request,
	// CPU only, scale-down one replica per 5 minutes after a 10-minute window.
	res := renderValues(t, "autoscaling: {enabled: true}")
	checkMetadata(t, res, testRelease, testNamespace)
	checkDeployment(t, res)
	checkNetworkPolicy(t, res)
	hpa := checkHPA(t, res)
	expectEq(t, "HPA name", str(hpa, "metadata", "name"), "gpu-admission")
	expectEq(t, "minReplicas", get(hpa, "spec", "minReplicas"), float64(2))
	expectEq(t, "maxReplicas", get(hpa, "spec", "maxReplicas"), float64(6))
	metrics := list(hpa, "spec", "metrics")
	if len(metrics) != 1 {
		t.Fatalf("metrics = %v, want CPU only", metrics)
	}
	expectEq(t, "metric", str(metrics[0], "resource", "name"), "cpu")
	expectEq(t, "CPU target", get(metrics[0], "resource", "target", "averageUtilization"), float64(70))
	expectEq(t, "scaleDown window", get(hpa, "spec", "behavior", "scaleDown", "stabilizationWindowSeconds"), float64(600))
	policies := list(hpa, "spec", "behavior", "scaleDown", "policies")
	if len(policies) != 1 {
		t.Fatalf("scaleDown policies = %v", policies)
	}
	expectEq(t, "scaleDown policy", []interface{}{str(policies[0], "type"), get(policies[0], "value"), get(policies[0], "periodSeconds")},
		[]interface{}{"Pods", float64(1), float64(300)})
	if get(hpa, "spec", "behavior", "scaleUp") != nil {
		t.Errorf("scaleUp set; the default keeps Kubernetes' own")
	}
	if get(one(t, res, "Deployment"), "spec", "replicas") != nil {
		t.Errorf("the Deployment sets replicas although the HPA owns them")
	}
	if !strings.Contains(res.Notes, "Replicas: 2 to 6 (HorizontalPodAutoscaler)") {
		t.Errorf("NOTES.txt does not mention the HPA:\n%s", res.Notes)
	}
	// Install order: the HPA after the Deployment it scales, before the webhook configurations.
	var order []string
	for _, m := range res.Manifests {
		order = append(order, m.Kind())
	}
	pos := map[string]int{}
	for i, k := range order {
		pos[k] = i
	}
	if pos["HorizontalPodAutoscaler"] < pos["Deployment"] || pos["HorizontalPodAutoscaler"] > pos["MutatingWebhookConfiguration"] {
		t.Errorf("install order %v", order)
	}

	// Everything set: a larger floor, memory as well, Kubernetes' default behaviour, and a PDB
	// that is valid against minReplicas (3) though not against replicaCount (2).
	res = renderValues(t, `
replicaCount: 2
autoscaling:
  enabled: true
  minReplicas: 3
  maxReplicas: 9
  targetCPUUtilizationPercentage: 60
  targetMemoryUtilizationPercentage: 80
  behavior: null
podDisruptionBudget: {minAvailable: 2}
resources: {requests: {cpu: 250m, memory: 128Mi}, limits: {cpu: "2", memory: 512Mi}}
`)
	checkDeployment(t, res)
	hpa = checkHPA(t, res)
	expectEq(t, "minReplicas", get(hpa, "spec", "minReplicas"), float64(3))
	expectEq(t, "maxReplicas", get(hpa, "spec", "maxReplicas"), float64(9))
	targets := map[string]interface{}{}
	for _, m := range list(hpa, "spec", "metrics") {
		targets[str(m, "resource", "name")] = get(m, "resource", "target", "averageUtilization")
	}
	expectEq(t, "targets", targets, map[string]interface{}{"cpu": float64(60), "memory": float64(80)})
	if get(hpa, "spec", "behavior") != nil {
		t.Errorf("behavior null renders %v, want none (Kubernetes' defaults)", get(hpa, "spec", "behavior"))
	}
	expectEq(t, "PDB minAvailable", get(one(t, res, "PodDisruptionBudget"), "spec", "minAvailable"), float64(2))

	// --set gives integers: same result.
	set := map[string]interface{}{}
	for _, e := range []string{"autoscaling.enabled=true", "autoscaling.minReplicas=4", "autoscaling.maxReplicas=4"} {
		if err := ParseSet(set, e); err != nil {
			t.Fatal(err)
		}
	}
	hpa = checkHPA(t, mustRender(t, Options{Values: []map[string]interface{}{set}}))
	expectEq(t, "minReplicas = maxReplicas", []interface{}{get(hpa, "spec", "minReplicas"), get(hpa, "spec", "maxReplicas")}, []interface{}{float64(4), float64(4)})

	// Memory only: CPU target null.
	res = renderValues(t, "autoscaling: {enabled: true, targetCPUUtilizationPercentage: null, targetMemoryUtilizationPercentage: 75}")
	metrics = list(checkHPA(t, res), "spec", "metrics")
	if len(metrics) != 1 || str(metrics[0], "resource", "name") != "memory" {
		t.Errorf("metrics = %v, want memory only", metrics)
	}
}

// Each refusal names the value and why, from the schema and, with the schema skipped (helm
// --skip-schema-validation), from the templates.
func TestAutoscalingRefusals(t *testing.T) {
	both := func(values, schemaWant, templateWant string) {
		t.Helper()
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, values)}}, schemaWant)
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, values)}, SkipSchema: true}, templateWant)
	}
	both("autoscaling: {enabled: true, minReplicas: 1}",
		"autoscaling.minReplicas: Must be greater than or equal to 2",
		"autoscaling.minReplicas must be at least 2, got 1")
	both("autoscaling: {enabled: true, minReplicas: 0, maxReplicas: 2}",
		"autoscaling.minReplicas: Must be greater than or equal to 2",
		"autoscaling.minReplicas must be at least 2, got 0")
	for _, v := range []string{
		"autoscaling: {enabled: true, minReplicas: 4, maxReplicas: 3}",
		"autoscaling: {enabled: true, minReplicas: 7}",
	} {
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, v)}}, "must be at least autoscaling.minReplicas")
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: true, minReplicas: 4, maxReplicas: 3}")}},
		"autoscaling.maxReplicas (3) must be at least autoscaling.minReplicas (4)")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: true, maxReplicas: 1}")}, SkipSchema: true},
		"autoscaling.maxReplicas (1) must be at least autoscaling.minReplicas (2)")

	// The HPA needs the requests its targets are percentages of.
	for _, v := range []string{
		"autoscaling: {enabled: true}\nresources: {requests: {cpu: null}}",
		"autoscaling: {enabled: true}\nresources: {requests: {cpu: \"\"}}",
		"autoscaling: {enabled: true}\nresources: null",
		"autoscaling: {enabled: true, targetCPUUtilizationPercentage: null, targetMemoryUtilizationPercentage: 80}\nresources: {requests: {cpu: null}}",
	} {
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, v)}}, "autoscaling.enabled needs resources.requests.cpu")
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: true, targetMemoryUtilizationPercentage: 80}\nresources: {requests: {memory: null}}")}},
		"autoscaling.targetMemoryUtilizationPercentage needs resources.requests.memory")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: true, targetCPUUtilizationPercentage: null}")}},
		"autoscaling.enabled needs a target")

	// The PDB must let drains through at the HPA's floor, whatever replicaCount says.
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: true}\nreplicaCount: 5\npodDisruptionBudget: {minAvailable: 2}")}},
		"podDisruptionBudget.minAvailable (2) must be below autoscaling.minReplicas (2)")
	renderValues(t, "autoscaling: {enabled: true, minReplicas: 3}\npodDisruptionBudget: {minAvailable: 2}")
	// Off, the same values are not checked (nothing of them is rendered).
	if n := len(all(renderValues(t, "autoscaling: {enabled: false}\nresources: {requests: {cpu: null}}"), "HorizontalPodAutoscaler")); n != 0 {
		t.Errorf("%d HPAs rendered although autoscaling is off", n)
	}
	if n := len(all(mustRender(t, Options{SkipSchema: true, Values: []map[string]interface{}{vals(t, "autoscaling: {enabled: false, minReplicas: 1, maxReplicas: 0}")}}), "HorizontalPodAutoscaler")); n != 0 {
		t.Errorf("%d HPAs rendered although autoscaling is off", n)
	}
}

func TestAutoscalingSchema(t *testing.T) {
	for _, bad := range []struct{ values, want string }{
		{"autoscaling: {enable: true}", "Additional property enable is not allowed"},
		{"autoscaling: {enabled: \"yes\"}", "autoscaling.enabled: Invalid type"},
		{"autoscaling: {minReplicas: \"3\"}", "autoscaling.minReplicas: Invalid type"},
		{"autoscaling: {maxReplicas: 1}", "autoscaling.maxReplicas: Must be greater than or equal to 2"},
		{"autoscaling: {targetCPUUtilizationPercentage: 0}", "autoscaling.targetCPUUtilizationPercentage: Must be greater than or equal to 1"},
		{"autoscaling: {targetCPUUtilizationPercentage: 70%}", "autoscaling.targetCPUUtilizationPercentage: Invalid type"},
		{"autoscaling: {targetMemoryUtilizationPercentage: 2.5}", "autoscaling.targetMemoryUtilizationPercentage: Invalid type"},
		{"autoscaling: {behavior: {scaledown: {}}}", "Additional property scaledown is not allowed"},
		{"autoscaling: {behavior: [scaleDown]}", "autoscaling.behavior: Invalid type"},
	} {
		mustFail(t, Options{Values: []map[string]interface{}{vals(t, bad.values)}}, bad.want)
	}
	for _, good := range []string{
		"autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 2}",
		"autoscaling: {enabled: true, targetCPUUtilizationPercentage: 150}",
		"autoscaling: {enabled: true, behavior: {scaleUp: {stabilizationWindowSeconds: 60}, scaleDown: {selectPolicy: Disabled}}}",
	} {
		checkHPA(t, renderValues(t, good))
	}
}

func secretLookup(secret obj) func(string, string, string, string) (map[string]interface{}, error) {
	return func(apiVersion, kind, ns, name string) (map[string]interface{}, error) {
		if apiVersion == "v1" && kind == "Secret" && ns == str(secret, "metadata", "namespace") && name == str(secret, "metadata", "name") {
			return deepCopyMap(secret), nil
		}
		return map[string]interface{}{}, nil
	}
}

func TestUpgradeKeepsTheCertificate(t *testing.T) {
	first := mustRender(t, Options{})
	secret := one(t, first, "Secret")
	old := stringMap(get(secret, "data"))

	up := mustRender(t, Options{IsUpgrade: true, Lookup: secretLookup(secret)})
	expectEq(t, "Secret data after upgrade", stringMap(get(one(t, up, "Secret"), "data")), old)
	bundles := checkWebhooks(t, up, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	checkGeneratedCertificates(t, up, "gpu-admission", testNamespace, bundles)
}

func TestRotateTrustsBothCAs(t *testing.T) {
	first := mustRender(t, Options{})
	secret := one(t, first, "Secret")
	old := stringMap(get(secret, "data"))
	oldCA := decodePEMCerts(t, "old ca.crt", old["ca.crt"])[0]

	rot := mustRender(t, Options{IsUpgrade: true, Lookup: secretLookup(secret), Values: []map[string]interface{}{vals(t, "certificates: {generate: {rotate: true}}")}})
	data := stringMap(get(one(t, rot, "Secret"), "data"))
	if data["ca.crt"] == old["ca.crt"] || data["tls.crt"] == old["tls.crt"] {
		t.Fatalf("rotate kept the old certificate")
	}
	newCA := decodePEMCerts(t, "new ca.crt", data["ca.crt"])
	checkServingCert(t, data, newCA, "gpu-admission", testNamespace)
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		bundle := decodePEMCerts(t, kind+" caBundle", str(one(t, rot, kind), "webhooks", 0, "clientConfig", "caBundle"))
		if len(bundle) != 2 || !bundle[0].Equal(newCA[0]) || !bundle[1].Equal(oldCA) {
			t.Errorf("%s caBundle during rotation: want the new CA then the old one, got %d certificates", kind, len(bundle))
		}
	}
	// The old serving certificate still verifies against the rotation bundle.
	roots := x509.NewCertPool()
	for _, c := range decodePEMCerts(t, "bundle", str(one(t, rot, "ValidatingWebhookConfiguration"), "webhooks", 0, "clientConfig", "caBundle")) {
		roots.AddCert(c)
	}
	oldLeaf := decodePEMCerts(t, "old tls.crt", old["tls.crt"])[0]
	if _, err := oldLeaf.Verify(x509.VerifyOptions{DNSName: "gpu-admission.gpu-admission.svc", Roots: roots}); err != nil {
		t.Errorf("old serving certificate fails against the rotation bundle: %v", err)
	}
}

func TestExternalMode(t *testing.T) {
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "certificates: {mode: external}")}}, "certificates.external.caBundle is required")
	res := renderValues(t, "certificates: {mode: external, external: {caBundle: Q0FCVU5ETEU=, secretName: my-tls}}")
	if len(all(res, "Secret")) != 0 || len(all(res, "Certificate")) != 0 {
		t.Errorf("external mode renders certificates")
	}
	for _, b := range checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5}) {
		expectEq(t, "caBundle", b, "Q0FCVU5ETEU=")
	}
	for _, v := range list(podSpec(t, res), "volumes") {
		if get(v, "secret") != nil {
			expectEq(t, "mounted Secret", str(v, "secret", "secretName"), "my-tls")
		}
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "certificates: {mode: vault}")}}, "certificates.mode")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "certificates: {mode: vault}")}, SkipSchema: true}, "certificates.mode must be")
}

func TestReleaseNameAndNamespace(t *testing.T) {
	res := mustRender(t, Options{ReleaseName: "acme", Namespace: "gpu-system", Values: []map[string]interface{}{vals(t, "webhooks: {excludedNamespaces: [cert-manager, kube-system]}")}})
	checkMetadata(t, res, "acme", "gpu-system")
	checkDeployment(t, res)
	bundles := checkWebhooks(t, res, webhookWant{namespace: "gpu-system", service: "acme-gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5, extraExcluded: []string{"cert-manager"}})
	checkGeneratedCertificates(t, res, "acme-gpu-admission", "gpu-system", bundles)
	if !strings.Contains(res.Notes, "kubectl delete validatingwebhookconfiguration/acme-gpu-admission mutatingwebhookconfiguration/acme-gpu-admission") {
		t.Errorf("NOTES.txt lacks the emergency removal command:\n%s", res.Notes)
	}

	res = mustRender(t, Options{ReleaseName: "gpu-admission-prod", Namespace: "ops"})
	expectEq(t, "Service name (release name contains the chart name)", str(one(t, res, "Service"), "metadata", "name"), "gpu-admission-prod")
	res = mustRender(t, Options{ReleaseName: "x", Namespace: "ops", Values: []map[string]interface{}{vals(t, "fullnameOverride: admission")}})
	bundles = checkWebhooks(t, res, webhookWant{namespace: "ops", service: "admission", validating: "Ignore", mutating: "Ignore", timeout: 5})
	checkGeneratedCertificates(t, res, "admission", "ops", bundles)
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
		expectEq(t, "rules with ML kinds", flattenRules(t, list(h, "rules")), want)
	}
	for _, h := range list(one(t, on, "MutatingWebhookConfiguration"), "webhooks") {
		expectEq(t, "mutating rules", flattenRules(t, list(h, "rules")), wantMutatingRules)
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, `webhooks: {validating: {extraKinds: [{name: x, apiGroup: a.io, apiVersions: ["*"], resources: [things]}]}}`)}}, "extraKinds")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, `webhooks: {validating: {extraKinds: [{name: x, apiGroup: a.io, resources: [things]}]}}`)}}, "apiVersions")
}

func TestPreStopByKubernetesVersion(t *testing.T) {
	res := mustRender(t, Options{KubeVersion: "v1.30.2-eks-1234"})
	expectEq(t, "sleep action", get(container(t, res), "lifecycle", "preStop", "sleep", "seconds"), float64(5))
	res = mustRender(t, Options{KubeVersion: "v1.29.0"})
	expectEq(t, "exec sleep", strs(container(t, res), "lifecycle", "preStop", "exec", "command"), []string{"/bin/sleep", "5"})
	res = renderValues(t, "preStopSleepSeconds: 0")
	if get(container(t, res), "lifecycle") != nil {
		t.Errorf("lifecycle set although preStopSleepSeconds is 0")
	}
	if g := num(t, podSpec(t, res), "terminationGracePeriodSeconds"); g < 10 {
		t.Errorf("terminationGracePeriodSeconds = %v", g)
	}
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

func TestNetworkPolicySources(t *testing.T) {
	res := renderValues(t, `networkPolicy:
  webhookFrom: [{ipBlock: {cidr: 10.0.0.0/16}}]
  metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
  denyEgress: false`)
	checkNetworkPolicy(t, res)
	np := one(t, res, "NetworkPolicy")
	expectEq(t, "webhook from", str(np, "spec", "ingress", 0, "from", 0, "ipBlock", "cidr"), "10.0.0.0/16")
	expectEq(t, "metrics from", str(np, "spec", "ingress", 1, "from", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"), "monitoring")
	expectEq(t, "policyTypes", strs(np, "spec", "policyTypes"), []string{"Ingress"})
	def := one(t, mustRender(t, Options{}), "NetworkPolicy")
	expectEq(t, "default policyTypes", strs(def, "spec", "policyTypes"), []string{"Ingress", "Egress"})
	// Default (cluster: auto): egress only to the API server's ports; with cluster: off, none.
	if e, ok := get(def, "spec", "egress").([]interface{}); !ok || len(e) != 1 || len(list(e[0], "to")) != 0 {
		t.Errorf("default egress = %v, want one rule for the API server", get(def, "spec", "egress"))
	}
	off := one(t, renderValues(t, "cluster: \"off\""), "NetworkPolicy")
	if e, ok := get(off, "spec", "egress").([]interface{}); !ok || len(e) != 0 {
		t.Errorf("egress with cluster off = %v, want []", get(off, "spec", "egress"))
	}
	to := one(t, renderValues(t, "networkPolicy: {apiServerTo: [{ipBlock: {cidr: 10.0.0.1/32}}]}"), "NetworkPolicy")
	expectEq(t, "apiServerTo", str(to, "spec", "egress", 0, "to", 0, "ipBlock", "cidr"), "10.0.0.1/32")
	if len(all(renderValues(t, "networkPolicy: {enabled: false}"), "NetworkPolicy")) != 0 {
		t.Errorf("NetworkPolicy rendered although disabled")
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
	if n := strings.Count(hooks, "caBundle: ${CA_BUNDLE}"); n != 2 {
		t.Errorf("deploy/webhooks.yaml has %d caBundle placeholders, want 2", n)
	}
	// With the placeholder filled in, the plain manifests pass the same checks as the chart.
	ca := mustRender(t, Options{})
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
	res := mustRender(t, Options{})
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
	expectEq(t, "pod automountServiceAccountToken", get(spec, "automountServiceAccountToken"), on)
	res = withoutHooks(res) // the pre-delete hook has a grant of its own (gpucluster_test.go)
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
