// A reference admission webhook on Go's standard library (net/http, encoding/json, crypto/tls),
// built the way controller-runtime webhooks handle a request: read the body, decode the
// AdmissionReview, decode the embedded Pod into typed structs, check the GPU limits, encode the
// response (with a JSON patch on /mutate). bench/load.sh runs it beside gpu-admission and
// nginx, on the same core, as the "Go net/http" point of comparison. Not part of the product.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
)

type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	UID         string            `json:"uid,omitempty"`
}

type ResourceRequirements struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type SecurityContext struct {
	Privileged               *bool  `json:"privileged,omitempty"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation,omitempty"`
	RunAsNonRoot             *bool  `json:"runAsNonRoot,omitempty"`
	RunAsUser                *int64 `json:"runAsUser,omitempty"`
	Capabilities             *struct {
		Add  []string `json:"add,omitempty"`
		Drop []string `json:"drop,omitempty"`
	} `json:"capabilities,omitempty"`
}

type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
}

type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

type Volume struct {
	Name     string `json:"name"`
	HostPath *struct {
		Path string `json:"path"`
	} `json:"hostPath,omitempty"`
	Other json.RawMessage `json:"-"`
}

type PodSpec struct {
	Containers         []Container       `json:"containers"`
	InitContainers     []Container       `json:"initContainers,omitempty"`
	NodeSelector       map[string]string `json:"nodeSelector,omitempty"`
	Tolerations        []Toleration      `json:"tolerations,omitempty"`
	Volumes            []Volume          `json:"volumes,omitempty"`
	HostNetwork        bool              `json:"hostNetwork,omitempty"`
	HostPID            bool              `json:"hostPID,omitempty"`
	HostIPC            bool              `json:"hostIPC,omitempty"`
	PriorityClassName  string            `json:"priorityClassName,omitempty"`
	RuntimeClassName   *string           `json:"runtimeClassName,omitempty"`
	ServiceAccountName string            `json:"serviceAccountName,omitempty"`
	Affinity           json.RawMessage   `json:"affinity,omitempty"`
}

type Pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
}

type AdmissionRequest struct {
	UID       string          `json:"uid"`
	Kind      json.RawMessage `json:"kind"`
	Resource  json.RawMessage `json:"resource"`
	Namespace string          `json:"namespace,omitempty"`
	Operation string          `json:"operation"`
	UserInfo  json.RawMessage `json:"userInfo"`
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	DryRun    *bool           `json:"dryRun,omitempty"`
}

type Status struct {
	Code    int32  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

type AdmissionResponse struct {
	UID       string   `json:"uid"`
	Allowed   bool     `json:"allowed"`
	Result    *Status  `json:"status,omitempty"`
	Patch     []byte   `json:"patch,omitempty"`
	PatchType *string  `json:"patchType,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

type AdmissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *AdmissionRequest  `json:"request,omitempty"`
	Response   *AdmissionResponse `json:"response,omitempty"`
}

type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

const gpuResource = "nvidia.com/gpu"
const maxGPUs = 8

func review(w http.ResponseWriter, r *http.Request, mutate bool) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		http.Error(w, "expected a JSON POST", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	var pod Pod
	if err := json.Unmarshal(in.Request.Object, &pod); err != nil {
		http.Error(w, "request.object is not a Pod", http.StatusBadRequest)
		return
	}
	resp := &AdmissionResponse{UID: in.Request.UID, Allowed: true}
	gpus := 0
	for _, c := range pod.Spec.Containers {
		var n int
		if v, ok := c.Resources.Limits[gpuResource]; ok {
			fmt.Sscan(v, &n)
		}
		gpus += n
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			resp.Allowed = false
			resp.Result = &Status{Code: 403, Message: fmt.Sprintf("container %q is privileged", c.Name)}
		}
	}
	if gpus > maxGPUs {
		resp.Allowed = false
		resp.Result = &Status{Code: 403, Message: fmt.Sprintf("pod requests %d GPUs, more than %d", gpus, maxGPUs)}
	}
	if mutate && resp.Allowed && gpus > 0 {
		ops := []patchOp{}
		if pod.Metadata.Labels == nil {
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels", Value: map[string]string{}})
		}
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels/gpu-admission.io~1tenant", Value: pod.Metadata.Namespace})
		if pod.Spec.NodeSelector == nil {
			ops = append(ops, patchOp{Op: "add", Path: "/spec/nodeSelector", Value: map[string]string{"gpu-admission.io/pool": "default"}})
		}
		patch, _ := json.Marshal(ops)
		pt := "JSONPatch"
		resp.Patch, resp.PatchType = patch, &pt
	}
	out, _ := json.Marshal(AdmissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8443", "address")
	cert := flag.String("tls-cert", "tls.crt", "certificate")
	key := flag.String("tls-key", "tls.key", "key")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { review(w, r, false) })
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) { review(w, r, true) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	server := &http.Server{Addr: *listen, Handler: mux}
	log.Fatal(server.ListenAndServeTLS(*cert, *key))
}
