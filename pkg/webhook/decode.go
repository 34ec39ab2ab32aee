package webhook

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
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
	body, err := readBody(w, r)
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

// readBody reads r's body whole, at most maxRequestBytes: into one buffer
// of the length the request declares, when it declares one (io.ReadAll
// grows its buffer step by step, allocating some four times a config
// UPDATE's 400 KB), else as io.ReadAll does. A body longer than it
// declares is still read whole, a shorter one is an error (net/http's).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if r.ContentLength <= 0 {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+bytes.MinRead))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

func tooLarge() *httpError {
	return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", maxRequestBytes)}
}

// parseObjects decodes the request's object (not for DELETE) and old object
// (UPDATE unless ownJSON, DELETE) and runs the structural check on the
// object the operation is about: the new object, or the old one for
// DELETE. With ownJSON (a validator ObjectJSON marked), obj holds only the
// object's apiVersion, kind and metadata, and objJSON is the object as
// sent. A non-empty reason denies the request without running a
// validator.
func parseObjects(req *admissionv1.AdmissionRequest, ownJSON bool) (obj, old *unstructured.Unstructured, objJSON []byte, reason string) {
	var err error
	if req.Operation != admissionv1.Delete {
		decode := decodeObject
		if ownJSON {
			decode, objJSON = decodeHead, req.Object.Raw
		}
		if obj, err = decode(req.Object.Raw); err != nil {
			return nil, nil, nil, "object is not a valid Kubernetes resource: " + err.Error()
		}
	}
	if (req.Operation == admissionv1.Update && !ownJSON) || req.Operation == admissionv1.Delete {
		if len(req.OldObject.Raw) > 0 || req.Operation == admissionv1.Delete {
			if old, err = decodeObject(req.OldObject.Raw); err != nil {
				return nil, nil, nil, "oldObject is not a valid Kubernetes resource: " + err.Error()
			}
		}
	}
	subject := obj
	if req.Operation == admissionv1.Delete {
		subject = old
	}
	if subject.GetName() == "" && subject.GetGenerateName() == "" {
		return nil, nil, nil, reasonNameRequired
	}
	return obj, old, objJSON, ""
}

// decodeObject parses raw as an unstructured object (integers as int64, like
// the informers' objects) that has an apiVersion and a kind.
func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	if missing(raw) {
		return nil, errors.New("it is missing")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return checkedObject(m)
}

// decodeHead is decodeObject keeping only the object's apiVersion, kind
// and metadata: raw is read whole (it must be one JSON object, as for
// decodeObject: duplicate names allowed, the last one kept, and invalid
// UTF-8 too), but only those three members are decoded.
func decodeHead(raw []byte) (*unstructured.Unstructured, error) {
	if missing(raw) {
		return nil, errors.New("it is missing")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '{' {
		return nil, fmt.Errorf("the object is a JSON %s, not an object", kindName(tok.Kind()))
	}
	m := map[string]any{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch k := name.String(); k {
		case "apiVersion", "kind", "metadata":
			v, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			var x any
			if err := utiljson.Unmarshal(v, &x); err != nil {
				return nil, err
			}
			m[k] = x
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("invalid JSON after the object")
	}
	return checkedObject(m)
}

// kindName names a JSON value of kind k.
func kindName(k jsontext.Kind) string {
	switch k {
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	}
	return "null"
}

// missing reports whether raw holds no object (nothing, or null).
func missing(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// checkedObject is m as an object, when it has an apiVersion and a kind.
func checkedObject(m map[string]any) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" {
		return nil, errors.New("apiVersion is missing")
	}
	if u.GetKind() == "" {
		return nil, errors.New("kind is missing")
	}
	return u, nil
}
