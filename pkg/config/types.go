package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version and Kind of the configuration resource.
const (
	// Group is the API group of HAProxyTemplateConfig.
	Group = "haproxy-template.io"
	// Version is the only served version.
	Version = "v1alpha1"
	// Kind is the configuration resource's kind.
	Kind = "HAProxyTemplateConfig"
	// Resource is the plural resource name.
	Resource = "haproxytemplateconfigs"
)

// GroupVersion is haproxy-template.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// HAProxyTemplateConfig is the controller's whole configuration: what to watch,
// how to render HAProxy's configuration from it, and the tests the templates
// must pass.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=haproxytemplateconfigs,scope=Namespaced,shortName=htc;htcs,categories=haproxy
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Published",type=string,JSONPath=`.status.conditions[?(@.type=="Published")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HAProxyTemplateConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	Spec HAProxyTemplateConfigSpec `json:"spec"`
	// Status is written by the controller.
	// +optional
	Status HAProxyTemplateConfigStatus `json:"status,omitempty"`
}

// HAProxyTemplateConfigSpec is the configuration proper.
type HAProxyTemplateConfigSpec struct {
	// WatchedResources maps a store key (the name templates use under
	// .resources) to the Kubernetes resource it holds.
	// +kubebuilder:validation:MinProperties=1
	WatchedResources map[string]WatchedResource `json:"watchedResources"`

	// TemplateSnippets are named templates usable as {{ template "name" . }}.
	// +optional
	TemplateSnippets map[string]Template `json:"templateSnippets,omitempty"`

	// HAProxyConfig renders haproxy.cfg.
	HAProxyConfig Template `json:"haproxyConfig"`

	// Maps render HAProxy map files, keyed by file name.
	// +optional
	Maps map[string]Template `json:"maps,omitempty"`

	// Files render auxiliary files (error pages, ...), keyed by relative name.
	// +optional
	Files map[string]Template `json:"files,omitempty"`

	// SSLCertificates render PEM bundles (certificate + key), keyed by file name.
	// +optional
	SSLCertificates map[string]Template `json:"sslCertificates,omitempty"`

	// ResourceStatus renders the status of watched objects, from the same
	// render (the same state) as the configuration: YAML documents, each
	// {apiVersion, kind, metadata: {namespace, name}, status: {...}} naming
	// an object of a watched resource. A document that does not parse or
	// names an object not in the watched resources fails the render. Once
	// the configuration is accepted (and published), the leader applies
	// each document's status to its object's status subresource (server-side
	// apply, field manager "htc") when it differs from what the object
	// holds; see the README, "Status of watched objects".
	// +optional
	ResourceStatus *Template `json:"resourceStatus,omitempty"`

	// ExtraContext is arbitrary data made available to templates as .extraContext.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	ExtraContext *runtime.RawExtension `json:"extraContext,omitempty"`

	// ValidationTests are run before any change is admitted; a failing test
	// denies the change.
	// +optional
	ValidationTests map[string]ValidationTest `json:"validationTests,omitempty"`

	// ConfigValidationAction is what the admission webhook does when a
	// proposed change of this HAProxyTemplateConfig itself introduces a
	// failure: Deny (the default) rejects it; Warn admits it with the reason
	// as a warning, counts it in a metric and records an Event.
	// +optional
	// +kubebuilder:validation:Enum=Deny;Warn
	ConfigValidationAction ValidationAction `json:"configValidationAction,omitempty"`

	// AllowedDirectives lists dangerous HAProxy directives (lua-load,
	// ssl-provider, setenv, program, .diag/.notice/.warning/.alert, and
	// "env-expansion" for "${...}" expansion) that the rendered configuration
	// may nevertheless contain, and "path:<dir>" entries that permit file
	// references under an absolute directory outside the bundle (e.g.
	// "path:/etc/ssl/certs"). Empty by default: every dangerous directive and
	// every file outside the bundle is refused before haproxy runs.
	// +optional
	AllowedDirectives []string `json:"allowedDirectives,omitempty"`
}

// WatchedResource is one Kubernetes resource type the controller watches.
type WatchedResource struct {
	// APIVersion is the resource's group/version, "v1" for the core group.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Resources is the plural resource name (e.g. "ingresses"); its Kind is
	// resolved with a RESTMapper, never guessed.
	// +kubebuilder:validation:MinLength=1
	Resources string `json:"resources"`

	// IndexBy lists the field expressions whose values key the store, e.g.
	// "metadata.namespace" or "metadata.labels['kubernetes.io/service-name']".
	// +kubebuilder:validation:MinItems=1
	IndexBy []string `json:"indexBy"`

	// WebhookValidation registers a validating webhook for this resource: every
	// CREATE and UPDATE is rendered and checked before it is admitted.
	// +optional
	WebhookValidation bool `json:"webhookValidation,omitempty"`

	// WebhookOperations narrows the operations webhookValidation registers
	// the webhook for: CREATE, UPDATE and DELETE (all three when empty). A
	// resource whose objects change often but matter to the configuration
	// only when they go away (the Gateway library's certificate Secrets)
	// can have only its DELETEs judged. Only meaningful with
	// webhookValidation: true.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=CREATE;UPDATE;DELETE
	WebhookOperations []string `json:"webhookOperations,omitempty"`

	// ValidationAction is what the admission webhook does with a change
	// of this resource that introduces a failure (failures that were there
	// before the change are only warned about): Deny (the default) rejects
	// it; Warn admits it with the reason as a warning, counts it in a
	// metric and records an Event on the config — to roll validation out
	// safely. Only meaningful with webhookValidation: true.
	// +optional
	// +kubebuilder:validation:Enum=Deny;Warn
	ValidationAction ValidationAction `json:"validationAction,omitempty"`

	// WriteStatus lets spec.resourceStatus write the status of this
	// resource's objects: a status document naming an object of a watched
	// resource without it fails the render, so a value that breaks out of
	// its place in a document cannot make the controller write the status
	// of a Service, Secret or any other kind the library does not own. The
	// chart grants patch on <resource>/status for exactly these resources.
	// +optional
	WriteStatus bool `json:"writeStatus,omitempty"`

	// LabelSelector restricts the watch to matching objects.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector restricts the watch to objects whose fields match, in
	// the API server's syntax, e.g. "metadata.name!=kubernetes" or
	// "spec.ingressClassName=htc" (an API server supports metadata.name and
	// metadata.namespace for every resource, other fields only where the
	// resource declares them). It is passed to list and watch, and a
	// proposed change is judged by it as the informer would.
	// +optional
	FieldSelector string `json:"fieldSelector,omitempty"`
}

