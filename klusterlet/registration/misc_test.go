package registration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func TestSumNodeResources(t *testing.T) {
	node := func(cpu, mem string, unschedulable bool) corev1.Node {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		n := corev1.Node{}
		n.Spec.Unschedulable = unschedulable
		n.Status.Capacity = rl
		n.Status.Allocatable = rl.DeepCopy()
		return n
	}
	capacity, allocatable := SumNodeResources([]corev1.Node{node("2", "4Gi", false), node("500m", "1Gi", false), node("4", "8Gi", true)})
	if q := capacity[clusterv1.ResourceCPU]; q.Cmp(resource.MustParse("6500m")) != 0 {
		t.Errorf("capacity cpu %s", q.String())
	}
	if q := capacity[clusterv1.ResourceMemory]; q.Cmp(resource.MustParse("13Gi")) != 0 {
		t.Errorf("capacity memory %s", q.String())
	}
	if q := allocatable[clusterv1.ResourceCPU]; q.Cmp(resource.MustParse("2500m")) != 0 {
		t.Errorf("allocatable cpu %s (unschedulable node must not count)", q.String())
	}
	if q := allocatable[clusterv1.ResourceMemory]; q.Cmp(resource.MustParse("5Gi")) != 0 {
		t.Errorf("allocatable memory %s", q.String())
	}
	c, a := SumNodeResources(nil)
	if len(c) != 0 || len(a) != 0 {
		t.Errorf("no nodes: %v %v", c, a)
	}
}

func TestHubKubeconfigRoundTrip(t *testing.T) {
	id := Identity{ClusterName: "c1", AgentName: "a1"}
	certPEM, keyPEM := selfSigned(t, id, time.Now(), time.Hour)
	creds, err := ParseCredentials(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ep := HubEndpoint{Server: "https://hub.example:6443", CAData: []byte("ca"), TLSServerName: "hub"}
	data, err := BuildHubKubeconfig(ep, creds)
	if err != nil {
		t.Fatal(err)
	}
	back, err := EndpointFromKubeconfig(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	if back.Server != ep.Server || string(back.CAData) != "ca" || back.TLSServerName != "hub" {
		t.Fatalf("endpoint round trip: %+v", back)
	}
	cfg, err := RESTConfigFromKubeconfig(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.CertData) != string(certPEM) || string(cfg.KeyData) != string(keyPEM) {
		t.Fatal("credentials not embedded in the hub kubeconfig")
	}
	if _, err := EndpointFromKubeconfig([]byte("apiVersion: v1\nkind: Config\ncurrent-context: x\n"), "secret ns/name"); err == nil {
		t.Fatal("kubeconfig without context accepted")
	} else if want := "secret ns/name"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
}
