package clusterproxy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceTarget(t *testing.T) {
	svc := func(typ corev1.ServiceType, clusterIP, external string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}, Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: clusterIP, ExternalName: external, Ports: []corev1.ServicePort{{Port: 8080}},
		}}
	}
	for name, tc := range map[string]struct {
		svc    *corev1.Service
		port   string
		target string
		ok     bool
		err    bool
	}{
		"cluster IP":             {svc(corev1.ServiceTypeClusterIP, "10.0.0.7", ""), "8080", "10.0.0.7:8080", true, false},
		"external name":          {svc(corev1.ServiceTypeExternalName, "", "127.0.0.1"), "8080", "127.0.0.1:8080", true, false},
		"port not listed":        {svc(corev1.ServiceTypeClusterIP, "10.0.0.7", ""), "22", "", false, false},
		"external name, no port": {svc(corev1.ServiceTypeExternalName, "", "127.0.0.1"), "22", "", false, false},
		"not a number":           {svc(corev1.ServiceTypeClusterIP, "10.0.0.7", ""), "http", "", false, false},
		"headless":               {svc(corev1.ServiceTypeClusterIP, corev1.ClusterIPNone, ""), "8080", "", false, true},
	} {
		target, ok, err := serviceTarget(tc.svc, tc.port)
		if target != tc.target || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%s: serviceTarget = %q, %v, %v; want %q, %v, error %v", name, target, ok, err, tc.target, tc.ok, tc.err)
		}
	}
}
