package main

// Self-managed certificates (certificates.mode: self-managed, the default) and the policy
// ConfigMap's own webhook (webhooks.policyConfigMap): what the chart renders for them, that the
// render holds no key material and is the same every time (GitOps), the RBAC limited by
// resourceNames, and the rendered ConfigMap reviewed by the real `gpu-admission serve`.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const policyWebhookName = "policy.gpu-admission.io"

// generateMode renders with certificates.mode: generate (the chart makes the certificate), for the
// tests of a rendered Secret.
func generateMode() Options {
	return Options{Values: []map[string]interface{}{{"certificates": map[string]interface{}{"mode": "generate"}}}}
}

// selfManaged: the container runs `serve --certs self-managed`.
func selfManaged(c obj) bool {
	args := strs(c, "args")
	for i, a := range args {
		if a == "--certs" && i+1 < len(args) {
			return args[i+1] == "self-managed"
		}
	}
	return false
}

// certsRBAC: a Role, ClusterRole or binding of self-managed certificates (named <fullname>-certs
// or <fullname>-ca-bundle).
func certsRBAC(m Manifest) bool {
	switch m.Kind() {
	case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
		return strings.HasSuffix(m.Name(), "-certs") || strings.HasSuffix(m.Name(), "-ca-bundle")
	}
	return false
}

func withoutCertsRBAC(res *Result) *Result {
	out := &Result{Notes: res.Notes, Values: res.Values}
	for _, m := range res.Manifests {
		if !certsRBAC(m) {
			out.Manifests = append(out.Manifests, m)
		}
	}
	return out
}

// checkSelfManagedDeployment: the flags of `serve --certs self-managed`, naming the Secret, the
// Service and the rendered webhook configurations; no certificate file nor Secret volume; the
// Secret's namespace from the downward API.
func checkSelfManagedDeployment(t *testing.T, res *Result, c obj, tlsVol string) {
	t.Helper()
	if tlsVol != "" {
		t.Errorf("self-managed certificates, but Secret volume %s is mounted", tlsVol)
	}
	for _, a := range strs(c, "args") {
		if a == "--tls-cert" || a == "--tls-key" {
			t.Errorf("self-managed certificates, but the container passes %s", a)
		}
	}
	fullname := str(one(t, res, "Service"), "metadata", "name")
	expectEq(t, "--service", argValue(t, c, "--service"), fullname)
	if s := argValue(t, c, "--certs-secret"); s == "" || strings.HasSuffix(s, "-tls") {
		t.Errorf("--certs-secret %q: want a Secret apart from the -tls one of the other modes", s)
	}
	for kind, flag := range map[string]string{
		"ValidatingWebhookConfiguration": "--validating-webhook-configuration",
		"MutatingWebhookConfiguration":   "--mutating-webhook-configuration",
	} {
		if cfgs := all(res, kind); len(cfgs) == 1 {
			expectEq(t, flag, argValue(t, c, flag), str(cfgs[0], "metadata", "name"))
		} else if strings.Contains(strings.Join(strs(c, "args"), " "), flag) {
			t.Errorf("%s passed although no %s is rendered", flag, kind)
		}
	}
	found := false
	for _, e := range list(c, "env") {
		if str(e, "name") == "POD_NAMESPACE" {
			found = true
			expectEq(t, "POD_NAMESPACE source", str(e, "valueFrom", "fieldRef", "fieldPath"), "metadata.namespace")
		}
	}
	if !found {
		t.Errorf("no POD_NAMESPACE env: serve cannot tell the Secret's namespace")
	}
}

