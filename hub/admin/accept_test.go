package admin

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

func TestApprovable(t *testing.T) {
	tokenGroups := []string{"system:bootstrappers", "system:bootstrappers:managedcluster", "system:authenticated"}
	for _, tc := range []struct {
		user   string
		groups []string
		want   bool
	}{
		{"system:serviceaccount:open-cluster-management:agent-registration-bootstrap", []string{"system:serviceaccounts"}, true},
		{"system:serviceaccount:open-cluster-management:cluster-bootstrap", []string{"system:serviceaccounts"}, true},
		{"system:bootstrap:abc123", tokenGroups, true},
		{"system:bootstrap:abc123", []string{"system:bootstrappers"}, false},
		{"system:open-cluster-management:c1:agent", []string{"system:open-cluster-management:c1"}, true},
		{"system:open-cluster-management:c2:agent", []string{"system:open-cluster-management:c2"}, false},
		{"kubernetes-admin", []string{"system:masters"}, false},
	} {
		r := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Username: tc.user, Groups: tc.groups}}
		if got := Approvable(r, "c1"); got != tc.want {
			t.Errorf("Approvable(%s %v) = %v, want %v", tc.user, tc.groups, got, tc.want)
		}
	}
}