// ValidationAction is what admission does with a change that introduces a
// failure.
type ValidationAction string

const (
	// ValidationDeny rejects the change (the default).
	ValidationDeny ValidationAction = "Deny"
	// ValidationWarn admits the change with the reason as a warning.
	ValidationWarn ValidationAction = "Warn"
)

// Template is a Go text/template source.
type Template struct {
	// Template is the template text.
	Template string `json:"template"`
}

// ValidationTest is one embedded test: fixtures stand in for the stores and
// the assertions must hold for the rendered bundle.
type ValidationTest struct {
	// Description says what the test proves.
	// +optional
	Description string `json:"description,omitempty"`

	// Fixtures maps a store key to the objects that store holds during the test.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Fixtures map[string][]runtime.RawExtension `json:"fixtures,omitempty"`

	// Assertions must all hold.
	// +kubebuilder:validation:MinItems=1
	Assertions []Assertion `json:"assertions"`
}

// AssertionType names how an Assertion is evaluated.
// +kubebuilder:validation:Enum=haproxy_valid;contains;not_contains;equals;match_count;match_order;jsonpath;deterministic;rendering_error
type AssertionType string

// The assertion types.
const (
	// AssertHAProxyValid requires the bundle to pass every check phase.
	AssertHAProxyValid AssertionType = "haproxy_valid"
	// AssertContains requires Pattern (a regular expression) to match Target.
	AssertContains AssertionType = "contains"
	// AssertNotContains requires Pattern not to match Target.
	AssertNotContains AssertionType = "not_contains"
	// AssertEquals requires Target to equal Expected exactly.
	AssertEquals AssertionType = "equals"
	// AssertMatchCount requires Pattern to match Target exactly Count times.
	AssertMatchCount AssertionType = "match_count"
	// AssertMatchOrder requires Patterns to match Target in that order.
	AssertMatchOrder AssertionType = "match_order"
	// AssertJSONPath evaluates JSONPath over the render context and compares
	// the result with Expected.
	AssertJSONPath AssertionType = "jsonpath"
	// AssertDeterministic renders twice and requires identical bundles.
	AssertDeterministic AssertionType = "deterministic"
	// AssertRenderingError requires rendering to fail with a message matching Pattern.
	AssertRenderingError AssertionType = "rendering_error"
)

// Assertion is one check of a ValidationTest.
type Assertion struct {
	// Type is the assertion type.
	Type AssertionType `json:"type"`
	// Target is what the assertion reads: "haproxy.cfg" (the default),
	// "map:<name>", "file:<name>", "cert:<name>", or "resourceStatus" (the
	// documents spec.resourceStatus rendered, as `htc render --status`
	// prints them).
	// +optional
	Target string `json:"target,omitempty"`
	// Pattern is a regular expression (contains, not_contains, match_count,
	// rendering_error).
	// +optional
	Pattern string `json:"pattern,omitempty"`
	// Patterns are regular expressions that must match in order (match_order).
	// +optional
	Patterns []string `json:"patterns,omitempty"`
	// Expected is the exact value for equals and jsonpath.
	// +optional
	Expected *string `json:"expected,omitempty"`
	// Count is the number of matches match_count requires.
	// +optional
	Count *int `json:"count,omitempty"`
	// JSONPath is a client-go JSONPath template over the render context
	// (e.g. "{.resources.ingresses.List[0].metadata.name}").
	// +optional
	JSONPath string `json:"jsonpath,omitempty"`
	// Description replaces the generated description in failure messages.
	// +optional
	Description string `json:"description,omitempty"`
}

// HAProxyTemplateConfigStatus is the controller-written status.
type HAProxyTemplateConfigStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Valid (the live configuration renders and passes checks),
	// Published (HAProxy runs it).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Failures are what is broken in the current resources (the baseline
	// every admission is judged against): each failure with the objects it
	// comes from. Admission denies only failures a change introduces;
	// these are reported as warnings. At most MaxStatusFailures are listed.
	// +optional
	Failures []StatusFailure `json:"failures,omitempty"`
	// FailureCount is the number of failures, also those not listed.
	// +optional
	FailureCount int `json:"failureCount,omitempty"`
}

// MaxStatusFailures bounds status.failures.
const MaxStatusFailures = 50

// StatusFailure is one failure of the current resources.
type StatusFailure struct {
	// Phase is the check phase that found it (render, policy, syntax,
	// schema, semantic, tests).
	Phase string `json:"phase"`
	// Objects name the objects it comes from ("Ingress team-a/web"); empty
	// when no object can be named.
	// +optional
	Objects []string `json:"objects,omitempty"`
	// Reason is the simplified problem.
	Reason string `json:"reason"`
}

// HAProxyTemplateConfigList is a list of HAProxyTemplateConfig.
//
// +kubebuilder:object:root=true
type HAProxyTemplateConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the configs.
	Items []HAProxyTemplateConfig `json:"items"`
}
