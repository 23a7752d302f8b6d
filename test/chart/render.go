// render.go renders a Helm chart the way `helm template` does, with the Go template engine and the
// sprig library only (both packaged by Debian), so the chart can be tested where helm cannot be
// installed. It follows Helm 3's engine (pkg/engine) and release tooling:
//
//   - Chart.yaml is read into a struct with Helm's field names (.Chart.Name, .Chart.AppVersion, ...);
//     values.yaml and override values are parsed with sigs.k8s.io/yaml (numbers become float64, as
//     in Helm) and coalesced like chartutil.CoalesceValues (maps merge, null deletes a default).
//   - values.schema.json, when present, is enforced before rendering (a draft-07 subset: the
//     keywords this chart uses; any other keyword is an error rather than silently ignored).
//   - Every file under templates/ is parsed into one template set named "<chart>/templates/<file>",
//     with sprig's TxtFuncMap minus env/expandenv, plus toYaml, fromYaml, fromYamlArray, toJson,
//     fromJson, fromJsonArray, include, tpl, required and lookup (no cluster: lookup answers from
//     Options.Lookup, an empty map by default, like `helm template`). missingkey=zero and
//     "<no value>" removal match Helm's non-strict mode.
//   - Files whose base name starts with "_" are partials; NOTES.txt is rendered (so errors in it
//     fail) but kept out of the manifests.
//   - The output is split into YAML documents like releaseutil.SplitManifests and sorted in Helm's
//     install order (kinds Helm does not know go last, alphabetically).
//
// Build and run it with Debian's Go packages in GOPATH mode (see run.sh).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	sprig "github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