// rbacRules flattens a Role's rules as "group/resource:verbs[names]".
func rbacRules(role obj) []string {
	var out []string
	for _, rule := range list(role, "rules") {
		verbs := strs(rule, "verbs")
		sort.Strings(verbs)
		for _, group := range strs(rule, "apiGroups") {
			for _, resource := range strs(rule, "resources") {
				out = append(out, fmt.Sprintf("%s/%s:%s%v", group, resource, strings.Join(verbs, ","), strs(rule, "resourceNames")))
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkSelfManaged: nothing secret rendered, no caBundle (the webhook writes it), and RBAC for the
// Secret and the two configurations limited by resourceNames, bound to the pod's ServiceAccount.
func checkSelfManaged(t *testing.T, res *Result, fullname, ns string, bundles []string) {
	t.Helper()
	if n := len(all(res, "Secret")) + len(all(res, "Certificate")); n != 0 {
		t.Errorf("self-managed mode renders %d Secrets or Certificates", n)
	}
	for _, m := range res.Manifests {
		for _, secret := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE", "caBundle:"} {
			if strings.Contains(m.Content, secret) {
				t.Errorf("%s/%s holds %q: self-managed renders no key material", m.Kind(), m.Name(), secret)
			}
		}
	}
	for _, b := range bundles {
		if b != "" {
			t.Errorf("a caBundle is rendered in self-managed mode")
		}
	}
	secret := argValue(t, container(t, res), "--certs-secret")
	sa := str(podSpec(t, res), "serviceAccountName")
	roles := map[string]obj{}
	for _, m := range res.Manifests {
		if certsRBAC(m) {
			roles[m.Kind()] = m.Object
		}
	}
	expectEq(t, "Role rules", rbacRules(roles["Role"]), []string{
		"/secrets:create[]", fmt.Sprintf("/secrets:get,update[%s]", secret)})
	expectEq(t, "Role namespace", str(roles["Role"], "metadata", "namespace"), ns)
	expectEq(t, "ClusterRole rules", rbacRules(roles["ClusterRole"]), []string{
		fmt.Sprintf("admissionregistration.k8s.io/mutatingwebhookconfigurations:get,update[%s]", fullname),
		fmt.Sprintf("admissionregistration.k8s.io/validatingwebhookconfigurations:get,update[%s]", fullname)})
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		b := roles[kind]
		expectEq(t, kind+" roleRef", str(b, "roleRef", "name"), str(roles[strings.TrimSuffix(kind, "Binding")], "metadata", "name"))
		expectEq(t, kind+" subject", str(b, "subjects", 0, "name"), sa)
		expectEq(t, kind+" subject namespace", str(b, "subjects", 0, "namespace"), ns)
	}
}

// checkPolicyWebhook: the policy ConfigMap's webhook sends only CREATE and UPDATE of the release
// namespace's ConfigMaps carrying the label the rendered ConfigMap carries, to /validate, and
// never blocks (Ignore) whatever the enforcement.
func checkPolicyWebhook(t *testing.T, res *Result, h interface{}, want webhookWant) {
	t.Helper()
	expectEq(t, "policy webhook failurePolicy", str(h, "failurePolicy"), "Ignore")
	expectEq(t, "policy webhook sideEffects", str(h, "sideEffects"), "None")
	expectEq(t, "policy webhook admissionReviewVersions", strs(h, "admissionReviewVersions"), []string{"v1"})
	expectEq(t, "policy webhook rules", flattenRules(t, list(h, "rules")), []string{"/v1/configmaps:CREATE", "/v1/configmaps:UPDATE"})
	expectEq(t, "policy webhook namespaceSelector", stringMap(get(h, "namespaceSelector", "matchLabels")),
		map[string]string{"kubernetes.io/metadata.name": want.namespace})
	selector := stringMap(get(h, "objectSelector", "matchLabels"))
	expectEq(t, "policy webhook objectSelector", selector, map[string]string{"gpu-admission.io/policy": "true"})
	cm := one(t, res, "ConfigMap")
	labels := stringMap(get(cm, "metadata", "labels"))
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("the policy ConfigMap lacks label %s=%s: its webhook would never see it", k, v)
		}
	}
	expectEq(t, "policy webhook path", str(h, "clientConfig", "service", "path"), "/validate")
	expectEq(t, "policy webhook service", str(h, "clientConfig", "service", "name"), want.service)
	expectEq(t, "policy webhook port", get(h, "clientConfig", "service", "port"), float64(443))
}

func TestSelfManagedRendersTheSameEveryTime(t *testing.T) {
	looked := 0
	lookup := func(string, string, string, string) (map[string]interface{}, error) {
		looked++
		return map[string]interface{}{}, nil
	}
	a := mustRender(t, Options{Lookup: lookup})
	b := mustRender(t, Options{IsUpgrade: true, Lookup: lookup})
	if Format(a.Manifests) != Format(b.Manifests) {
		t.Errorf("two renders differ: GitOps tools would see a change on every sync")
	}
	if looked != 0 {
		t.Errorf("self-managed mode calls lookup %d times: Argo CD and Flux render without a cluster", looked)
	}
	checkSelfManaged(t, a, "gpu-admission", testNamespace, nil)
}

