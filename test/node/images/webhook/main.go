// test/node/images/webhook: a validating admission webhook for the node cluster's tests,
// built static by test/node/images.ts into its own image. Serves TLS with the key pair mounted
// at /tls and denies any object labelled portcullis.dev/deny=true; everything else is allowed.
// It knows nothing of Portcullis: it only proves the API server reaches a webhook in a pod
// through a ClusterIP Service over verified TLS.
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
)

type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

type request struct {
	UID    string          `json:"uid"`
	Object json.RawMessage `json:"object"`
}

type response struct {
	UID     string  `json:"uid"`
	Allowed bool    `json:"allowed"`
	Status  *status `json:"status,omitempty"`
}

type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func validate(w http.ResponseWriter, r *http.Request) {
	var in review
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	var object struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(in.Request.Object, &object)
	out := review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: &response{UID: in.Request.UID, Allowed: true}}
	if object.Metadata.Labels["portcullis.dev/deny"] == "true" {
		out.Response.Allowed = false
		out.Response.Status = &status{Code: 403, Message: "denied by the node-webhook pod: " + object.Metadata.Name}
	}
	log.Printf("review %s of %q: allowed=%v", in.Request.UID, object.Metadata.Name, out.Response.Allowed)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func main() {
	http.HandleFunc("/validate", validate)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	addr := ":8443"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	log.Printf("node-webhook serving on %s", addr)
	log.Fatal(http.ListenAndServeTLS(addr, "/tls/tls.crt", "/tls/tls.key", nil))
}
