// Tests of the chart's webhook Deployment and what surrounds it: Pod Security Standards
// "restricted", spread and probes, mounts, the PodDisruptionBudget, the Service, preStop and the
// NetworkPolicy.
package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

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

// checkDeployment checks the webhook Deployment: replicas (or the HPA owning them), rolling updates
// that keep every pod until its replacement is ready, spread, the container, its mounts, and the
// objects around it.
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
	checkSpread(t, spec, sel)

	c := container(t, res)
	checkRestricted(t, "webhook", spec, c)
	checkClusterState(t, res, spec, c)
	webhookPort := checkWebhookContainer(t, c)
	checkMounts(t, res, spec, c)
	checkAroundTheDeployment(t, res, d, spec, c, sel, webhookPort)
}

// checkSpread: topology spread across hostname and zone, plus preferred anti-affinity, over the
// Deployment's pods.
func checkSpread(t *testing.T, spec obj, sel map[string]string) {
	t.Helper()
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
}

// checkWebhookContainer: probes over HTTPS on the webhook port, the listen flags, resources.
// Returns the webhook port.
func checkWebhookContainer(t *testing.T, c obj) float64 {
	t.Helper()
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
	return webhookPort
}

// checkMounts: the policy ConfigMap and the TLS Secret are mounted as directories (updates
// propagate), and the flags name files in them.
func checkMounts(t *testing.T, res *Result, spec, c obj) {
	t.Helper()
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
	if selfManaged(c) {
		checkSelfManagedDeployment(t, res, c, tlsVol) // no Secret is mounted
	} else if policyVol == "" || tlsVol == "" {
		t.Fatalf("want a ConfigMap and a Secret volume, got %v", vols)
	}
	cm := one(t, res, "ConfigMap")
	expectEq(t, "policy volume ConfigMap", str(vols[policyVol], "configMap", "name"), str(cm, "metadata", "name"))
	policyArg := argValue(t, c, "--policy")
	if filepath.Dir(policyArg) != mounts[policyVol] || get(cm, "data", filepath.Base(policyArg)) == nil {
		t.Errorf("--policy %s is not a key of the ConfigMap mounted at %s", policyArg, mounts[policyVol])
	}
	for _, f := range []string{"--tls-cert", "--tls-key"} {
		if selfManaged(c) {
			break
		}
		if a := argValue(t, c, f); filepath.Dir(a) != mounts[tlsVol] {
			t.Errorf("%s %s is not in the Secret mounted at %s", f, a, mounts[tlsVol])
		}
	}
}

// checkAroundTheDeployment: its ServiceAccount, PodDisruptionBudget and Service.
func checkAroundTheDeployment(t *testing.T, res *Result, d, spec, c obj, sel map[string]string, webhookPort float64) {
	t.Helper()
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
		if argValue(t, c, "--cluster") == "off" && !selfManaged(c) {
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
	// Default (cluster: auto): egress only to the API server's ports; with cluster: off and
	// certificates not self-managed, none.
	if e, ok := get(def, "spec", "egress").([]interface{}); !ok || len(e) != 1 || len(list(e[0], "to")) != 0 {
		t.Errorf("default egress = %v, want one rule for the API server", get(def, "spec", "egress"))
	}
	off := one(t, renderValues(t, "cluster: \"off\"\ncertificates: {mode: generate}"), "NetworkPolicy")
	if e, ok := get(off, "spec", "egress").([]interface{}); !ok || len(e) != 0 {
		t.Errorf("egress with cluster off = %v, want []", get(off, "spec", "egress"))
	}
	to := one(t, renderValues(t, "networkPolicy: {apiServerTo: [{ipBlock: {cidr: 10.0.0.1/32}}]}"), "NetworkPolicy")
	expectEq(t, "apiServerTo", str(to, "spec", "egress", 0, "to", 0, "ipBlock", "cidr"), "10.0.0.1/32")
	if len(all(renderValues(t, "networkPolicy: {enabled: false}"), "NetworkPolicy")) != 0 {
		t.Errorf("NetworkPolicy rendered although disabled")
	}
}