// ChartMetadata mirrors helm's chart.Metadata: templates see these exact field names.
type ChartMetadata struct {
	Name         string              `json:"name"`
	Home         string              `json:"home,omitempty"`
	Sources      []string            `json:"sources,omitempty"`
	Version      string              `json:"version"`
	Description  string              `json:"description,omitempty"`
	Keywords     []string            `json:"keywords,omitempty"`
	Maintainers  []*Maintainer       `json:"maintainers,omitempty"`
	Icon         string              `json:"icon,omitempty"`
	APIVersion   string              `json:"apiVersion"`
	Condition    string              `json:"condition,omitempty"`
	Tags         string              `json:"tags,omitempty"`
	AppVersion   string              `json:"appVersion,omitempty"`
	Deprecated   bool                `json:"deprecated,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	KubeVersion  string              `json:"kubeVersion,omitempty"`
	Dependencies []map[string]string `json:"dependencies,omitempty"`
	Type         string              `json:"type,omitempty"`
}

// Maintainer mirrors helm's chart.Maintainer.
type Maintainer struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Chart is a chart loaded from a directory.
type Chart struct {
	Dir       string
	Metadata  *ChartMetadata
	Values    map[string]interface{}
	Schema    map[string]interface{} // nil when the chart has no values.schema.json
	Templates map[string]string      // "<chart>/templates/<file>" -> source
	Files     map[string][]byte      // other files, for .Files.Get
}

// KubeVersion mirrors helm's chartutil.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (kv *KubeVersion) String() string     { return kv.Version }
func (kv *KubeVersion) GitVersion() string { return kv.Version }

// VersionSet mirrors helm's chartutil.VersionSet.
type VersionSet []string

// Has reports whether apiVersion ("group/version" or "group/version/Kind") is served.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// Capabilities mirrors helm's chartutil.Capabilities.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

// Files mirrors the parts of helm's engine.files a chart commonly uses.
type Files map[string][]byte

// Get returns a file's content as a string ("" when missing).
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's content.
func (f Files) GetBytes(name string) []byte { return f[name] }

// DefaultKubeVersion is what `helm template` assumes without --kube-version (Helm 3.16 is built
// against Kubernetes 1.31 client libraries).
const DefaultKubeVersion = "v1.31.0"

// defaultAPIVersions are the built-in group/versions of a current Kubernetes release.
var defaultAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "autoscaling/v1", "autoscaling/v2",
	"admissionregistration.k8s.io/v1", "networking.k8s.io/v1", "rbac.authorization.k8s.io/v1",
	"apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1", "coordination.k8s.io/v1",
	"discovery.k8s.io/v1", "events.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
	"node.k8s.io/v1", "certificates.k8s.io/v1", "authentication.k8s.io/v1",
	"authorization.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1",
}

// Options are the `helm template` flags the tests need.
type Options struct {
	ReleaseName    string
	Namespace      string
	IsUpgrade      bool
	ReleaseService string                   // .Release.Service; "Helm" when empty
	Values         []map[string]interface{} // override layers, later ones win (like repeated -f)
	KubeVersion    string                   // default DefaultKubeVersion
	APIVersions    []string                 // extra --api-versions
	SkipSchema     bool                     // like helm --skip-schema-validation
	// Lookup answers the lookup function; nil answers an empty map like `helm template`.
	Lookup func(apiVersion, kind, namespace, name string) (map[string]interface{}, error)
}

// Manifest is one rendered YAML document.
type Manifest struct {
	Source  string // template path, e.g. gpu-admission/templates/deployment.yaml
	Content string // the document text, without the leading "---"
	Object  map[string]interface{}
}

// Kind returns the object's kind.
func (m Manifest) Kind() string { s, _ := m.Object["kind"].(string); return s }

// Name returns the object's metadata.name.
func (m Manifest) Name() string {
	md, _ := m.Object["metadata"].(map[string]interface{})
	s, _ := md["name"].(string)
	return s
}

// Result is a rendered chart.
type Result struct {
	Manifests []Manifest
	Notes     string
	Values    map[string]interface{} // the coalesced values the templates saw
}

// Render renders the chart like `helm template` (or `helm install --dry-run` when a Lookup is set).
func Render(c *Chart, opts Options) (*Result, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = "release-name"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.ReleaseService == "" {
		opts.ReleaseService = "Helm"
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion
	}
	kv, err := semver.NewVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
	}
	if c.Metadata.KubeVersion != "" {
		constraint, err := semver.NewConstraint(c.Metadata.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("Chart.yaml kubeVersion: %w", err)
		}
		if !constraint.Check(kv) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, opts.KubeVersion)
		}
	}
	if len(c.Metadata.Dependencies) > 0 {
		return nil, errors.New("chart dependencies are not supported by this renderer")
	}

	user := map[string]interface{}{}
	for _, layer := range opts.Values {
		user = MergeValues(user, deepCopyMap(layer))
	}
	vals := coalesce(user, c.Values)
	if c.Schema != nil && !opts.SkipSchema {
		var problems []string
		validateSchema(c.Schema, vals, "", &problems)
		if len(problems) > 0 {
			return nil, fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n- %s",
				c.Metadata.Name, strings.Join(problems, "\n- "))
		}
	}

	caps := &Capabilities{
		KubeVersion: KubeVersion{Version: "v" + kv.String(), Major: strconv.FormatUint(kv.Major(), 10), Minor: strconv.FormatUint(kv.Minor(), 10)},
		APIVersions: append(append(VersionSet{}, defaultAPIVersions...), opts.APIVersions...),
		HelmVersion: map[string]string{"version": "v3.16.0"},
	}
	top := map[string]interface{}{
		"Values": vals,
		"Release": map[string]interface{}{
			"Name":      opts.ReleaseName,
			"Namespace": opts.Namespace,
			"IsUpgrade": opts.IsUpgrade,
			"IsInstall": !opts.IsUpgrade,
			"Revision":  map[bool]int{false: 1, true: 2}[opts.IsUpgrade],
			"Service":   opts.ReleaseService,
		},
		"Chart":        c.Metadata,
		"Capabilities": caps,
		"Files":        Files(c.Files),
		"Subcharts":    map[string]interface{}{},
	}

	rendered, err := renderTemplates(c, top, opts)
	if err != nil {
		return nil, err
	}

	res := &Result{Values: vals}
	var names []string
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out := rendered[name]
		if path.Base(name) == "NOTES.txt" {
			if name == path.Join(c.Metadata.Name, "templates", "NOTES.txt") {
				res.Notes = out
			}
			continue
		}
		if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" {
			continue
		}
		docs, err := SplitManifests(name, out)
		if err != nil {
			return nil, err
		}
		res.Manifests = append(res.Manifests, docs...)
	}
	sortByKind(res.Manifests)
	return res, nil
}

const recursionMax = 1000

func renderTemplates(c *Chart, top map[string]interface{}, opts Options) (map[string]string, error) {
	t := template.New("gotpl")
	t.Option("missingkey=zero")

	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	included := map[string]int{}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["fromYamlArray"] = fromYAMLArray
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["fromJsonArray"] = fromJSONArray
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if included[name] > recursionMax {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		included[name]++
		defer func() { included[name]-- }()
		var buf strings.Builder
		err := t.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, vals map[string]interface{}) (string, error) {
		clone, err := t.Clone()
		if err != nil {
			return "", err
		}
		name := "tpl"
		if tm, ok := vals["Template"].(map[string]interface{}); ok {
			if n, ok := tm["Name"].(string); ok {
				name = n + "#tpl"
			}
		}
		tt, err := clone.New(name).Parse(text)
		if err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
		}
		var buf strings.Builder
		if err := tt.Execute(&buf, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, val interface{}) (interface{}, error) {
		if val == nil {
			return val, errors.New(msg)
		}
		if s, ok := val.(string); ok && s == "" {
			return val, errors.New(msg)
		}
		return val, nil
	}
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		if opts.Lookup == nil {
			return map[string]interface{}{}, nil
		}
		obj, err := opts.Lookup(apiVersion, kind, namespace, name)
		if obj == nil && err == nil {
			obj = map[string]interface{}{}
		}
		return obj, err
	}
	t.Funcs(funcs)

	// Helm parses parents before nested files, then alphabetically.
	var names []string
	for name := range c.Templates {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		ci, cj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if ci != cj {
			return ci < cj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		if _, err := t.New(name).Parse(c.Templates[name]); err != nil {
			return nil, fmt.Errorf("parse error in %s: %w", name, err)
		}
	}
	out := map[string]string{}
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		top["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Join(c.Metadata.Name, "templates")}
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, name, top); err != nil {
			return nil, fmt.Errorf("execution error in %s: %w", name, err)
		}
		out[name] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	a := []interface{}{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	a := []interface{}{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

var sep = regexp.MustCompile("(?:^|\\s*\n)---\\s*")

// SplitManifests splits one template's output into YAML documents like releaseutil.SplitManifests,
// and parses each strictly (duplicate keys are errors, as they are for the API server).
func SplitManifests(source, out string) ([]Manifest, error) {
	var res []Manifest
	for _, doc := range sep.Split(out, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj := map[string]interface{}{}
		if err := yaml.UnmarshalStrict([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %w\n%s", source, err, doc)
		}
		if len(obj) == 0 {
			return nil, fmt.Errorf("%s renders a document with no object (only comments?):\n%s", source, doc)
		}
		for _, k := range []string{"apiVersion", "kind"} {
			if s, _ := obj[k].(string); s == "" {
				return nil, fmt.Errorf("%s: a document has no %s:\n%s", source, k, doc)
			}
		}
		m := Manifest{Source: source, Content: strings.TrimSpace(doc), Object: obj}
		if m.Name() == "" {
			return nil, fmt.Errorf("%s: a %s has no metadata.name", source, m.Kind())
		}
		res = append(res, m)
	}
	return res, nil
}

// installOrder is helm's releaseutil.InstallOrder.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

func sortByKind(ms []Manifest) {
	order := map[string]int{}
	for i, k := range installOrder {
		order[k] = i
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		oa, aok := order[a.Kind()]
		ob, bok := order[b.Kind()]
		switch {
		case aok && bok && oa != ob:
			return oa < ob
		case aok != bok:
			return aok
		case !aok && a.Kind() != b.Kind():
			return a.Kind() < b.Kind()
		}
		return a.Name() < b.Name()
	})
}

// Format prints manifests like `helm template`.
func Format(ms []Manifest) string {
	var b bytes.Buffer
	for _, m := range ms {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Source, m.Content)
	}
	return b.String()
}
