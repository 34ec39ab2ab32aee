package testrun

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// fixtureStores builds the stores a validation test renders over: every
// watched resource gets a store, filled with the test's fixtures for it,
// trimmed as the controller's stores keep objects (watched.Trim).
func fixtureStores(model *watched.Model, test config.ValidationTest) (store.Set, error) {
	stores := model.NewStores()
	keys := make([]string, 0, len(test.Fixtures))
	for k := range test.Fixtures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		s, ok := stores[key]
		if !ok {
			return nil, fmt.Errorf("fixtures[%s]: not a watched resource", key)
		}
		for i, raw := range test.Fixtures[key] {
			obj, err := decodeFixture(raw.Raw, raw.Object)
			if err != nil {
				return nil, fmt.Errorf("fixtures[%s][%d]: %w", key, i, err)
			}
			if _, err := watched.Trim(obj); err != nil {
				return nil, fmt.Errorf("fixtures[%s][%d]: %w", key, i, err)
			}
			if err := s.Add(obj); err != nil {
				return nil, fmt.Errorf("fixtures[%s][%d]: %w", key, i, err)
			}
		}
	}
	return store.ReadOnly(stores), nil
}

func decodeFixture(raw []byte, obj any) (*unstructured.Unstructured, error) {
	if raw == nil && obj != nil {
		var err error
		if raw, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	u := &unstructured.Unstructured{}
	// As the API machinery decodes what the informers receive (whole
	// numbers as int64): a test sees the values the live render sees.
	if err := utiljson.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if u.Object == nil {
		return nil, fmt.Errorf("empty fixture")
	}
	if u.GetName() == "" {
		return nil, fmt.Errorf("metadata.name is required")
	}
	return u, nil
}
