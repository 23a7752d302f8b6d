// A small PromQL scanner for the monitoring tests: it finds the metric names an expression
// selects, their label matchers, whether they are read as range vectors, and the functions and
// aggregations around them, so a test can check every name against what the binaries export and
// the way each is used against its type (rate() of a counter, _bucket of a histogram under
// histogram_quantile, no rate() of a gauge).
package main

import (
	"fmt"
	"strings"
	"testing"
)

type metricUse struct {
	Name     string   // as written: gpu_admission_request_duration_seconds_bucket
	Matchers string   // the text between the braces, "" without
	Range    bool     // followed by [range]
	Funcs    []string // the calls and aggregations around it, outermost first
}

var (
	promqlAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true,
		"stddev": true, "stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true,
		"quantile": true}
	promqlLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true}
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "atan2": true}
)

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// closing returns the index just past the bracket that closes the one at s[i], skipping strings.
func closing(s string, i int) (int, error) {
	open := s[i]
	close := map[byte]byte{'(': ')', '{': '}', '[': ']'}[open]
	depth := 0
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(s, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced %q at %d", open, i)
}

func skipString(s string, i int) (int, error) {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' && quote != '`' {
			j++
			continue
		}
		if s[j] == quote {
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at %d", i)
}

func nextNonSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// promqlMetrics lists the metric selectors of expr.
func promqlMetrics(expr string) ([]metricUse, error) {
	var uses []metricUse
	var stack []string // one entry per open parenthesis: the call it belongs to, "" for grouping
	pending := ""      // a function or aggregation whose parenthesis comes next
	last := -1         // index in uses of the selector just read, while a [range] may follow
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i, last = end, -1
		case c == '{':
			end, err := closing(expr, i)
			if err != nil {
				return nil, err
			}
			if last >= 0 && uses[last].Matchers == "" {
				uses[last].Matchers = expr[i+1 : end-1]
			} else {
				return nil, fmt.Errorf("a selector without a metric name at %d: %s", i, expr[i:end])
			}
			i = end
		case c == '[':
			end, err := closing(expr, i)
			if err != nil {
				return nil, err
			}
			if last >= 0 {
				uses[last].Range = true
			}
			i, last = end, -1
		case c == '(':
			stack = append(stack, pending)
			pending, last = "", -1
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ')' at %d", i)
			}
			stack = stack[:len(stack)-1]
			last = -1
			i++
		case c == '$': // a Grafana variable
			i++
			for i < len(expr) && isIdentChar(expr[i]) {
				i++
			}
			last = -1
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.' ||
				((expr[i] == '+' || expr[i] == '-') && (expr[i-1] == 'e' || expr[i-1] == 'E'))) {
				i++
			}
			last = -1
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdentChar(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := nextNonSpace(expr, i)
			lower := strings.ToLower(word)
			switch {
			case promqlLabelLists[lower]:
				if next < len(expr) && expr[next] == '(' {
					end, err := closing(expr, next)
					if err != nil {
						return nil, err
					}
					i = end
				}
			case promqlKeywords[lower]:
				if lower == "offset" { // and its duration
					i = nextNonSpace(expr, i)
					for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '-') {
						i++
					}
				}
			case next < len(expr) && expr[next] == '(' || promqlAggregations[lower]:
				pending = word
			default:
				var funcs []string
				for _, f := range stack {
					if f != "" {
						funcs = append(funcs, f)
					}
				}
				uses = append(uses, metricUse{Name: word, Funcs: funcs})
				last = len(uses) - 1
				continue
			}
			last = -1
		default:
			i++
			last = -1
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unbalanced '(' in %s", expr)
	}
	return uses, nil
}

var (
	counterRangeFuncs = map[string]bool{"rate": true, "irate": true, "increase": true}
	gaugeRangeFuncs   = map[string]bool{"delta": true, "idelta": true, "deriv": true, "predict_linear": true,
		"changes": true, "avg_over_time": true, "min_over_time": true, "max_over_time": true, "sum_over_time": true,
		"count_over_time": true, "last_over_time": true, "quantile_over_time": true, "stddev_over_time": true,
		"stdvar_over_time": true, "present_over_time": true, "absent_over_time": true, "resets": true}
)

// family resolves a name as written to the family that exports it and its type: a counter or
// gauge by its own name, a histogram's _bucket, _count and _sum by the histogram's.
func family(name string, types map[string]string) (fam, typ, part string) {
	if typ, ok := types[name]; ok {
		return name, typ, ""
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base := strings.TrimSuffix(name, suffix)
		if base != name && (types[base] == "histogram" || (types[base] == "summary" && suffix != "_bucket")) {
			return base, types[base], suffix
		}
	}
	return "", "", ""
}

// checkUse says what is wrong with reading u given the exported types, "" when nothing is.
func checkUse(u metricUse, types map[string]string) string {
	fam, typ, part := family(u.Name, types)
	if fam == "" {
		return fmt.Sprintf("%s is not exported", u.Name)
	}
	inner := ""
	if len(u.Funcs) > 0 {
		inner = u.Funcs[len(u.Funcs)-1]
	}
	has := func(f string) bool {
		for _, g := range u.Funcs {
			if g == f {
				return true
			}
		}
		return false
	}
	switch {
	case typ == "histogram" && part == "":
		return fmt.Sprintf("%s is a histogram: it has only _bucket, _count and _sum series", u.Name)
	case typ == "counter" || part != "":
		if !u.Range || !counterRangeFuncs[inner] {
			return fmt.Sprintf("%s is a %s%s: read it with rate(), irate() or increase() of a range", u.Name, typ, part)
		}
		if part == "_bucket" && !has("histogram_quantile") {
			return fmt.Sprintf("%s: histogram buckets belong under histogram_quantile()", u.Name)
		}
	default: // gauges, and untyped series such as up
		if counterRangeFuncs[inner] {
			return fmt.Sprintf("%s is a %s: %s() is for counters", u.Name, typ, inner)
		}
		if u.Range && !gaugeRangeFuncs[inner] {
			return fmt.Sprintf("%s is a %s read as a range by %q", u.Name, typ, inner)
		}
	}
	return ""
}

func TestPromQLScanner(t *testing.T) {
	uses, err := promqlMetrics(`histogram_quantile(0.99, sum by (le, endpoint) (rate(a_bucket{job="x", l=~"{y}"}[$__rate_interval])))` +
		` / on (pod) group_left (version) sum(b) by (c) + count(up{job="j"} == 1) or vector(0) and time() - c offset 5m`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(uses)
	want := `[{a_bucket job="x", l=~"{y}" true [histogram_quantile sum rate]} {b  false [sum]} {up job="j" false [count]} {c  false []}]`
	if got != want {
		t.Errorf("promqlMetrics:\n got %s\nwant %s", got, want)
	}
	types := map[string]string{"a": "histogram", "b_total": "counter", "g": "gauge"}
	for expr, want := range map[string]string{
		`histogram_quantile(0.9, sum by (le) (rate(a_bucket[5m])))`: "",
		`sum(rate(a_count[5m])) / sum(rate(a_sum[5m]))`:             "",
		`sum(increase(b_total[1h]))`:                                "",
		`max_over_time(g[1h]) - g`:                                  "",
		`sum(rate(a_bucket[5m]))`:                                   "belong under histogram_quantile",
		`a`:                                                         "only _bucket",
		`sum(b_total)`:                                              "read it with rate()",
		`rate(g[5m])`:                                               "is for counters",
		`nope`:                                                      "not exported",
	} {
		uses, err := promqlMetrics(expr)
		if err != nil {
			t.Fatal(err)
		}
		problem := ""
		for _, u := range uses {
			if p := checkUse(u, types); p != "" {
				problem = p
			}
		}
		if (want == "") != (problem == "") || !strings.Contains(problem, want) {
			t.Errorf("%s: problem %q, want one with %q", expr, problem, want)
		}
	}
}
