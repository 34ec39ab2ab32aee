package webhook

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// NewDiscoveryRESTMapper returns a RESTMapper backed by API server discovery,
// cached in memory. A lookup that finds no match resets the cache and is
// retried once, so resources installed after start (CRDs) resolve. The
// result also implements meta.ResettableRESTMapper.
func NewDiscoveryRESTMapper(dc discovery.DiscoveryInterface) meta.RESTMapper {
	return &resettingMapper{d: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// resettingMapper retries a no-match lookup once after a discovery reset:
// the deferred mapper alone does not, because its memory cache always
// reports itself fresh once it has been filled.
type resettingMapper struct {
	d *restmapper.DeferredDiscoveryRESTMapper
}

var _ meta.ResettableRESTMapper = (*resettingMapper)(nil)

func retry[T any](m *resettingMapper, f func() (T, error)) (T, error) {
	v, err := f()
	if err != nil && meta.IsNoMatchError(err) {
		m.d.Reset()
		v, err = f()
	}
	return v, err
}

// Reset drops the cached discovery information.
func (m *resettingMapper) Reset() { m.d.Reset() }

// KindFor resolves a (partial) resource to its kind.
func (m *resettingMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return retry(m, func() (schema.GroupVersionKind, error) { return m.d.KindFor(r) })
}

// KindsFor resolves a (partial) resource to its kinds in priority order.
func (m *resettingMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return retry(m, func() ([]schema.GroupVersionKind, error) { return m.d.KindsFor(r) })
}

// ResourceFor resolves a partial resource to a fully qualified one.
func (m *resettingMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return retry(m, func() (schema.GroupVersionResource, error) { return m.d.ResourceFor(r) })
}

// ResourcesFor resolves a partial resource to fully qualified ones.
func (m *resettingMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return retry(m, func() ([]schema.GroupVersionResource, error) { return m.d.ResourcesFor(r) })
}

// RESTMapping returns the mapping of a group/kind in the preferred or given versions.
func (m *resettingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return retry(m, func() (*meta.RESTMapping, error) { return m.d.RESTMapping(gk, versions...) })
}

// RESTMappings returns all mappings of a group/kind in the given versions.
func (m *resettingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return retry(m, func() ([]*meta.RESTMapping, error) { return m.d.RESTMappings(gk, versions...) })
}

// ResourceSingularizer returns the singular name of a plural resource.
func (m *resettingMapper) ResourceSingularizer(resource string) (string, error) {
	return retry(m, func() (string, error) { return m.d.ResourceSingularizer(resource) })
}
