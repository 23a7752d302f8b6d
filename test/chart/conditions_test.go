// The validating webhook's matchConditions, case by case: each UPDATE of conditions_cases_test.go
// is evaluated with the rendered CEL expressions (by a real CEL engine: cel_test.go) and judged by
// the built binary (`gpu-admission check` on the AdmissionReview, the same decision phase as
// /validate). Every UPDATE the conditions leave out must be one the webhook allows; the table also
// pins which are sent and what the webhook says.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The request as the API server hands it to CEL: the AdmissionRequest converted to unstructured,
// so fields tagged omitempty (subResource, dryRun) are absent when empty.
func celRequest(c updateCase, withEmptySubResource bool) map[string]interface{} {
	op := "UPDATE"
	if c.old == "" {
		op = "CREATE"
	}
	gvrMap := map[string]interface{}{"group": c.r.group, "version": c.r.version, "resource": c.r.resource}
	req := map[string]interface{}{
		"uid": "case", "kind": map[string]interface{}{"group": c.r.group, "version": c.r.version, "kind": c.r.kind},
		"resource": gvrMap, "requestKind": map[string]interface{}{"group": c.r.group, "version": c.r.version, "kind": c.r.kind},
		"requestResource": gvrMap, "namespace": "research", "operation": op,
		"userInfo": map[string]interface{}{"username": "alice", "groups": []interface{}{"system:authenticated"}},
	}
	if c.sub != "" || withEmptySubResource {
		req["subResource"] = c.sub
		req["requestSubResource"] = c.sub
	}
	return req
}

func caseObjects(t *testing.T, c updateCase) (object, oldObject interface{}) {
	t.Helper()
	parse := func(text string) interface{} {
		var v interface{}
		if err := json.Unmarshal(yamlToJSON(text), &v); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return v
	}
	if c.old == "" {
		return parse(c.patch), nil
	}
	old := parse(c.old)
	return mergePatch(old, parse(c.patch)), old
}

type matchCondition struct{ name, expression string }

func validatingConditions(t *testing.T, res *Result) []matchCondition {
	t.Helper()
	var out []matchCondition
	for _, c := range list(webhookConfig(t, res, "ValidatingWebhookConfiguration"), "matchConditions") {
		out = append(out, matchCondition{str(c, "name"), str(c, "expression")})
	}
	return out
}

// sentBy evaluates every condition for each environment (one run of the CEL engine for all); the
// API server calls the webhook when all are true. A condition that does not evaluate to a bool
// (an error included) fails the test: the API server would follow failurePolicy instead.
func sentBy(t *testing.T, conds []matchCondition, envs []map[string]interface{}, whats []string) []bool {
	t.Helper()
	var jobs []celJob
	for _, env := range envs {
		for _, c := range conds {
			jobs = append(jobs, celJob{c.expression, env})
		}
	}
	results := evalCEL(t, jobs)
	sent := make([]bool, len(envs))
	for i := range envs {
		sent[i] = true
		for j, c := range conds {
			r := results[i*len(conds)+j]
			b, ok := r.Value.(bool)
			if r.Error != nil || !ok {
				why := "a non-bool"
				if r.Error != nil {
					why = "an error: " + *r.Error
				}
				t.Errorf("%s: matchCondition %s evaluates to %s", whats[i], c.name, why)
				continue
			}
			sent[i] = sent[i] && b
		}
	}
	return sent
}

// judge runs `gpu-admission check` on one AdmissionReview per case and returns each decision.
func judge(t *testing.T, policy string, reviews map[string]interface{}) map[string]string {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"check", "--policy", "policy.yaml", "-o", "json"}
	for file, review := range reviews {
		data, _ := json.Marshal(review)
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, file)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, _ := cmd.Output() // exit 1 (denied) and 2 (errors) are expected here
	var report struct {
		Results []struct {
			Source  string
			Allowed bool
		}
		Skipped, Errors []struct{ Source, Reason string }
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("gpu-admission check -o json: %v\n%s", err, out)
	}
	got := map[string]string{}
	file := func(source string) string { return strings.TrimSuffix(source, ":1") }
	for _, r := range report.Results {
		got[file(r.Source)] = map[bool]string{true: allowed, false: refused}[r.Allowed]
	}
	for _, s := range report.Skipped {
		got[file(s.Source)] = unjudged
	}
	for _, e := range report.Errors {
		if strings.Contains(e.Reason, "cannot judge pod") {
			got[file(e.Source)] = cannotJudge
		} else {
			got[file(e.Source)] = "error: " + e.Reason
		}
	}
	return got
}

