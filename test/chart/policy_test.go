// Tests of the policy the chart ships in its ConfigMap: a custom policy passes through byte for
// byte and lints clean; a broken one is refused.
package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

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
