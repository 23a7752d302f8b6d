// CEL for the chart's tests, evaluated by a real engine rather than one written here: @bufbuild/cel,
// a conformance-tested CEL implementation, which test/vap/install.sh installs (pinned by
// test/vap/package-lock.json) and test/vap/cel_eval.mjs runs under node. run.sh installs it and
// passes its folder as GPU_ADMISSION_CEL_MODULES (CTest: the build tree's cel-harness). Where it
// cannot be installed the CEL tests are skipped, and in CI (CI=true) they fail instead.
package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type celJob struct {
	Expression string                 `json:"expression"`
	Env        map[string]interface{} `json:"env"`
}

type celResult struct {
	Value interface{} `json:"value"`
	Error *string     `json:"error"`
}

// celModules is the folder holding the engine, or skips (fails in CI) when there is none.
func celModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GPU_ADMISSION_CEL_MODULES")
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@bufbuild", "cel", "package.json")); err == nil {
			return dir
		}
	}
	msg := "the CEL engine (@bufbuild/cel) is not installed: run test/chart/run.sh test, which installs it " +
		"(test/vap/install.sh; it needs node and npm), or set GPU_ADMISSION_CEL_MODULES"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIP: " + msg)
	return ""
}

// evalCEL evaluates every job with the engine, in one run of node.
func evalCEL(t *testing.T, jobs []celJob) []celResult {
	t.Helper()
	dir := celModules(t)
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(sourceDir(), "..", "vap", "cel_eval.mjs"), "--modules", dir)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cel_eval.mjs: %v\n%s", err, stderr.String())
	}
	var results []celResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(jobs) {
		t.Fatalf("cel_eval.mjs gave %d results for %d jobs (%v): %s", len(results), len(jobs), err, out)
	}
	return results
}

// What the chart's conditions rely on, as the engine evaluates it (CEL's semantics: errors are
// values that && and || absorb when the other side decides; has() tests a key's presence).
func TestCELEngine(t *testing.T) {
	env := map[string]interface{}{
		"m": map[string]interface{}{"a": map[string]interface{}{"b": "x"}, "n": 1, "l": []interface{}{"p", "q"}},
	}
	cases := []struct {
		expr string
		want interface{} // a value, or "error"
	}{
		{"m.a.b == 'x'", true},
		{`m.a.b == "x"`, true},
		{"m.missing", "error"},
		{"has(m.missing)", false},
		{"has(m.a.b)", true},
		{"false && m.missing", false},
		{"m.missing && false", false},
		{"true || m.missing", true},
		{"m.missing || true", true},
		{"true && m.missing", "error"},
		{"m.n == 1", true},
		{"m.n == '1'", false},
		{"m.l == ['p', 'q']", true},
		{"m.l != ['q', 'p']", true},
		{"{} == {}", true},
		{"'q' in m.l", true},
		{"'b' in m.a", true},
		{"true ? 'a' : m.missing", "a"},
		{"true || false && false", true},
		{"has(m.a) && has(m.a.b) ? m.a.b : {}", "x"},
	}
	var jobs []celJob
	for _, c := range cases {
		jobs = append(jobs, celJob{c.expr, env})
	}
	for i, r := range evalCEL(t, jobs) {
		c := cases[i]
		if c.want == "error" {
			if r.Error == nil {
				t.Errorf("%s = %v, want an error", c.expr, r.Value)
			}
			continue
		}
		if r.Error != nil {
			t.Errorf("%s: error %s, want %v", c.expr, *r.Error, c.want)
		} else if g, _ := json.Marshal(r.Value); string(g) != mustJSON(c.want) {
			t.Errorf("%s = %s, want %v", c.expr, g, c.want)
		}
	}
}

func mustJSON(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}
