// Loading a chart (Chart.yaml, values.yaml, values.schema.json, templates/ and files) and its
// values: parsed like Helm, coalesced like chartutil.CoalesceValues, --set expressions applied.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/Masterminds/semver"
	"sigs.k8s.io/yaml"
)

// LoadChart reads a chart directory (Chart.yaml, values.yaml, values.schema.json, templates/).
func LoadChart(dir string) (*Chart, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	md := &ChartMetadata{}
	// Strict: a misspelled Chart.yaml field is a chart bug even where helm tolerates it.
	if err := yaml.UnmarshalStrict(raw, md); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	if md.APIVersion != "v2" {
		return nil, fmt.Errorf("Chart.yaml: apiVersion must be v2, got %q", md.APIVersion)
	}
	if md.Name == "" {
		return nil, errors.New("Chart.yaml: name is required")
	}
	if _, err := semver.StrictNewVersion(md.Version); err != nil {
		return nil, fmt.Errorf("Chart.yaml: version %q is not SemVer 2: %w", md.Version, err)
	}
	if md.Type != "" && md.Type != "application" && md.Type != "library" {
		return nil, fmt.Errorf("Chart.yaml: unknown chart type %q", md.Type)
	}
	c := &Chart{Dir: dir, Metadata: md, Templates: map[string]string{}, Files: map[string][]byte{}}

	c.Values = map[string]interface{}{}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &c.Values); err != nil {
			return nil, fmt.Errorf("values.yaml: %w", err)
		}
		if c.Values == nil {
			c.Values = map[string]interface{}{}
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		if err := json.Unmarshal(raw, &c.Schema); err != nil {
			return nil, fmt.Errorf("values.schema.json: %w", err)
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}

	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			return nil
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			c.Templates[path.Join(md.Name, rel)] = string(data)
		case strings.HasPrefix(rel, "charts/"):
			return fmt.Errorf("%s: subcharts are not supported by this renderer", rel)
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json" || rel == "Chart.lock":
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			c.Files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ParseValues parses a values document the way helm reads -f files.
func ParseValues(data []byte) (map[string]interface{}, error) {
	v := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]interface{}{}
	}
	return v, nil
}

// MergeValues merges override layers like helm's -f handling: maps merge, later values win.
func MergeValues(dst, src map[string]interface{}) map[string]interface{} {
	if dst == nil {
		dst = map[string]interface{}{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = MergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// coalesce merges chart defaults into user values like chartutil.CoalesceTables: user values win,
// maps merge recursively and a user null deletes the default.
func coalesce(user, defaults map[string]interface{}) map[string]interface{} {
	out := deepCopyMap(user)
	for k, dv := range defaults {
		uv, present := out[k]
		switch {
		case !present:
			out[k] = deepCopy(dv)
		case uv == nil:
			delete(out, k)
		default:
			um, uok := uv.(map[string]interface{})
			dm, dok := dv.(map[string]interface{})
			if uok && dok {
				out[k] = coalesce(um, dm)
			}
		}
	}
	// A null with no default to delete is dropped as well.
	for k, v := range out {
		if v == nil {
			delete(out, k)
		}
	}
	return out
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		return deepCopyMap(t)
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

func deepCopyMap(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

// ParseSet applies one --set expression (a.b.c=value; value may be true/false/null, an integer,
// or {x,y} for a list) to vals, following helm's strvals for those forms.
func ParseSet(vals map[string]interface{}, expr string) error {
	eq := strings.Index(expr, "=")
	if eq <= 0 {
		return fmt.Errorf("--set %q: want key=value", expr)
	}
	keys := strings.Split(expr[:eq], ".")
	raw := expr[eq+1:]
	var val interface{}
	switch {
	case raw == "true":
		val = true
	case raw == "false":
		val = false
	case raw == "null":
		val = nil
	case strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}"):
		items := []interface{}{}
		if inner := raw[1 : len(raw)-1]; inner != "" {
			for _, s := range strings.Split(inner, ",") {
				items = append(items, s)
			}
		}
		val = items
	default:
		if i, err := strconv.ParseInt(raw, 10, 64); err == nil && !(len(raw) > 1 && raw[0] == '0') {
			val = i
		} else {
			val = raw
		}
	}
	m := vals
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = val
	return nil
}
