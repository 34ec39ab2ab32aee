// Package config holds the HAProxyTemplateConfig v1alpha1 API types, their
// defaults, loading from a YAML file or an unstructured object, and
// validation with messages that name the offending field path.
//
// +kubebuilder:object:generate=true
// +groupName=haproxy-template.io
// +versionName=v1alpha1
package config
