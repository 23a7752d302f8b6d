// NOTES.txt's probe says what the installed mode really shows: namespace default's mode is the
// policy's spec.enforcement under the chart's enforcement (the weaker applies), and the probe's
// expected answer is a denial under enforce, a warning under warn, and under audit (nothing shown
// to the user) the webhook's own log line. docs/deployment.md ("Check the installation") quotes the
// same answers, and test/webhook/server/test_serve_rollout_walk.cpp checks them against `serve`.
package main

import (
	"strings"
	"testing"
)

const (
	probeCommand = `kubectl run gpu-admission-probe --image=busybox --privileged --dry-run=server -n default -- true`
	probeDenied  = `Error from server (Forbidden): admission webhook "validate.gpu-admission.io" denied the request: [privileged] container "gpu-admission-probe" is privileged`
	probeWarned  = `Warning: [privileged] would deny: container "gpu-admission-probe" is privileged`
	probeLogs    = `logs -l app.kubernetes.io/name=gpu-admission,app.kubernetes.io/instance=gpu-admission --tail=-1 --since=5m | grep '"name":"gpu-admission-probe"'`
)

// A minimal valid policy whose spec.enforcement is `mode` ("" leaves it out).
func policyWithEnforcement(mode string) string {
	text := "policy: |\n  apiVersion: gpu-admission.io/v1alpha1\n  kind: GpuAdmissionPolicy\n  metadata: {name: probe}\n  spec:\n"
	if mode != "" {
		text += "    enforcement: " + mode + "\n"
	}
	return text + "    rules: {privileged: deny}\n"
}

func TestNotesProbeFollowsTheMode(t *testing.T) {
	cases := []struct {
		name, values string
		want         string // "audit", "warn" or "enforce": which answer NOTES.txt must give
	}{
		{"chart default (audit)", "", "audit"},
		{"enforcement warn", "enforcement: warn", "warn"},
		{"enforcement enforce", "enforcement: enforce", "enforce"},
		{"enforce, policy unset", "enforcement: enforce\n" + policyWithEnforcement(""), "enforce"},
		{"enforce, tenant by tenant (policy audit)", "enforcement: enforce\n" + policyWithEnforcement("audit"), "audit"},
		{"enforce, policy warn", "enforcement: enforce\n" + policyWithEnforcement("warn"), "warn"},
		{"warn, policy enforce (the cap wins)", "enforcement: warn\n" + policyWithEnforcement("enforce"), "warn"},
		{"audit, policy warn (the cap wins)", "enforcement: audit\n" + policyWithEnforcement("warn"), "audit"},
	}
	for _, c := range cases {
		res := renderValues(t, c.values)
		notes := res.Notes
		if !strings.Contains(notes, probeCommand) {
			t.Errorf("%s: NOTES.txt lacks the probe command:\n%s", c.name, notes)
		}
		answers := map[string]string{"enforce": probeDenied, "warn": probeWarned, "audit": probeLogs}
		for mode, answer := range answers {
			if got := strings.Contains(notes, answer); got != (mode == c.want) {
				t.Errorf("%s: NOTES.txt has the %s answer %q: %v, want %v:\n%s", c.name, mode, answer, got, mode == c.want, notes)
			}
		}
		if c.want == "audit" && !strings.Contains(notes, `"wouldDeny":true`) {
			t.Errorf("%s: NOTES.txt does not say what the probe's log line shows:\n%s", c.name, notes)
		}
	}
}

// The log command selects the webhook's pods by release, never the audit's.
func TestNotesProbeLogsOfThisRelease(t *testing.T) {
	res := mustRender(t, Options{ReleaseName: "acme", Namespace: "gpu-system",
		Values: []map[string]interface{}{vals(t, "audit: {enabled: true}")}})
	want := `kubectl -n gpu-system logs -l app.kubernetes.io/name=gpu-admission,app.kubernetes.io/instance=acme --tail=-1`
	if !strings.Contains(res.Notes, want) {
		t.Errorf("NOTES.txt lacks %q:\n%s", want, res.Notes)
	}
}
