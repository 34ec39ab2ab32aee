package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// maxRequestBytes bounds the body of a request to /validate (8 MiB); a
// larger one is answered 413. The API server itself limits objects to
// about 3 MiB, and an UPDATE carries two of them.
const maxRequestBytes = 8 << 20

// reasonNameRequired is the denial reason of the structural check.
const reasonNameRequired = "metadata.name or metadata.generateName is required"

// httpError is a request that is not an AdmissionReview the webhook can
// answer; it becomes an HTTP status and a plain-text message.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// decodeReview reads and checks an AdmissionReview v1 from r.
func decodeReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, *httpError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: use POST", r.Method)}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %q: want application/json", r.Header.Get("Content-Type"))}
	}
	if r.ContentLength > maxRequestBytes {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge()
		}
		return nil, &httpError{http.StatusBadRequest, "reading request body: " + err.Error()}
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, &httpError{http.StatusBadRequest, "request body is not an AdmissionReview: " + err.Error()}
	}
	want := admissionv1.SchemeGroupVersion.String()
	if review.APIVersion != want || review.Kind != "AdmissionReview" {
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("unsupported AdmissionReview apiVersion %q kind %q: want %s AdmissionReview", review.APIVersion, review.Kind, want)}
	}
	if review.Request == nil {
		return nil, &httpError{http.StatusBadRequest, "AdmissionReview has no request"}
	}
	if review.Request.UID == "" {
		return nil, &httpError{http.StatusBadRequest, "AdmissionReview request has no uid"}
	}
	return review, nil
}

func tooLarge() *httpError {
	return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", maxRequestBytes)}
}

// parseObjects decodes the request's object (not for DELETE) and old object
// (UPDATE unless objectAlone, DELETE) and runs the structural check on the
// object the operation is about: the new object, or the old one for
// DELETE. A non-empty reason denies the request without running a
// validator.
func parseObjects(req *admissionv1.AdmissionRequest, objectAlone bool) (obj, old *unstructured.Unstructured, reason string) {
	var err error
	if req.Operation != admissionv1.Delete {
		if obj, err = decodeObject(req.Object.Raw); err != nil {
			return nil, nil, "object is not a valid Kubernetes resource: " + err.Error()
		}
	}
	if (req.Operation == admissionv1.Update && !objectAlone) || req.Operation == admissionv1.Delete {
		if len(req.OldObject.Raw) > 0 || req.Operation == admissionv1.Delete {
			if old, err = decodeObject(req.OldObject.Raw); err != nil {
				return nil, nil, "oldObject is not a valid Kubernetes resource: " + err.Error()
			}
		}
	}
	subject := obj
	if req.Operation == admissionv1.Delete {
		subject = old
	}
	if subject.GetName() == "" && subject.GetGenerateName() == "" {
		return nil, nil, reasonNameRequired
	}
	return obj, old, ""
}

// decodeObject parses raw as an unstructured object (integers as int64, like
// the informers' objects) that has an apiVersion and a kind.
func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, errors.New("it is missing")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" {
		return nil, errors.New("apiVersion is missing")
	}
	if u.GetKind() == "" {
		return nil, errors.New("kind is missing")
	}
	return u, nil
}
