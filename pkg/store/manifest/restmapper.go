package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

type runtimeObject = runtime.Object

// clusterScoped lists the cluster-scoped built-in kinds (scope only matters
// for namespace defaulting; everything else is namespaced).
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "IngressClass": true, "StorageClass": true,
	"CustomResourceDefinition": true, "PriorityClass": true, "CSIDriver": true,
	"CSINode": true, "RuntimeClass": true, "ValidatingWebhookConfiguration": true,
	"MutatingWebhookConfiguration": true, "APIService": true, "VolumeAttachment": true,
	"GatewayClass": true,
}

// gatewayPlurals are the resource names of the Gateway API kinds, as their
// CRDs declare them (a test compares them with the module's CRDs).
var gatewayPlurals = map[string]string{
	"BackendTLSPolicy": "backendtlspolicies", "GRPCRoute": "grpcroutes", "Gateway": "gateways",
	"GatewayClass": "gatewayclasses", "HTTPRoute": "httproutes", "ReferenceGrant": "referencegrants",
	"TCPRoute": "tcproutes", "TLSRoute": "tlsroutes", "UDPRoute": "udproutes",
}

// knownTypes is client-go's scheme plus the Gateway API versions the
// standard channel serves (sigs.k8s.io/gateway-api: v1, and v1beta1 for
// Gateway, GatewayClass, HTTPRoute and ReferenceGrant), so that `htc check`
// resolves Gateway API objects without their CRDs in the state.
func knownTypes() (map[schema.GroupVersionKind]bool, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	out := map[schema.GroupVersionKind]bool{}
	for gvk := range s.AllKnownTypes() {
		out[gvk] = true
	}
	return out, nil
}

// NewRESTMapper returns a static RESTMapper of every kind in client-go's
// scheme and the Gateway API's standard channel, plus the
// CustomResourceDefinitions found in objs (with the plural names they
// declare).
func NewRESTMapper(objs []Object) (meta.RESTMapper, error) {
	types, err := knownTypes()
	if err != nil {
		return nil, err
	}
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for gvk := range types {
		if !seen[gvk.GroupVersion()] {
			seen[gvk.GroupVersion()] = true
			gvs = append(gvs, gvk.GroupVersion())
		}
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for gvk := range types {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") || gvk.Kind == "WatchEvent" {
			continue
		}
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Kind] {
			scope = meta.RESTScopeRoot
		}
		if plural, ok := gatewayPlurals[gvk.Kind]; ok && gvk.Group == gatewayv1.GroupName {
			// The guesser would say "gatewaies".
			m.AddSpecific(gvk, gvk.GroupVersion().WithResource(plural), gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind)), scope)
			continue
		}
		m.Add(gvk, scope)
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || !strings.HasPrefix(o.GetAPIVersion(), "apiextensions.k8s.io/") {
			continue
		}
		if err := addCRD(m, o); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Source, err)
		}
	}
	return m, nil
}

func addCRD(m *meta.DefaultRESTMapper, o Object) error {
	spec, _ := o.Object["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	plural, _ := names["plural"].(string)
	singular, _ := names["singular"].(string)
	scopeName, _ := spec["scope"].(string)
	versions, _ := spec["versions"].([]any)
	if group == "" || kind == "" || plural == "" {
		return fmt.Errorf("CustomResourceDefinition %s: spec.group, spec.names.kind and spec.names.plural are required", o.GetName())
	}
	if singular == "" {
		singular = strings.ToLower(kind)
	}
	scope := meta.RESTScopeNamespace
	if scopeName == "Cluster" {
		scope = meta.RESTScopeRoot
	}
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if name == "" {
			continue
		}
		gv := schema.GroupVersion{Group: group, Version: name}
		m.AddSpecific(gv.WithKind(kind), gv.WithResource(plural), gv.WithResource(singular), scope)
	}
	return nil
}
