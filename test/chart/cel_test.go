// A small evaluator for the subset of CEL (the Common Expression Language, cel-spec) that the
// chart's matchConditions use, so the test evaluates the rendered expressions themselves: Debian
// packages no Go CEL library. It follows the spec's semantics for what it accepts, and refuses
// everything else at parse time (a condition using more of CEL fails the test until this grows):
//
//	literals    'single' and "double" quoted strings (no escapes), integers, true, false, null,
//	            list literals [a, b], and the empty map {}
//	names       object, oldObject, request (bound by the caller)
//	selection   a.b (an error when a is not a map or has no key b), has(a.b) (key presence)
//	operators   ! && || == != in  and  c ? x : y, with CEL's precedence
//
// Errors are values, as in CEL: && and || are commutative and absorb an error when the other side
// decides (false && error is false, true || error is true); everything else propagates it.
// Equality is CEL's heterogeneous equality: values of different types are unequal (numbers compare
// by value), lists and maps compare element by element.
package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

type celError struct{ msg string }

func (e celError) Error() string { return e.msg }

type celNode interface {
	eval(env map[string]interface{}) interface{}
}

type (
	celLit    struct{ v interface{} }
	celIdent  struct{ name string }
	celSelect struct {
		operand celNode
		field   string
		test    bool // has()
	}
	celList  struct{ items []celNode }
	celUnary struct{ operand celNode } // !
	celBin   struct {
		op   string
		l, r celNode
	}
	celCond struct{ c, t, f celNode }
)

func isErr(v interface{}) bool { _, ok := v.(celError); return ok }

func (n celLit) eval(map[string]interface{}) interface{} { return n.v }

func (n celIdent) eval(env map[string]interface{}) interface{} {
	v, ok := env[n.name]
	if !ok {
		return celError{"undeclared reference to '" + n.name + "'"}
	}
	return v
}

func (n celSelect) eval(env map[string]interface{}) interface{} {
	v := n.operand.eval(env)
	if isErr(v) {
		return v
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return celError{fmt.Sprintf("no such key: %s (selecting from %T)", n.field, v)}
	}
	f, present := m[n.field]
	if n.test {
		return present
	}
	if !present {
		return celError{"no such key: " + n.field}
	}
	return f
}

func (n celList) eval(env map[string]interface{}) interface{} {
	out := []interface{}{}
	for _, it := range n.items {
		v := it.eval(env)
		if isErr(v) {
			return v
		}
		out = append(out, v)
	}
	return out
}

func (n celUnary) eval(env map[string]interface{}) interface{} {
	v := n.operand.eval(env)
	if b, ok := v.(bool); ok {
		return !b
	}
	if isErr(v) {
		return v
	}
	return celError{fmt.Sprintf("no matching overload for '!_' applied to %T", v)}
}

func (n celCond) eval(env map[string]interface{}) interface{} {
	c := n.c.eval(env)
	b, ok := c.(bool)
	if !ok {
		if isErr(c) {
			return c
		}
		return celError{fmt.Sprintf("no matching overload for '_?_:_' applied to %T", c)}
	}
	if b {
		return n.t.eval(env)
	}
	return n.f.eval(env)
}

func (n celBin) eval(env map[string]interface{}) interface{} {
	if n.op == "&&" || n.op == "||" {
		decides := n.op == "||" // the value that decides the result alone
		l, r := n.l.eval(env), n.r.eval(env)
		var firstErr interface{}
		for _, v := range []interface{}{l, r} {
			switch b := v.(type) {
			case bool:
				if b == decides {
					return decides
				}
			case celError:
				if firstErr == nil {
					firstErr = v
				}
			default:
				if firstErr == nil {
					firstErr = celError{fmt.Sprintf("no matching overload for '%s' applied to %T", n.op, v)}
				}
			}
		}
		if firstErr != nil {
			return firstErr
		}
		return !decides
	}
	l := n.l.eval(env)
	if isErr(l) {
		return l
	}
	r := n.r.eval(env)
	if isErr(r) {
		return r
	}
	switch n.op {
	case "==":
		return celEqual(l, r)
	case "!=":
		return !celEqual(l, r)
	case "in":
		switch c := r.(type) {
		case []interface{}:
			for _, x := range c {
				if celEqual(l, x) {
					return true
				}
			}
			return false
		case map[string]interface{}:
			k, ok := l.(string)
			_, present := c[k]
			return ok && present
		}
		return celError{fmt.Sprintf("no matching overload for '@in' applied to %T", r)}
	}
	return celError{"unknown operator " + n.op}
}

