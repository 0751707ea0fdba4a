package clusterproxy_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	konnectivityclient "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"

	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	coreclusterproxy "github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/tunnel"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
)

func TestResolverConditionReasons(t *testing.T) {
	legal := func() *proxyv1alpha1.ManagedProxyServiceResolver {
		return &proxyv1alpha1.ManagedProxyServiceResolver{
			ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: 3},
			Spec: proxyv1alpha1.ManagedProxyServiceResolverSpec{
				ManagedClusterSelector: proxyv1alpha1.ManagedClusterSelector{Type: proxyv1alpha1.ManagedClusterSelectorTypeClusterSet,
					ManagedClusterSet: &proxyv1alpha1.ManagedClusterSet{Name: "dev"}},
				ServiceSelector: proxyv1alpha1.ServiceSelector{Type: proxyv1alpha1.ServiceSelectorTypeServiceRef,
					ServiceRef: &proxyv1alpha1.ServiceRef{Namespace: "ns", Name: "svc"}},
			},
		}
	}
	noRef := legal()
	noRef.Spec.ServiceSelector.ServiceRef = nil
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}
	deleting := set.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for name, tc := range map[string]struct {
		r       *proxyv1alpha1.ManagedProxyServiceResolver
		set     *clusterv1beta2.ManagedClusterSet
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		"available":    {legal(), set, metav1.ConditionTrue, proxyv1alpha1.ReasonManagedProxyServiceResolverAvaliable, "Service ns/svc"},
		"not legal":    {noRef, set, metav1.ConditionFalse, proxyv1alpha1.ReasonManagedProxyServiceResolverNotLegal, "spec.serviceSelector.serviceRef is required"},
		"no set":       {legal(), nil, metav1.ConditionFalse, proxyv1alpha1.ReasonManagedClusterSetNotExisted, "ManagedClusterSet dev (spec.managedClusterSelector.managedClusterSet.name) does not exist"},
		"set deleting": {legal(), deleting, metav1.ConditionFalse, proxyv1alpha1.ReasonManagedClusterSetDeleting, "ManagedClusterSet dev is being deleted"},
	} {
		c := clusterproxy.ResolverCondition(tc.r, tc.set)
		if c.Type != "ServiceResolverAvaliable" || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) || c.ObservedGeneration != 3 {
			t.Errorf("%s: condition %+v, want %s/%s with a message containing %q, observedGeneration 3", name, c, tc.status, tc.reason, tc.message)
		}
	}
}

// A ProxyService client reaches a resolved Service by its cluster-proxy-<hash> host: the
// server asks Options.ServiceHost which cluster exposes it; a host no one exposes is refused.
func TestFrontendRoutesServiceHosts(t *testing.T) {
	target := namedServer(t, "service")
	host := coreclusterproxy.ServiceHost("rs1", "ns", "svc")
	srv := startServer(t, clusterproxy.Options{ServiceHost: func(_ context.Context, h string) (string, bool, error) {
		return "rs1", h == host, nil
	}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = srv.ServeFrontend(ctx, l, grpc.Creds(insecure.NewCredentials())) }()
	runAgent(t, &tunnel.Agent{Name: "cluster rs1", Identifiers: url.Values{"host": {"rs1"}},
		Transport: transportTo(srv, tunnel.AuthInfo{Cluster: "rs1", User: "agent-rs1"}),
		Allow:     allowOnly("rs1", host+":8080", target.Listener.Addr().String())})
	eventually(t, 10*time.Second, "the agent of rs1 to connect", connected(srv, "rs1"))

	tun, err := konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tun.DialContext(ctx, "tcp", host+":8080")
	if err != nil {
		t.Fatalf("dialing the resolved Service's host through the konnectivity client: %v", err)
	}
	if got := httpGet(t, conn, "/resolved"); got != "service /resolved" {
		t.Fatalf("through the resolved host: got %q", got)
	}
	_ = conn.Close()

	other := coreclusterproxy.ServiceHost("rs1", "ns", "other")
	tun, err = konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tun.DialContext(ctx, "tcp", other+":8080"); err == nil || !strings.Contains(err.Error(), "no ManagedProxyServiceResolver exposes a Service there") {
		t.Fatalf("a host no resolver exposes: got %v, want a refusal saying so", err)
	}
}

func TestConfigCondition(t *testing.T) {
	c := clusterproxy.ConfigCondition(&proxyv1alpha1.ManagedProxyConfiguration{ObjectMeta: metav1.ObjectMeta{Generation: 2}})
	if c.Type != "ProxyServerDeployed" || c.Status != metav1.ConditionTrue || c.Reason != "SuccessfullyDeployed" || c.ObservedGeneration != 2 {
		t.Fatalf("condition %+v, want ProxyServerDeployed True/SuccessfullyDeployed, observedGeneration 2", c)
	}
}
