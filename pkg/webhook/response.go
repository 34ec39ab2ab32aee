package webhook

import (
	"net/http"
	"strings"

	"github.com/haproxy-template/htc/internal/textutil"
	"github.com/haproxy-template/htc/pkg/admission"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxWarningLen caps each admission warning; the API server truncates long
// warnings anyway and kubectl prints them one per line.
const maxWarningLen = 256

// allowedResponse returns a response admitting the request, with warnings.
func allowedResponse(uid types.UID, warnings ...string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: uid, Allowed: true, Warnings: shortWarnings(warnings)}
}

// deniedResponse returns a response rejecting the request with reason, which kubectl
// prints after "denied the request: ".
func deniedResponse(uid types.UID, reason string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		UID:     uid,
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: reason,
		},
	}
}

// causePrefix starts the type of every status cause a denial carries:
// "htc/<phase>" (e.g. "htc/render"), so tools need not parse the reason.
const causePrefix = "htc/"

// FromDecision converts an admission Decision into a response. A denial
// carries, in status.details.causes, one cause per failure the change
// introduced: its phase as the type ("htc/render"), the objects it comes
// from as the field ("Ingress team-a/web"), and its reason.
func FromDecision(uid types.UID, d admission.Decision) *admissionv1.AdmissionResponse {
	if d.Allowed {
		return allowedResponse(uid, d.Warnings...)
	}
	resp := deniedResponse(uid, d.Reason)
	var causes []metav1.StatusCause
	for _, f := range d.Introduced {
		c := metav1.StatusCause{Type: metav1.CauseType(causePrefix + string(f.Phase)), Message: f.Reason}
		names := make([]string, len(f.Objects))
		for i, o := range f.Objects {
			names[i] = o.String()
		}
		c.Field = strings.Join(names, ", ")
		causes = append(causes, c)
	}
	if len(causes) == 0 && d.Phase != "" {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(causePrefix + string(d.Phase)), Message: d.Reason})
	}
	if len(causes) > 0 {
		resp.Result.Details = &metav1.StatusDetails{Causes: causes}
	}
	return resp
}

// Review wraps a response in an AdmissionReview v1 envelope.
func Review(resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionReview {
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
}

func shortWarnings(ws []string) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, textutil.Truncate(w, maxWarningLen))
	}
	return out
}
