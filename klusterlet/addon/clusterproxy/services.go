package clusterproxy

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/core/clusterproxy"
)

// exposedServices is the hub's list of the Services this cluster exposes (the ConfigMap
// clusterproxy.ServicesConfigMapName in the cluster's namespace, which the hub computes from
// the ManagedProxyServiceResolvers): the agent's identity reads that one object only.
type exposedServices struct {
	store    cache.Store
	informer cache.Controller
	managed  kubernetes.Interface
	key      string
}

func newExposedServices(hub, managed kubernetes.Interface, cluster string) *exposedServices {
	lw := cache.NewListWatchFromClient(hub.CoreV1().RESTClient(), "configmaps", cluster,
		fields.OneTermEqualSelector("metadata.name", clusterproxy.ServicesConfigMapName))
	// No handler to call: the store is all the agent reads (the informer needs one anyway).
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{}})
	return &exposedServices{store: store, informer: informer, managed: managed, key: cluster + "/" + clusterproxy.ServicesConfigMapName}
}

// run keeps the list current until ctx ends.
func (e *exposedServices) run(ctx context.Context) { e.informer.RunWithContext(ctx) }

// resolve is the agent's Resolver: host must be listed by the hub, and port a port of the
// Service, which is dialed at its cluster IP or, for an ExternalName Service, its external name.
func (e *exposedServices) resolve(ctx context.Context, host, port string) (string, bool, error) {
	var data map[string]string
	if o, ok, _ := e.store.GetByKey(e.key); ok {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			data = cm.Data
		}
	}
	ref, ok := clusterproxy.ExposedService(data, host)
	if !ok {
		return "", false, nil
	}
	svc, err := e.managed.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("Service %s (exposed by a ManagedProxyServiceResolver): %w", ref, err)
	}
	return serviceTarget(svc, port)
}

// serviceTarget is where the agent dials port of svc; not ok if svc has no such port.
func serviceTarget(svc *corev1.Service, port string) (string, bool, error) {
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", false, nil
	}
	// Only the ports the Service lists, ExternalName ones included (least privilege: a CNAME
	// would take any port).
	if !hasPort(svc, p) {
		return "", false, nil
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return net.JoinHostPort(svc.Spec.ExternalName, port), true, nil
	case svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return "", false, fmt.Errorf("Service %s/%s has no cluster IP to dial", svc.Namespace, svc.Name)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, port), true, nil
}

func hasPort(svc *corev1.Service, p int) bool {
	for _, sp := range svc.Spec.Ports {
		if int(sp.Port) == p {
			return true
		}
	}
	return false
}