func TestSelfManagedValues(t *testing.T) {
	res := renderValues(t, "certificates: {selfManaged: {secretName: webhook-ca}}\nwebhooks: {mutating: {enabled: false}}\n")
	c := container(t, res)
	expectEq(t, "--certs-secret", argValue(t, c, "--certs-secret"), "webhook-ca")
	checkDeployment(t, res) // no --mutating-webhook-configuration without one
	checkSelfManaged(t, res, "gpu-admission", testNamespace, nil)

	// Cluster state off: the token and the API server egress stay, for the certificates.
	off := renderValues(t, "cluster: \"off\"\n")
	checkDeployment(t, off)
	checkNetworkPolicy(t, off)
	if len(list(one(t, off, "NetworkPolicy"), "spec", "egress")) == 0 {
		t.Errorf("cluster off with self-managed certificates: no egress to the API server")
	}
	expectEq(t, "automountServiceAccountToken", get(podSpec(t, off), "automountServiceAccountToken"), true)

	// rbac.create false: the operator grants it.
	noRBAC := renderValues(t, "rbac: {create: false}\n")
	for _, m := range noRBAC.Manifests {
		if certsRBAC(m) {
			t.Errorf("rbac.create false still renders %s %s", m.Kind(), m.Name())
		}
	}
	mustFail(t, Options{Values: []map[string]interface{}{vals(t, "certificates: {selfManaged: {secretName: Bad_Name}}")}}, "secretName")

	// The other modes pass no self-managed flag and get no such RBAC.
	for _, mode := range []string{"generate", "cert-manager"} {
		r := renderValues(t, "certificates: {mode: "+mode+"}\n")
		checkDeployment(t, r)
		for _, m := range r.Manifests {
			if certsRBAC(m) {
				t.Errorf("mode %s renders %s %s", mode, m.Kind(), m.Name())
			}
		}
	}
}

func TestPolicyConfigMapWebhook(t *testing.T) {
	// Under enforce the workload webhooks fail closed; the policy one still never blocks.
	res := renderValues(t, "enforcement: enforce\n")
	checkWebhooks(t, res, webhookWant{namespace: testNamespace, service: "gpu-admission", validating: "Fail", mutating: "Fail", timeout: 5})
	names := []string{}
	for _, h := range list(one(t, res, "ValidatingWebhookConfiguration"), "webhooks") {
		names = append(names, str(h, "name"))
	}
	// The policy webhook comes last: the workload one stays webhooks[0] across chart versions.
	expectEq(t, "validating webhooks", names, []string{"validate.gpu-admission.io", policyWebhookName})

	off := renderValues(t, "webhooks: {policyConfigMap: {enabled: false}}\n")
	for _, h := range list(one(t, off, "ValidatingWebhookConfiguration"), "webhooks") {
		if str(h, "name") == policyWebhookName {
			t.Errorf("webhooks.policyConfigMap.enabled false still registers %s", policyWebhookName)
		}
	}
	// Only the policy webhook: the configuration stays, holding it alone.
	only := renderValues(t, "webhooks: {validating: {enabled: false}}\n")
	hooks := list(one(t, only, "ValidatingWebhookConfiguration"), "webhooks")
	if len(hooks) != 1 || str(hooks[0], "name") != policyWebhookName {
		t.Errorf("validating disabled: want the policy webhook alone, got %v", hooks)
	}
	checkDeployment(t, only)
	none := renderValues(t, "webhooks: {validating: {enabled: false}, policyConfigMap: {enabled: false}}\n")
	if len(all(none, "ValidatingWebhookConfiguration")) != 0 {
		t.Errorf("no validating webhook enabled, but the configuration is rendered")
	}
	checkDeployment(t, none)
}