func celNumber(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func celEqual(a, b interface{}) bool {
	if x, ok := celNumber(a); ok {
		y, ok := celNumber(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool, string:
		return a == b
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !celEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, present := y[k]
			if !present || !celEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// ---- parsing ----

type celParser struct {
	toks []string
	pos  int
}

func celTokens(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(src[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			if strings.ContainsRune(src[i+1:i+1+j], '\\') {
				return nil, fmt.Errorf("string escapes are not supported by this evaluator (at %d)", i)
			}
			toks = append(toks, src[i:i+j+2])
			i += j + 2
		case c >= '0' && c <= '9', c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			two := ""
			if i+1 < len(src) {
				two = src[i : i+2]
			}
			switch two {
			case "&&", "||", "==", "!=":
				toks = append(toks, two)
				i += 2
				continue
			}
			if !strings.ContainsRune("!?:.,()[]{}", rune(c)) {
				return nil, fmt.Errorf("%q at %d is not supported by this evaluator", c, i)
			}
			toks = append(toks, string(c))
			i++
		}
	}
	return toks, nil
}

// parseCEL parses an expression of the subset above.
func parseCEL(src string) (celNode, error) {
	toks, err := celTokens(src)
	if err != nil {
		return nil, err
	}
	p := &celParser{toks: toks}
	n, err := p.expr()
	if err == nil && p.pos != len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return n, err
}

func (p *celParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *celParser) accept(tok string) bool {
	if p.peek() == tok {
		p.pos++
		return true
	}
	return false
}

func (p *celParser) expect(tok string) error {
	if !p.accept(tok) {
		return fmt.Errorf("want %q, got %q", tok, p.peek())
	}
	return nil
}

func (p *celParser) expr() (celNode, error) {
	c, err := p.binary(0)
	if err != nil || !p.accept("?") {
		return c, err
	}
	t, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	f, err := p.expr()
	if err != nil {
		return nil, err
	}
	return celCond{c, t, f}, nil
}

// Binary operators by precedence, loosest first (CEL: ||, &&, relations).
var celLevels = [][]string{{"||"}, {"&&"}, {"==", "!=", "in"}}

func (p *celParser) binary(level int) (celNode, error) {
	if level == len(celLevels) {
		return p.unary()
	}
	l, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		op := ""
		for _, o := range celLevels[level] {
			if p.peek() == o {
				op = o
			}
		}
		if op == "" {
			return l, nil
		}
		p.pos++
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		l = celBin{op, l, r}
	}
}

func (p *celParser) unary() (celNode, error) {
	if p.accept("!") {
		n, err := p.unary()
		return celUnary{n}, err
	}
	n, err := p.primary()
	for err == nil && p.accept(".") {
		field := p.peek()
		if !celIsIdent(field) {
			return nil, fmt.Errorf("want a field name after '.', got %q", field)
		}
		p.pos++
		if p.peek() == "(" {
			return nil, fmt.Errorf("method call .%s() is not supported by this evaluator", field)
		}
		n = celSelect{operand: n, field: field}
	}
	if err == nil && p.peek() == "[" {
		return nil, fmt.Errorf("indexing is not supported by this evaluator")
	}
	return n, err
}

func celIsIdent(s string) bool {
	return s != "" && (s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

func (p *celParser) primary() (celNode, error) {
	tok := p.peek()
	p.pos++
	switch {
	case tok == "(":
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		return n, p.expect(")")
	case tok == "[":
		var items []celNode
		for !p.accept("]") {
			if len(items) > 0 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			n, err := p.expr()
			if err != nil {
				return nil, err
			}
			items = append(items, n)
		}
		return celList{items}, nil
	case tok == "{":
		if err := p.expect("}"); err != nil {
			return nil, fmt.Errorf("only the empty map {} is supported by this evaluator: %v", err)
		}
		return celLit{map[string]interface{}{}}, nil
	case tok == "has":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		sel, ok := n.(celSelect)
		if !ok {
			return nil, fmt.Errorf("has() needs a field selection")
		}
		sel.test = true
		return sel, p.expect(")")
	case tok == "true", tok == "false":
		return celLit{tok == "true"}, nil
	case tok == "null":
		return celLit{nil}, nil
	case len(tok) > 1 && (tok[0] == '\'' || tok[0] == '"'):
		return celLit{tok[1 : len(tok)-1]}, nil
	case tok != "" && tok[0] >= '0' && tok[0] <= '9':
		i, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %q: %v", tok, err)
		}
		return celLit{i}, nil
	case celIsIdent(tok):
		if p.peek() == "(" {
			return nil, fmt.Errorf("function %s() is not supported by this evaluator", tok)
		}
		return celIdent{tok}, nil
	}
	return nil, fmt.Errorf("unexpected %q", tok)
}

// evalCEL parses and evaluates src; the result is a value or a celError.
func evalCEL(src string, env map[string]interface{}) (interface{}, error) {
	n, err := parseCEL(src)
	if err != nil {
		return nil, err
	}
	return n.eval(env), nil
}

// The evaluator against CEL's semantics, for what the conditions rely on.
func TestCELEvaluator(t *testing.T) {
	env := map[string]interface{}{
		"m":   map[string]interface{}{"a": map[string]interface{}{"b": "x"}, "n": float64(1), "l": []interface{}{"p", "q"}},
		"nul": nil,
	}
	for _, c := range []struct {
		expr string
		want interface{} // a value, or "error" for any celError
	}{
		{"m.a.b == 'x'", true},
		{`m.a.b == "x"`, true},
		{"m.missing", "error"},
		{"nul.a", "error"},
		{"has(m.missing)", false},
		{"has(m.a.b)", true},
		{"has(m.missing.b)", "error"},
		{"false && m.missing", false}, // && and || absorb an error the other side decides
		{"m.missing && false", false},
		{"true || m.missing", true},
		{"m.missing || true", true},
		{"true && m.missing", "error"},
		{"false || m.missing", "error"},
		{"!m.missing", "error"},
		{"m.n == 1", true}, // numbers compare by value across int and double
		{"m.n == '1'", false},
		{"m.l == ['p', 'q']", true},
		{"m.l != ['q', 'p']", true},
		{"m.a == {}", false},
		{"{} == {}", true},
		{"[] != {}", true},
		{"'q' in m.l", true},
		{"'b' in m.a", true},
		{"'b' in m.n", "error"},
		{"true ? 'a' : m.missing", "a"},
		{"m.missing ? 1 : 2", "error"},
		{"true || false && false", true}, // && binds tighter than ||
		{"!(true && false) || false", true},
		{"has(m.a) && has(m.a.b) ? m.a.b : {}", "x"},
	} {
		got, err := evalCEL(c.expr, env)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if c.want == "error" {
			if !isErr(got) {
				t.Errorf("%s = %v, want an error", c.expr, got)
			}
		} else if !celEqual(got, c.want) || isErr(got) {
			t.Errorf("%s = %v, want %v", c.expr, got, c.want)
		}
	}
	for _, bad := range []string{"m.l[0]", "size(m.l)", "m.l.all(x, x == 'p')", "1 + 2", "'a\\'b'", "{'a': 1}"} {
		if _, err := parseCEL(bad); err == nil {
			t.Errorf("%s parses: the evaluator must refuse what it does not implement", bad)
		}
	}
}
