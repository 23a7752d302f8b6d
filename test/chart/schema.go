// values.schema.json enforced before rendering: the draft-07 subset this chart uses; any other
// keyword is an error rather than silently ignored.
package main

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// validateSchema checks v against a draft-07 subset and appends "path: problem" lines.
func validateSchema(s map[string]interface{}, v interface{}, at string, problems *[]string) {
	where := at
	if where == "" {
		where = "(root)"
	}
	fail := func(format string, args ...interface{}) {
		*problems = append(*problems, where+": "+fmt.Sprintf(format, args...))
	}
	for k := range s {
		switch k {
		case "$schema", "title", "description", "default", "examples", "$comment",
			"type", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern",
			"properties", "additionalProperties", "items", "required", "minItems":
		default:
			fail("schema keyword %q is not supported by this renderer", k)
		}
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch tt := t.(type) {
		case string:
			types = []string{tt}
		case []interface{}:
			for _, x := range tt {
				types = append(types, x.(string))
			}
		}
		matched := false
		for _, ty := range types {
			if jsonTypeIs(v, ty) {
				matched = true
			}
		}
		if !matched {
			fail("Invalid type. Expected: %s, given: %s", strings.Join(types, " or "), jsonTypeOf(v))
			return
		}
	}
	if enum, ok := s["enum"].([]interface{}); ok {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) && jsonTypeOf(e) == jsonTypeOf(v) {
				found = true
			}
		}
		if !found {
			var allowed []string
			for _, e := range enum {
				allowed = append(allowed, fmt.Sprintf("%q", fmt.Sprint(e)))
			}
			fail("must be one of the following: %s", strings.Join(allowed, ", "))
		}
	}
	if n, ok := number(v); ok {
		if min, ok := s["minimum"].(float64); ok && n < min {
			fail("Must be greater than or equal to %v", min)
		}
		if max, ok := s["maximum"].(float64); ok && n > max {
			fail("Must be less than or equal to %v", max)
		}
	}
	if str, ok := v.(string); ok {
		if min, ok := s["minLength"].(float64); ok && float64(len([]rune(str))) < min {
			fail("String length must be greater than or equal to %v", min)
		}
		if max, ok := s["maxLength"].(float64); ok && float64(len([]rune(str))) > max {
			fail("String length must be less than or equal to %v", max)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			fail("Does not match pattern '%s'", p)
		}
	}
	if obj, ok := v.(map[string]interface{}); ok {
		props, _ := s["properties"].(map[string]interface{})
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				fail("%s is required", r)
			}
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := k
			if at != "" {
				child = at + "." + k
			}
			if ps, ok := props[k].(map[string]interface{}); ok {
				validateSchema(ps, obj[k], child, problems)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("Additional property %s is not allowed", k)
				}
			case map[string]interface{}:
				validateSchema(ap, obj[k], child, problems)
			}
		}
	}
	if arr, ok := v.([]interface{}); ok {
		if min, ok := s["minItems"].(float64); ok && float64(len(arr)) < min {
			fail("Array must have at least %v items", min)
		}
		if items, ok := s["items"].(map[string]interface{}); ok {
			for i, x := range arr {
				validateSchema(items, x, fmt.Sprintf("%s.%d", at, i), problems)
			}
		}
	}
}

func asList(v interface{}) []interface{} {
	l, _ := v.([]interface{})
	return l
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

func jsonTypeOf(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	}
	if n, ok := number(v); ok {
		if n == math.Trunc(n) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func jsonTypeIs(v interface{}, ty string) bool {
	got := jsonTypeOf(v)
	return got == ty || (ty == "number" && got == "integer")
}
