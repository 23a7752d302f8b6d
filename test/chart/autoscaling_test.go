// Tests of the chart's replica count and its optional HorizontalPodAutoscaler (autoscaling/v2,
// never below 2 replicas, a PodDisruptionBudget that lets drains through) and their refusals.
package main

import (
	"strings"
	"testing"
)

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