func TestMatchConditionsSkipOnlyWhatTheWebhookAllows(t *testing.T) {
	res := mustRender(t, Options{})
	conds := validatingConditions(t, res)
	if len(conds) == 0 {
		t.Fatal("the validating webhook has no matchConditions by default")
	}
	reviews := map[string]interface{}{}
	sent := map[string]bool{}
	// Each case twice: without request.subResource and with it present but empty.
	var envs []map[string]interface{}
	var whats []string
	for i, c := range updateCases {
		object, oldObject := caseObjects(t, c)
		for _, empty := range []bool{false, true} {
			envs = append(envs, map[string]interface{}{"object": object, "oldObject": oldObject, "request": celRequest(c, empty)})
			whats = append(whats, c.name+map[bool]string{false: "", true: " (subResource present but empty)"}[empty])
		}
		req := celRequest(c, false)
		req["object"] = object
		if oldObject != nil {
			req["oldObject"] = oldObject
		}
		reviews[fmt.Sprintf("case%02d.json", i)] = map[string]interface{}{
			"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
	}
	results := sentBy(t, conds, envs, whats)
	for i, c := range updateCases {
		sent[c.name] = results[2*i]
		if again := results[2*i+1]; again != sent[c.name] {
			t.Errorf("%s: sent=%v without request.subResource, %v with it empty", c.name, sent[c.name], again)
		}
	}
	for _, c := range updateCases {
		if sent[c.name] != c.sent {
			t.Errorf("%s: the matchConditions %s it, want %s", c.name,
				map[bool]string{true: "send", false: "skip"}[sent[c.name]], map[bool]string{true: "sent", false: "skipped"}[c.sent])
		}
	}
	// What the webhook says needs the binary (binary() skips the rest without it).
	decisions := judge(t, renderedPolicy(t, res), reviews)

	var table []string
	for i, c := range updateCases {
		got := decisions[fmt.Sprintf("case%02d.json", i)]
		table = append(table, fmt.Sprintf("| %s | %s | %s |", c.name, map[bool]string{true: "sent", false: "skipped"}[sent[c.name]], got))
		if got != c.decision {
			t.Errorf("%s: the webhook says %q, want %q", c.name, got, c.decision)
		}
		if !sent[c.name] && got != allowed && got != unjudged {
			t.Errorf("%s: skipped by the matchConditions, but the webhook would say %q: it must never skip what the webhook refuses", c.name, got)
		}
	}
	t.Logf("case | matchConditions | webhook\n%s", strings.Join(table, "\n"))
}

// The conditions rely on what the webhook reads; these tie them to the sources that decide it.
func TestMatchConditionsFollowTheDecoders(t *testing.T) {
	src := func(rel string) string { return repoFile(t, rel) }
	keys := func(text, name string) []string {
		m := regexp.MustCompile(name + ` = keys\(([^)]*)\)`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s not found", name)
		}
		var out []string
		for _, k := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
			out = append(out, k[1])
		}
		return sorted(out...)
	}
	decoder := src("policy/decoding/pod_decoder.cpp")
	// A Pod is read from its apiVersion, metadata and spec only: status is never judged.
	expectEq(t, "pod decoder: top-level keys", keys(decoder, "kObjectKeys"), []string{"apiVersion", "metadata", "spec"})
	// Of the metadata, labels and annotations (compared by the pod condition) and the object's
	// name, namespace and generateName (the identity, named in messages only).
	expectEq(t, "pod decoder: metadata keys", keys(decoder, "kMetadataKeys"), []string{"annotations", "generateName", "labels", "name", "namespace"})

	// The built-in ML kinds: every template under spec, in the groups the condition names.
	rows := regexp.MustCompile(`\{"([^"]*)", "(\w+)",\s*\{([^}]*)\}\}`).FindAllStringSubmatch(src("policy/config/ml_kinds.cpp"), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d rows in policy/config/ml_kinds.cpp", len(rows))
	}
	groups := map[string]bool{}
	for _, row := range rows {
		for _, p := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(row[3], -1) {
			if row[1] == "" {
				expectEq(t, row[2]+" template path", p[1], "template") // podtemplate-update-changes-template
			} else if !strings.HasPrefix(p[1], "spec.") {
				t.Errorf("%s template path %s is not under spec", row[2], p[1])
			}
		}
		if row[1] != "" {
			groups[row[1]] = true
		}
	}
	var want []string
	for g := range groups {
		want = append(want, "'"+g+"'")
	}
	sort.Strings(want)
	var ml string
	for _, c := range validatingConditions(t, mustRender(t, Options{})) {
		if c.name == "ml-workload-update-changes-spec" {
			ml = c.expression
		}
	}
	m := regexp.MustCompile(`request\.resource\.group in \[([^\]]*)\]`).FindStringSubmatch(ml)
	if m == nil {
		t.Fatalf("ml-workload-update-changes-spec names no groups: %s", ml)
	}
	expectEq(t, "ML groups in the condition", sorted(strings.Split(m[1], ", ")...), want)
}