// checkServedPolicyConfigMap posts the rendered policy ConfigMap to a running `serve` the way the
// API server does under the policy webhook: allowed as rendered; refused with lint's error at its
// line in the data key once its policy is broken.
func checkServedPolicyConfigMap(t *testing.T, client *http.Client, base string, res *Result) {
	t.Helper()
	cm := deepCopyMap(one(t, res, "ConfigMap"))
	post := func(uid string) (bool, string) {
		review := map[string]interface{}{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"request": map[string]interface{}{"uid": uid, "operation": "UPDATE", "namespace": testNamespace,
				"name":     str(cm, "metadata", "name"),
				"kind":     map[string]interface{}{"group": "", "version": "v1", "kind": "ConfigMap"},
				"resource": map[string]interface{}{"group": "", "version": "v1", "resource": "configmaps"},
				"userInfo": map[string]interface{}{"username": "helm"}, "object": cm, "oldObject": cm}}
		body, _ := json.Marshal(review)
		resp, err := client.Post(base+"/validate", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("POST /validate of the policy ConfigMap: %v", err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out struct {
			Response struct {
				UID     string `json:"uid"`
				Allowed bool   `json:"allowed"`
				Status  struct {
					Message string `json:"message"`
				} `json:"status"`
			} `json:"response"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.Response.UID != uid {
			t.Fatalf("POST /validate of the policy ConfigMap: HTTP %d %s", resp.StatusCode, raw)
		}
		return out.Response.Allowed, out.Response.Status.Message
	}
	if ok, msg := post("policy-good"); !ok {
		t.Errorf("the rendered policy ConfigMap is refused: %s", msg)
	}
	data := cm["data"].(map[string]interface{})
	data["policy.yaml"] = "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nmetadata: {name: x}\nspec:\n  rules: {gpu-cap: maybe}\n"
	ok, msg := post("policy-broken")
	if ok || !strings.Contains(msg, "policy.yaml:5:") {
		t.Errorf("a broken policy ConfigMap: allowed=%v, message %q; want refused at policy.yaml:5", ok, msg)
	}
}

// markedBlock is the fenced block after `<!-- doc-test: NAME -->` in a document of the checkout
// (the convention of test/webhook/doc_blocks.h).
func markedBlock(t *testing.T, doc, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sourceDir(), "..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	marker := "<!-- doc-test: " + name + " -->\n"
	at := strings.Index(text, marker)
	if at < 0 || strings.Count(text, marker) != 1 {
		t.Fatalf("%s: want one marker %q", doc, marker)
	}
	rest := text[at+len(marker):]
	if !strings.HasPrefix(rest, "```") {
		t.Fatalf("%s: no fence after %q", doc, marker)
	}
	rest = rest[strings.Index(rest, "\n")+1:]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("%s: block %s is not closed", doc, name)
	}
	return rest[:end]
}

// The Argo CD Application and the Flux HelmRelease of docs/deployment.md: their values render the
// self-managed chart, the same twice, and their ignore rules cover every caBundle the webhook
// writes (Argo CD by jq over every webhook, Flux by one JSON pointer per webhook).
func TestGitOpsExamples(t *testing.T) {
	argo, err := ParseValues([]byte(markedBlock(t, "docs/deployment.md", "argocd-application")))
	if err != nil {
		t.Fatal(err)
	}
	flux, err := ParseValues([]byte(markedBlock(t, "docs/deployment.md", "flux-helmrelease")))
	if err != nil {
		t.Fatal(err)
	}
	argoValues, _ := get(argo, "spec", "source", "helm", "valuesObject").(map[string]interface{})
	fluxValues, _ := get(flux, "spec", "values").(map[string]interface{})
	for what, values := range map[string]map[string]interface{}{"Argo CD": argoValues, "Flux": fluxValues} {
		if values == nil {
			t.Fatalf("%s example has no values", what)
		}
		a := mustRender(t, Options{Values: []map[string]interface{}{values}})
		b := mustRender(t, Options{Values: []map[string]interface{}{values}})
		if Format(a.Manifests) != Format(b.Manifests) {
			t.Errorf("%s: two renders of its values differ", what)
		}
		checkSelfManaged(t, a, "gpu-admission", testNamespace, nil)
	}

	res := mustRender(t, Options{Values: []map[string]interface{}{argoValues}})
	argoIgnored := map[string]bool{}
	for _, rule := range list(argo, "spec", "ignoreDifferences") {
		if strs(rule, "jqPathExpressions")[0] == ".webhooks[].clientConfig.caBundle" && str(rule, "name") == "gpu-admission" {
			argoIgnored[str(rule, "kind")] = true
		}
	}
	fluxIgnored := map[string]bool{}
	for _, rule := range list(flux, "spec", "driftDetection", "ignore") {
		for _, path := range strs(rule, "paths") {
			fluxIgnored[str(rule, "target", "kind")+path] = true
		}
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		if !argoIgnored[kind] {
			t.Errorf("the Argo CD example does not ignore the caBundles of %s", kind)
		}
		for i := range list(one(t, res, kind), "webhooks") {
			if path := fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i); !fluxIgnored[kind+path] {
				t.Errorf("the Flux example does not ignore %s of %s", path, kind)
			}
		}
	}
	if !strings.Contains(strings.Join(strs(argo, "spec", "syncPolicy", "syncOptions"), ","), "RespectIgnoreDifferences=true") {
		t.Errorf("the Argo CD example syncs the ignored fields anyway (no RespectIgnoreDifferences=true)")
	}
}
