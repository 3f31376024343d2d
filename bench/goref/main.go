// Command goref is the reference webhook of the benchmark: the vGPU
// defaulting of vgpu-webhook for ordinary pods, written the way a Go team
// would write it with the standard library only.  net/http with its
// defaults, the review decoded into map[string]interface{}, the patch
// marshalled by encoding/json, no log line per request.
//
// It applies the built-in policy of vgpu-webhook (docs/behaviour.md §3 and
// §4) for the NVIDIA family: copy requests into limits, count, memory and
// cores defaults, schedulerName and the nvidia.com/gpu toleration, with the
// same warnings.  It is a yardstick, not a second implementation:
// quantities are read with strconv, and there is no validation or policy
// checking beyond what the benchmark payloads need.
//
//	goref -listen 127.0.0.1:9443 -cert tls.crt -key tls.key
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
)

const (
	schedulerName = "hami-scheduler"
	countName     = "nvidia.com/gpu"
	memoryName    = "nvidia.com/gpumem"
	percentName   = "nvidia.com/gpumem-percentage"
	coresName     = "nvidia.com/gpucores"
	defaultMemory = 5000
	maxBodyBytes  = 3 << 20
	maxWarnings   = 30
)

// The keys of the family in the order their operations are written.
var familyKeys = []string{countName, memoryName, percentName, coresName}

type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

type admissionResponse struct {
	UID       string   `json:"uid"`
	Allowed   bool     `json:"allowed"`
	PatchType string   `json:"patchType,omitempty"`
	Patch     []byte   `json:"patch,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

type admissionReview struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Response   admissionResponse `json:"response"`
}

var toleration = map[string]interface{}{
	"key":      "nvidia.com/gpu",
	"operator": "Exists",
	"effect":   "NoSchedule",
}

func escapeKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

type mutator struct {
	ops      []patchOp
	warnings []string
}

func (m *mutator) add(path string, value interface{}) {
	m.ops = append(m.ops, patchOp{Op: "add", Path: path, Value: value})
}

// container defaults one container at pointer base and reports whether it
// is a vGPU container.
func (m *mutator) container(base string, c map[string]interface{}) bool {
	name, _ := c["name"].(string)
	resources, _ := c["resources"].(map[string]interface{})
	limits, _ := resources["limits"].(map[string]interface{})
	requests, _ := resources["requests"].(map[string]interface{})

	values := map[string]string{}
	newLimits := map[string]interface{}{}
	newRequests := map[string]interface{}{}
	var order []string
	set := func(key, value string, toRequests bool) {
		newLimits[key] = value
		if toRequests && requests != nil {
			newRequests[key] = value
		}
		order = append(order, key)
	}
	for _, key := range familyKeys {
		if v, ok := limits[key].(string); ok {
			values[key] = v
		} else if v, ok := requests[key].(string); ok {
			values[key] = v
			set(key, v, false)
			m.warnings = append(m.warnings, fmt.Sprintf(
				"container %q: copied request %s=%s into limits", name, key, v))
		}
	}
	_, hasCount := values[countName]
	_, hasMemory := values[memoryName]
	_, hasPercent := values[percentName]
	_, hasCores := values[coresName]
	if !hasCount && !hasMemory && !hasPercent && !hasCores {
		return false
	}
	if !hasCount {
		values[countName] = "1"
		set(countName, "1", true)
		m.warnings = append(m.warnings, fmt.Sprintf(
			"container %q: set %s=1 (defaultGPUNum)", name, countName))
	}
	if n, err := strconv.Atoi(values[countName]); err != nil || n == 0 {
		return false
	}
	if !hasMemory && !hasPercent {
		mem := strconv.Itoa(defaultMemory)
		set(memoryName, mem, true)
		m.warnings = append(m.warnings, fmt.Sprintf(
			"container %q: set %s=%s (defaultMemory)", name, memoryName, mem))
	}
	if !hasCores && values[percentName] == "100" {
		set(coresName, "100", true)
		m.warnings = append(m.warnings, fmt.Sprintf(
			"container %q: set %s=100 (whole device)", name, coresName))
	}
	if len(order) == 0 {
		return true
	}
	switch {
	case resources == nil:
		m.add(base+"/resources", map[string]interface{}{"limits": newLimits})
	case limits == nil:
		m.add(base+"/resources/limits", newLimits)
	default:
		for _, key := range familyKeys {
			if v, ok := newLimits[key]; ok {
				m.add(base+"/resources/limits/"+escapeKey(key), v)
			}
		}
	}
	for _, key := range familyKeys {
		if v, ok := newRequests[key]; ok {
			m.add(base+"/resources/requests/"+escapeKey(key), v)
		}
	}
	return true
}

// pod builds the operations for one pod object.
func (m *mutator) pod(pod map[string]interface{}) {
	spec, _ := pod["spec"].(map[string]interface{})
	vgpu := false
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := spec[list].([]interface{})
		for i, c := range containers {
			c, _ := c.(map[string]interface{})
			if m.container(fmt.Sprintf("/spec/%s/%d", list, i), c) {
				vgpu = true
			}
		}
	}
	if !vgpu {
		return
	}
	if s, _ := spec["schedulerName"].(string); s != schedulerName {
		m.add("/spec/schedulerName", schedulerName)
	}
	tolerations, ok := spec["tolerations"].([]interface{})
	if !ok {
		m.add("/spec/tolerations", []interface{}{toleration})
		return
	}
	for _, t := range tolerations {
		t, _ := t.(map[string]interface{})
		if t["key"] == toleration["key"] && t["operator"] == toleration["operator"] &&
			t["effect"] == toleration["effect"] && (t["value"] == nil || t["value"] == "") {
			return
		}
	}
	m.add("/spec/tolerations/-", toleration)
}

func mutate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var review map[string]interface{}
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, "request body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	apiVersion, _ := review["apiVersion"].(string)
	request, _ := review["request"].(map[string]interface{})
	uid, _ := request["uid"].(string)
	if review["kind"] != "AdmissionReview" || uid == "" ||
		(apiVersion != "admission.k8s.io/v1" && apiVersion != "admission.k8s.io/v1beta1") {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}

	out := admissionReview{APIVersion: apiVersion, Kind: "AdmissionReview",
		Response: admissionResponse{UID: uid, Allowed: true}}
	kind, _ := request["kind"].(map[string]interface{})
	pod, _ := request["object"].(map[string]interface{})
	if kind["kind"] == "Pod" && request["operation"] == "CREATE" && pod != nil {
		var m mutator
		m.pod(pod)
		if len(m.ops) > 0 {
			patch, err := json.Marshal(m.ops)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			out.Response.PatchType = "JSONPatch"
			out.Response.Patch = patch
		}
		if len(m.warnings) > maxWarnings {
			more := len(m.warnings) - maxWarnings
			m.warnings = append(m.warnings[:maxWarnings],
				fmt.Sprintf("... and %d more", more))
		}
		out.Response.Warnings = m.warnings
	}
	answer, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(answer)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9443", "HTTPS address")
	cert := flag.String("cert", "tls.crt", "serving certificate (PEM)")
	key := flag.String("key", "tls.key", "private key of the certificate (PEM)")
	flag.Parse()

	http.HandleFunc("/mutate", mutate)
	http.HandleFunc("/webhook", mutate)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	})
	log.Fatal(http.ListenAndServeTLS(*listen, *cert, *key, nil))
}