func TestMatchConditionAndObjectSelectorValues(t *testing.T) {
	names := func(res *Result, kind string) []string {
		var out []string
		for _, c := range list(webhookConfig(t, res, kind), "matchConditions") {
			out = append(out, str(c, "name"))
		}
		return out
	}
	chartOwn := names(mustRender(t, Options{}), "ValidatingWebhookConfiguration")
	expectEq(t, "the chart's conditions", chartOwn, []string{
		"pod-update-changes-labels-annotations-or-spec", "workload-update-changes-pod-template",
		"cronjob-update-changes-job-template", "podtemplate-update-changes-template", "ml-workload-update-changes-spec",
		"claim-update-changes-spec", "podgroup-update-changes-resource-claims", "claim-status-update-allocates"})
	for _, n := range chartOwn {
		if len(n) > 63 {
			t.Errorf("matchCondition name %s is longer than 63 characters", n)
		}
	}
	if n := names(mustRender(t, Options{}), "MutatingWebhookConfiguration"); n != nil {
		t.Errorf("the mutating webhook (pods CREATE only) has matchConditions by default: %v", n)
	}

	res := renderValues(t, `
webhooks:
  validating:
    matchConditions: [{name: not-kubelet, expression: "!('system:nodes' in request.userInfo.groups)"}]
    objectSelector: {matchExpressions: [{key: example.com/managed, operator: DoesNotExist}]}
  mutating:
    matchConditions: [{name: not-dry-run, expression: "!has(request.dryRun) || !request.dryRun"}]
    objectSelector: {matchLabels: {example.com/mutate: "yes"}}
`)
	expectEq(t, "user's validating condition comes after the chart's", names(res, "ValidatingWebhookConfiguration"), append(append([]string{}, chartOwn...), "not-kubelet"))
	expectEq(t, "user's mutating condition", names(res, "MutatingWebhookConfiguration"), []string{"not-dry-run"})
	expectEq(t, "validating objectSelector", str(webhookConfig(t, res, "ValidatingWebhookConfiguration"), "objectSelector", "matchExpressions", 0, "operator"), "DoesNotExist")
	expectEq(t, "mutating objectSelector", stringMap(get(webhookConfig(t, res, "MutatingWebhookConfiguration"), "objectSelector", "matchLabels")), map[string]string{"example.com/mutate": "yes"})
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Ignore", mutating: "Ignore", timeout: 5, objectSelector: true})

	off := renderValues(t, "webhooks: {validating: {skipUnjudgedUpdates: false}}")
	if get(webhookConfig(t, off, "ValidatingWebhookConfiguration"), "matchConditions") != nil {
		t.Errorf("skipUnjudgedUpdates=false still renders matchConditions")
	}
	// Before 1.28 the API server has no matchConditions (alpha, off): none are rendered.
	old := mustRender(t, Options{KubeVersion: "v1.27.9"})
	if get(webhookConfig(t, old, "ValidatingWebhookConfiguration"), "matchConditions") != nil {
		t.Errorf("matchConditions rendered for Kubernetes 1.27")
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "webhooks: {validating: {matchConditions: [{name: a}]}}")}}, "expression is required")
}

// A policy given as a value may not move pod templates where the conditions do not look.
func TestMatchConditionsRefuseAPolicyTheyCannotFollow(t *testing.T) {
	policy := func(workloads string) string {
		return "policy:\n  apiVersion: gpu-admission.io/v1alpha1\n  kind: GpuAdmissionPolicy\n  metadata: {name: p}\n  spec:\n    workloads: " + workloads + "\n"
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, policy(`[{apiVersion: apps/v1, kind: Deployment, templates: ["spec.template"]}]`))}},
		"policy spec.workloads[0] redefines apps/v1 Deployment")
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, policy(`[{apiVersion: example.com/v1, kind: Trainer, templates: ["spec.roles[*].template", "podTemplate"]}]`))}},
		"has a pod template outside spec (podTemplate)")
	// As text too, the way --set-file passes it.
	text := "policy: |\n  apiVersion: gpu-admission.io/v1alpha1\n  kind: GpuAdmissionPolicy\n  spec:\n    workloads:\n      - {apiVersion: v1, kind: PodTemplate, templates: [template]}\n"
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, text)}}, "redefines v1 PodTemplate")
	renderValues(t, policy(`[{apiVersion: example.com/v1, kind: Trainer, templates: ["spec.roles[*].template"]}]`))
	renderValues(t, policy(`[{apiVersion: apps/v1, kind: Deployment, templates: ["spec.template"]}]`)+"webhooks: {validating: {skipUnjudgedUpdates: false}}")
}

// docs/gpu-clusters.md shows the case table: it must be this one.
func TestCaseTableIsDocumented(t *testing.T) {
	doc := repoFile(t, "docs/gpu-clusters.md")
	var rows []string
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| ") && (strings.Contains(line, "| sent |") || strings.Contains(line, "| skipped |")) {
			rows = append(rows, line)
		}
	}
	var want []string
	for _, c := range updateCases {
		want = append(want, fmt.Sprintf("| %s | %s | %s |", c.name, map[bool]string{true: "sent", false: "skipped"}[c.sent], c.decision))
	}
	expectEq(t, "docs/gpu-clusters.md case table (copy it from `run.sh test BINARY -run MatchConditionsSkip -v`)", rows, want)
}
