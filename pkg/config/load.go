package config

import (
	"encoding/json"
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/contenthash"
)

// ErrWrongKind is returned when a document is not an HAProxyTemplateConfig.
var ErrWrongKind = errors.New("not a " + Group + "/" + Version + " " + Kind)

// LoadFile reads one HAProxyTemplateConfig from a YAML or JSON file. Unknown
// fields are errors (they are almost always typos), and the result has
// defaults applied. It does not validate; call validation.Validate for that.
func LoadFile(path string) (*HAProxyTemplateConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes one HAProxyTemplateConfig from YAML or JSON bytes, strictly
// (unknown and duplicate fields are errors), and applies defaults.
func Parse(data []byte) (*HAProxyTemplateConfig, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Kind, err)
	}
	var cfg HAProxyTemplateConfig
	strictErrs, err := kjson.UnmarshalStrict(js, &cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Kind, err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding %s: %w", Kind, errors.Join(strictErrs...))
	}
	if err := checkTypeMeta(cfg.APIVersion, cfg.Kind); err != nil {
		return nil, err
	}
	cfg.Default()
	return &cfg, nil
}

// FromUnstructured converts an object read from the cluster (or from an
// AdmissionReview) into an HAProxyTemplateConfig, strictly, with defaults.
func FromUnstructured(u *unstructured.Unstructured) (*HAProxyTemplateConfig, error) {
	if err := checkTypeMeta(u.GetAPIVersion(), u.GetKind()); err != nil {
		return nil, err
	}
	var cfg HAProxyTemplateConfig
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &cfg, true); err != nil {
		return nil, fmt.Errorf("decoding %s %s/%s: %w", Kind, u.GetNamespace(), u.GetName(), err)
	}
	cfg.Default()
	return &cfg, nil
}

// FromJSON decodes an HAProxyTemplateConfig from its JSON as an
// AdmissionReview carries it, as FromUnstructured does the same object
// decoded into a map, in one pass instead of two: strictly (unknown
// fields are errors, and so are duplicate fields, which the map would
// have let the last win), with defaults. Embedded objects (extraContext,
// fixtures) keep their bytes as sent.
//
// encoding/json/v2 decodes first: it is twice as fast as sigs.k8s.io/json,
// and it admits no JSON that sigs.k8s.io/json refuses (unknown and
// duplicate names, wrong types; it refuses invalid UTF-8 too, which the
// latter replaces). Whatever v2 refuses, sigs.k8s.io/json decodes as
// Parse does: its result, or its errors, which name the field as
// Kubernetes does. FuzzFromJSONDecodesAsFromUnstructured checks both
// paths against FromUnstructured.
func FromJSON(js []byte) (*HAProxyTemplateConfig, error) {
	var fast HAProxyTemplateConfig
	if jsonv2.Unmarshal(js, &fast, jsonv2.RejectUnknownMembers(true)) == nil && checkTypeMeta(fast.APIVersion, fast.Kind) == nil {
		fast.Default()
		return &fast, nil
	}
	var cfg HAProxyTemplateConfig
	strictErrs, err := kjson.UnmarshalStrict(js, &cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Kind, err)
	}
	if err := checkTypeMeta(cfg.APIVersion, cfg.Kind); err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding %s %s/%s: %w", Kind, cfg.Namespace, cfg.Name, runtime.NewStrictDecodingError(strictErrs))
	}
	cfg.Default()
	return &cfg, nil
}

func checkTypeMeta(apiVersion, kind string) error {
	if apiVersion != GroupVersion.String() || kind != Kind {
		return fmt.Errorf("%w: apiVersion %q, kind %q", ErrWrongKind, apiVersion, kind)
	}
	return nil
}

// Default fills in defaults: an assertion without a target reads haproxy.cfg.
func (c *HAProxyTemplateConfig) Default() {
	for name, t := range c.Spec.ValidationTests {
		for i := range t.Assertions {
			if t.Assertions[i].Target == "" && needsTarget(t.Assertions[i].Type) {
				t.Assertions[i].Target = "haproxy.cfg"
			}
		}
		c.Spec.ValidationTests[name] = t
	}
}

func needsTarget(t AssertionType) bool {
	switch t {
	case AssertContains, AssertNotContains, AssertEquals, AssertMatchCount, AssertMatchOrder:
		return true
	}
	return false
}

// Hash is a digest of the spec: two specs that differ in any field have
// different hashes (see specHash). Embedded test results depend only on
// the spec, so they can be cached under this key.
func (s *HAProxyTemplateConfigSpec) Hash() string {
	if sum, ok := specHash(s); ok {
		return sum
	}
	// A kind of field specHash does not know: its JSON (encoding/json
	// sorts map keys, so the encoding is canonical).
	b, err := json.Marshal(s)
	if err != nil {
		// Every field is plain data; Marshal cannot fail on it.
		panic(fmt.Sprintf("config: marshal spec: %v", err))
	}
	return contenthash.New().String("json").Bytes(b).Sum()
}
