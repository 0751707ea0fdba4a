package registration

import (
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func TestSubjectMatchesOCM(t *testing.T) {
	id := Identity{ClusterName: "cluster1", AgentName: "abc12345"}
	sub := id.Subject()
	if sub.CommonName != "system:open-cluster-management:cluster1:abc12345" {
		t.Fatalf("CommonName = %q", sub.CommonName)
	}
	wantO := []string{"system:open-cluster-management:cluster1", "system:open-cluster-management:managed-clusters"}
	if !slices.Equal(sub.Organization, wantO) {
		t.Fatalf("Organization = %v, want %v", sub.Organization, wantO)
	}
	back, ok := IdentityFromCommonName(sub.CommonName)
	if !ok || back != id {
		t.Fatalf("IdentityFromCommonName(%q) = %v, %v", sub.CommonName, back, ok)
	}
	for _, bad := range []string{"cluster1:abc", "system:open-cluster-management:cluster1", "system:open-cluster-management::a", "system:open-cluster-management:c:a:b"} {
		if _, ok := IdentityFromCommonName(bad); ok {
			t.Errorf("IdentityFromCommonName(%q) accepted", bad)
		}
	}
}

func TestIdentityValidate(t *testing.T) {
	if err := (Identity{ClusterName: "cluster-1", AgentName: GenerateAgentName()}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Identity{ClusterName: GenerateClusterName(), AgentName: "a"}).Validate(); err != nil {
		t.Fatalf("generated cluster name invalid: %v", err)
	}
	for _, id := range []Identity{
		{ClusterName: "Cluster1", AgentName: "a"},
		{ClusterName: "c_1", AgentName: "a"},
		{ClusterName: strings.Repeat("a", 64), AgentName: "a"},
		{ClusterName: "c", AgentName: ""},
		{ClusterName: "c", AgentName: "a:b"},
	} {
		err := id.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) accepted", id)
			continue
		}
		if !strings.Contains(err.Error(), "name") {
			t.Errorf("Validate(%+v) error %q does not name the field", id, err)
		}
	}
}

func TestCertificateRequest(t *testing.T) {
	id := Identity{ClusterName: "cluster1", AgentName: "agent1"}
	key, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	req, err := NewCertificateRequest(id, key)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^cluster1-[a-z2-7]{16}$`).MatchString(req.Name) {
		t.Fatalf("CSR name %q is not <cluster>-<digest>", req.Name)
	}
	if errs := validation.IsDNS1123Subdomain(req.Name); len(errs) > 0 {
		t.Fatalf("CSR name %q invalid: %v", req.Name, errs)
	}

	// Same key and identity: same name, so a restarted agent finds its request.
	again, err := NewCertificateRequest(id, key)
	if err != nil {
		t.Fatal(err)
	}
	if again.Name != req.Name {
		t.Fatalf("same key gave names %q and %q", req.Name, again.Name)
	}
	// A new key or another agent name: another request.
	key2, _ := NewPrivateKey()
	other, _ := NewCertificateRequest(id, key2)
	if other.Name == req.Name {
		t.Fatal("different keys gave the same CSR name")
	}
	otherAgent, _ := NewCertificateRequest(Identity{ClusterName: "cluster1", AgentName: "agent2"}, key)
	if otherAgent.Name == req.Name {
		t.Fatal("different subjects gave the same CSR name")
	}

	block, _ := pem.Decode(req.CSRPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		t.Fatalf("CSR PEM block %v", block)
	}
	parsed, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := parsed.CheckSignature(); err != nil {
		t.Fatalf("CSR signature: %v", err)
	}
	if parsed.Subject.CommonName != id.CommonName() || !slices.Equal(parsed.Subject.Organization, id.Subject().Organization) {
		t.Fatalf("CSR subject %v", parsed.Subject)
	}

	obj := req.Object(id, 0)
	if obj.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		t.Errorf("signer %q", obj.Spec.SignerName)
	}
	wantUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	if !slices.Equal(obj.Spec.Usages, wantUsages) {
		t.Errorf("usages %v", obj.Spec.Usages)
	}
	if obj.Labels[clusterv1.ClusterNameLabelKey] != "cluster1" {
		t.Errorf("labels %v", obj.Labels)
	}
	if obj.Spec.ExpirationSeconds != nil {
		t.Errorf("expirationSeconds set without being asked: %d", *obj.Spec.ExpirationSeconds)
	}
	if got := req.Object(id, 3600).Spec.ExpirationSeconds; got == nil || *got != 3600 {
		t.Errorf("expirationSeconds = %v, want 3600", got)
	}
	if _, err := NewCertificateRequest(id, []byte("not a key")); err == nil || !strings.Contains(err.Error(), id.CommonName()) {
		t.Errorf("bad key error %v does not name the agent", err)
	}
}

func TestInspectCSR(t *testing.T) {
	cond := func(typ certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: "True", Reason: "R", Message: "M"}
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if s, _ := InspectCSR(csr); s != CSRPending {
		t.Errorf("no conditions: %v", s)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
	if s, _ := InspectCSR(csr); s != CSRPending {
		t.Errorf("approved, unsigned: %v", s)
	}
	csr.Status.Certificate = []byte("cert")
	if s, _ := InspectCSR(csr); s != CSRIssued {
		t.Errorf("approved, signed: %v", s)
	}
	for _, typ := range []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		csr := &certificatesv1.CertificateSigningRequest{}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(typ)}
		s, why := InspectCSR(csr)
		if s != CSRRejected || !strings.Contains(why, string(typ)) {
			t.Errorf("%s: %v %q", typ, s, why)
		}
	}
}
