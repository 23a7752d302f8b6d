// Command chart renders charts/gpu-admission like `helm template` (see render.go) and regenerates
// the plain manifests under deploy/.
//
//	./run.sh template [-f values.yaml]... [--set key=value]... [--name NAME] [--namespace NS]
//	                  [--kube-version v1.31.0] [--api-versions cert-manager.io/v1]...
//	                  [--show-kind Kind]... [--skip-kind Kind]...
//	./run.sh deploy   # rewrites deploy/gpu-admission.yaml, policy-configmap.yaml and webhooks.yaml
//	./run.sh backstop BINARY   # rewrites charts/gpu-admission/files/backstop.yaml (backstop.go)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// sourceDir is the directory of this file: the chart and deploy/ are found relative to it.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func defaultChartDir() string {
	return filepath.Join(sourceDir(), "..", "..", "charts", "gpu-admission")
}
func defaultDeployDir() string { return filepath.Join(sourceDir(), "..", "..", "deploy") }

// Plain manifests: namespace and Service gpu-admission, a TLS Secret created by deploy/install.sh,
// and webhook configurations whose caBundle install.sh fills in. The webhook configurations are a
// separate file so install.sh registers them only once the webhook is ready.
const (
	deployNamespace = "gpu-admission"
	deployRelease   = "gpu-admission"
)

var webhookKinds = map[string]bool{"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true}

// isHook says whether a manifest is a Helm hook (helm.sh/hook annotation).
func isHook(m Manifest) bool {
	md, _ := m.Object["metadata"].(map[string]interface{})
	annotations, _ := md["annotations"].(map[string]interface{})
	_, ok := annotations["helm.sh/hook"]
	return ok
}

// DeployFiles renders the files under deploy/ that are generated from the chart.
func DeployFiles(chartDir string) (map[string]string, error) {
	c, err := LoadChart(chartDir)
	if err != nil {
		return nil, err
	}
	res, err := Render(c, Options{
		ReleaseName:    deployRelease,
		Namespace:      deployNamespace,
		ReleaseService: "kubectl",
		Values: []map[string]interface{}{{
			"certificates": map[string]interface{}{
				"mode":     "external",
				"external": map[string]interface{}{"caBundle": "${CA_BUNDLE}"},
			},
		}},
	})
	if err != nil {
		return nil, err
	}
	var workload, policy, webhooks []Manifest
	for _, m := range res.Manifests {
		switch {
		case isHook(m):
			// Helm hooks run at install or uninstall time; kubectl apply would run them at once.
		case webhookKinds[m.Kind()]:
			webhooks = append(webhooks, m)
		case m.Kind() == "ConfigMap":
			policy = append(policy, m)
		default:
			workload = append(workload, m)
		}
	}
	header := "# Generated from charts/gpu-admission by `test/chart/run.sh deploy` (the chart's defaults,\n" +
		"# certificates.mode=external). Do not edit: change the chart and regenerate; the chart test fails\n" +
		"# when this file is stale. Install with deploy/install.sh (docs/deployment.md).\n"
	return map[string]string{
		"gpu-admission.yaml": header + "# The webhook itself: apply after creating the " + deployRelease + "-tls Secret and the policy.\n" + Format(workload),
		"policy-configmap.yaml": header + "# The built-in default policy. install.sh applies it only when the ConfigMap does not exist\n" +
			"# yet, so re-running install.sh never resets a policy you changed.\n" + Format(policy),
		"webhooks.yaml": header + "# The registrations: apply once the webhook is ready, after replacing ${CA_BUNDLE}\n" +
			"# with the base64 PEM CA bundle.\n" + Format(webhooks),
	}, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chart template [flags] | chart deploy [--out DIR]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "template":
		os.Exit(runTemplate(os.Args[2:]))
	case "backstop":
		os.Exit(runBackstop(os.Args[2:]))
	case "deploy":
		fs := flag.NewFlagSet("deploy", flag.ExitOnError)
		chartDir := fs.String("chart", defaultChartDir(), "chart directory")
		out := fs.String("out", defaultDeployDir(), "output directory")
		fs.Parse(os.Args[2:])
		files, err := DeployFiles(*chartDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		for name, content := range files {
			p := filepath.Join(*out, name)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "Error:", err)
				os.Exit(1)
			}
			fmt.Println("wrote", p)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func runTemplate(args []string) int {
	fs := flag.NewFlagSet("template", flag.ExitOnError)
	chartDir := fs.String("chart", defaultChartDir(), "chart directory")
	name := fs.String("name", "gpu-admission", "release name")
	ns := fs.String("namespace", "gpu-admission", "release namespace")
	kube := fs.String("kube-version", DefaultKubeVersion, "Kubernetes version for .Capabilities")
	skipSchema := fs.Bool("skip-schema-validation", false, "do not enforce values.schema.json")
	var files, sets, apis, show, skip listFlag
	fs.Var(&files, "f", "values file (repeatable)")
	fs.Var(&sets, "set", "key=value (repeatable)")
	fs.Var(&apis, "api-versions", "extra API version for .Capabilities.APIVersions (repeatable)")
	fs.Var(&show, "show-kind", "only print objects of this kind (repeatable)")
	fs.Var(&skip, "skip-kind", "do not print objects of this kind (repeatable)")
	fs.Parse(args)

	c, err := LoadChart(*chartDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	opts := Options{ReleaseName: *name, Namespace: *ns, KubeVersion: *kube, APIVersions: apis, SkipSchema: *skipSchema}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			return 1
		}
		v, err := ParseValues(raw)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %s: %v\n", f, err)
			return 1
		}
		opts.Values = append(opts.Values, v)
	}
	if len(sets) > 0 {
		v := map[string]interface{}{}
		for _, s := range sets {
			if err := ParseSet(v, s); err != nil {
				fmt.Fprintln(os.Stderr, "Error:", err)
				return 1
			}
		}
		opts.Values = append(opts.Values, v)
	}
	res, err := Render(c, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	in := func(l listFlag, s string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	var out []Manifest
	for _, m := range res.Manifests {
		if (len(show) > 0 && !in(show, m.Kind())) || in(skip, m.Kind()) {
			continue
		}
		out = append(out, m)
	}
	fmt.Print(Format(out))
	return 0
}
