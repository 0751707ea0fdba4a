package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	kjson "sigs.k8s.io/json"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
)

// decodeStrict decodes JSON as the API machinery does (case-sensitive, unknown fields are
// errors) and re-encodes it, which must give back the same document: the Go types carry
// cluster-gateway's JSON names.
func decodeStrict[T any](t *testing.T, doc string, obj *T) *T {
	t.Helper()
	strict, err := kjson.UnmarshalStrict([]byte(doc), obj)
	if err != nil || len(strict) > 0 {
		t.Fatalf("decoding %T: %v %v", obj, err, strict)
	}
	back, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Errorf("%T does not round-trip:\n in %s\nout %s", obj, doc, back)
	}
	return obj
}

// TestClusterGatewayWireShape decodes ClusterGateways as cluster-gateway serves them (an
// OCM cluster through the tunnel with a ServiceAccount token, and a fixed endpoint with a
// client certificate) and encodes them back unchanged.
func TestClusterGatewayWireShape(t *testing.T) {
	tunnel := decodeStrict(t, `{"apiVersion":"cluster.core.oam.dev/v1alpha1","kind":"ClusterGateway",
		"metadata":{"name":"managed1"},
		"spec":{"provider":"","access":{"endpoint":{"type":"ClusterProxy"},
			"credential":{"type":"ServiceAccountToken","serviceAccountToken":"eyJhbGciOi"}}},
		"status":{"healthy":true}}`, &clustergatewayv1alpha1.ClusterGateway{})
	if tunnel.Spec.Access.Endpoint.Type != clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy ||
		tunnel.Spec.Access.Credential.Type != clustergatewayv1alpha1.CredentialTypeServiceAccountToken ||
		tunnel.Spec.Access.Credential.ServiceAccountToken != "eyJhbGciOi" || !tunnel.Status.Healthy {
		t.Errorf("ClusterProxy gateway: %+v", tunnel)
	}

	fixed := decodeStrict(t, `{"apiVersion":"cluster.core.oam.dev/v1alpha1","kind":"ClusterGateway",
		"metadata":{"name":"edge"},
		"spec":{"provider":"kind","access":{
			"endpoint":{"type":"Const","const":{"address":"https://10.0.0.1:6443","caBundle":"Y2E=","insecure":false,"proxy-url":"http://proxy:3128"}},
			"credential":{"type":"X509Certificate","x509":{"certificate":"Y2VydA==","privateKey":"a2V5"}}}},
		"status":{"healthy":false,"healthyReason":"ConnectionTimeout"}}`, &clustergatewayv1alpha1.ClusterGateway{})
	c := fixed.Spec.Access.Endpoint.Const
	if c == nil || c.Address != "https://10.0.0.1:6443" || string(c.CABundle) != "ca" || c.Insecure == nil || *c.Insecure ||
		c.ProxyURL == nil || *c.ProxyURL != "http://proxy:3128" || string(fixed.Spec.Access.Credential.X509.PrivateKey) != "key" ||
		fixed.Status.HealthyReason != clustergatewayv1alpha1.HealthyReasonTypeConnectionTimeout {
		t.Errorf("Const gateway: %+v", fixed)
	}

	list := decodeStrict(t, `{"apiVersion":"cluster.core.oam.dev/v1alpha1","kind":"ClusterGatewayList","metadata":{},
		"items":[{"metadata":{"name":"a"},"spec":{"provider":"","access":{"endpoint":{"type":"ClusterProxy"}}},"status":{"healthy":false}}]}`,
		&clustergatewayv1alpha1.ClusterGatewayList{})
	if len(list.Items) != 1 || list.Items[0].Spec.Access.Credential != nil {
		t.Errorf("list: %+v", list)
	}

	opts := decodeStrict(t, `{"kind":"ClusterGatewayProxyOptions","apiVersion":"cluster.core.oam.dev/v1alpha1","path":"/healthz","impersonate":true}`,
		&clustergatewayv1alpha1.ClusterGatewayProxyOptions{})
	if opts.Path != "/healthz" || !opts.Impersonate {
		t.Errorf("proxy options: %+v", opts)
	}
}

// TestTable: kubectl get clustergateway shows cluster-gateway's columns; the seeds' row
// "managed1  ServiceAccountToken  ClusterProxy" has an empty provider, and a gateway
// without a credential shows <none>.
func TestTable(t *testing.T) {
	var names []string
	for _, c := range clustergatewayv1alpha1.TableColumns() {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Provider", "Credential-Type", "Endpoint-Type", "Healthy"}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	if c := clustergatewayv1alpha1.TableColumns()[0]; c.Format != "name" {
		t.Errorf("Name column format %q, want name", c.Format)
	}
	g := &clustergatewayv1alpha1.ClusterGateway{}
	g.Name = "managed1"
	g.Spec.Access.Endpoint = &clustergatewayv1alpha1.ClusterEndpoint{Type: clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy}
	g.Spec.Access.Credential = &clustergatewayv1alpha1.ClusterAccessCredential{Type: clustergatewayv1alpha1.CredentialTypeServiceAccountToken}
	g.Status.Healthy = true
	if got, want := clustergatewayv1alpha1.TableCells(g), []any{"managed1", "", "ServiceAccountToken", "ClusterProxy", "true"}; !slices.Equal(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}
	g.Spec.Access.Credential, g.Spec.Access.Endpoint, g.Status.Healthy = nil, nil, false
	if got, want := clustergatewayv1alpha1.TableCells(g), []any{"managed1", "", "<none>", "", "false"}; !slices.Equal(got, want) {
		t.Errorf("cells without credential or endpoint %v, want %v", got, want)
	}
}

// TestNames pins the wire names clients and the hub agree on.
func TestNames(t *testing.T) {
	if got := clustergatewayv1alpha1.ProxyPath("cluster1"); got != "/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster1/proxy" {
		t.Errorf("ProxyPath: %s", got)
	}
	gv := clustergatewayv1alpha1.GroupVersion
	if got := gv.Version + "." + gv.Group; got != clustergatewayv1alpha1.APIServiceName {
		t.Errorf("APIServiceName %s, want %s", clustergatewayv1alpha1.APIServiceName, got)
	}
	if got := clustergatewayv1alpha1.Resource(clustergatewayv1alpha1.ResourceClusterGateways).String(); got != "clustergateways.cluster.core.oam.dev" {
		t.Errorf("resource: %s", got)
	}
}

// TestNoCRD: ClusterGateway is served by an aggregated API, so controller-gen makes no CRD
// for its group.
func TestNoCRD(t *testing.T) {
	files, err := os.ReadDir(filepath.Join("..", "..", "..", "crds", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f.Name(), clustergatewayv1alpha1.GroupVersion.Group+"_") {
			t.Errorf("core/crds/bases/%s: the aggregated API must have no CRD (+kubebuilder:skip)", f.Name())
		}
	}
}
