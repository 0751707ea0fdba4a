package clustergateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
)

func TestForwardedHeaderStripsTheHubUser(t *testing.T) {
	in := http.Header{}
	for _, k := range []string{"Authorization", "Proxy-Authorization", "Impersonate-User", "Impersonate-Group", "Impersonate-Extra-Scopes", "Impersonate-Uid",
		"X-Remote-User", "X-Remote-Group", "X-Remote-Extra-Scopes", "X-Remote-Uid"} {
		in.Add(k, "hub user")
	}
	in.Set("Accept", "application/json")
	in.Set("Content-Type", "application/merge-patch+json")
	in["x-remote-group"] = []string{"lowercase"} // not canonical: still stripped
	out := forwardedHeader(in)
	var keys []string
	for k := range out {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"Accept", "Content-Type"}; !slices.Equal(keys, want) {
		t.Errorf("forwarded headers %v, want %v", keys, want)
	}
}

func TestAdmitBoundsPerCluster(t *testing.T) {
	g := &Gateway{opts: Options{MaxInFlight: 2, MaxUpgrades: 1}, load: map[string]*clusterLoad{}}
	r1, err := g.admit("c1", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.admit("c1", false); err != nil {
		t.Fatal(err)
	}
	_, err = g.admit("c1", false)
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "cluster c1: too many requests in flight through the gateway (limit 2)") {
		t.Fatalf("third request: %v", err)
	}
	if _, err := g.admit("c2", false); err != nil {
		t.Errorf("another cluster is not bounded by c1's requests: %v", err)
	}
	up, err := g.admit("c1", true)
	if err != nil {
		t.Fatalf("upgrades have their own bound: %v", err)
	}
	if _, err := g.admit("c1", true); !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "upgraded connections") {
		t.Errorf("second upgrade: %v", err)
	}
	r1()
	up()
	if _, err := g.admit("c1", false); err != nil {
		t.Errorf("a released slot is free: %v", err)
	}
	if _, err := g.admit("c1", true); err != nil {
		t.Errorf("a released upgrade slot is free: %v", err)
	}
}

func TestCredentialMessages(t *testing.T) {
	g := &Gateway{opts: Options{SecretNamespace: "creds"}}
	secret := func(labels map[string]string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: labels}, Data: data}
	}
	proxyLabels := map[string]string{
		clustergatewayv1alpha1.LabelKeyClusterCredentialType: "ServiceAccountToken",
		clustergatewayv1alpha1.LabelKeyClusterEndpointType:   "ClusterProxy",
	}
	for _, tc := range []struct {
		s    *corev1.Secret
		want string
	}{
		{nil, "cluster c1: no credentials yet: Secret creds/c1 (from ManagedServiceAccount c1/cluster-gateway) not found"},
		{secret(map[string]string{clustergatewayv1alpha1.LabelKeyClusterCredentialType: "ServiceAccountToken"}, nil), `endpoint type "" is not served by this hub (only ClusterProxy)`},
		{secret(map[string]string{clustergatewayv1alpha1.LabelKeyClusterCredentialType: "X509Certificate", clustergatewayv1alpha1.LabelKeyClusterEndpointType: "ClusterProxy"}, nil), `credential type "X509Certificate" is not served`},
		{secret(proxyLabels, map[string][]byte{"ca.crt": []byte("x")}), "cluster c1: no credentials yet: Secret creds/c1 has no token or no ca.crt"},
	} {
		_, _, err := g.credential("c1", tc.s)
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want 503 %q", err, tc.want)
		}
	}
	token, ca, err := g.credential("c1", secret(proxyLabels, map[string][]byte{"token": []byte("t\n"), "ca": []byte("pem")}))
	if err != nil || token != "t" || string(ca) != "pem" {
		t.Errorf("credential: %q %q %v", token, ca, err)
	}
}

func TestTableOnlyWhenAsked(t *testing.T) {
	gws := []clustergatewayv1alpha1.ClusterGateway{{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}}
	for accept, want := range map[string]string{
		"application/json": "",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json":                                             "meta.k8s.io/v1",
		"application/json;as=Table;v=v1beta1;g=meta.k8s.io":                                                         "meta.k8s.io/v1beta1",
		"application/json;as=Table;v=v2;g=meta.k8s.io,application/json":                                             "",
		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io": "meta.k8s.io/v1",
	} {
		r := httptest.NewRequest(http.MethodGet, "/apis/cluster.core.oam.dev/v1alpha1/clustergateways", nil)
		r.Header.Set("Accept", accept)
		table, ok := tableOf(r, gws)
		switch {
		case want == "" && ok:
			t.Errorf("%s: a Table", accept)
		case want != "" && (!ok || table.APIVersion != want || len(table.Rows) != 1 || table.Rows[0].Object.Object == nil):
			t.Errorf("%s: %+v, want a %s Table with metadata", accept, table, want)
		}
	}
}
