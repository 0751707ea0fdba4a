package work

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// resettableMapper maps kinds to resources from the managed cluster's discovery, cached,
// and reads discovery again when a kind is unknown: a work may install a CRD and its custom
// resources together, and the kind appears once the CRD is established.
type resettableMapper struct {
	mu     sync.Mutex
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newMapper(dc discovery.DiscoveryInterface) *resettableMapper {
	return &resettableMapper{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (m *resettableMapper) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		m.mapper.Reset()
		mapping, err = m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return mapping, err
}
