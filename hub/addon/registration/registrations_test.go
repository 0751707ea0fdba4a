package registration

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
)

func TestRegistrations(t *testing.T) {
	user := "system:open-cluster-management:cluster:c1:addon:hello:agent:hello-agent"
	groups := []string{"system:open-cluster-management:cluster:c1:addon:hello", "system:open-cluster-management:addon:hello", "system:authenticated"}
	got := Registrations("c1", "hello", []addonv1alpha1.RegistrationSpec{
		{Type: addonv1alpha1.RegistrationTypeKubeClient, KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{}},
		{Type: addonv1alpha1.RegistrationTypeKubeClient}, // same signer again
		{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{SignerName: "example.com/a"}},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{SignerName: "example.com/b",
			Subject: &addonv1alpha1.Subject{User: "u", Groups: []string{"g"}, OrganizationUnits: []string{"ou"}}}},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner},
		{Type: "Token"},
	})
	want := []addonv1alpha1.RegistrationConfig{
		{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: user, Groups: groups}},
		{SignerName: "example.com/a", Subject: addonv1alpha1.Subject{User: user, Groups: groups}},
		{SignerName: "example.com/b", Subject: addonv1alpha1.Subject{User: "u", Groups: []string{"g"}, OrganizationUnits: []string{"ou"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Registrations:\n got %+v\nwant %+v", got, want)
	}
	if got := Registrations("c1", "hello", nil); got != nil {
		t.Errorf("no registrations: %+v", got)
	}
}

func TestDesiredBindings(t *testing.T) {
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "hello", UID: "u1"}}
	rbs, err := DesiredBindings(mca, []addonv1alpha1.HubPermissionConfig{
		{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "r1"}},
		{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "r2"}},
		{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
			Namespace: "shared", RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "writer"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rb := range rbs {
		names = append(names, rb.Namespace+"/"+rb.Name)
		if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "system:open-cluster-management:cluster:c1:addon:hello" || rb.Subjects[0].Kind != "Group" {
			t.Errorf("%s subjects %+v", rb.Name, rb.Subjects)
		}
		if owned := len(rb.OwnerReferences) == 1 && rb.OwnerReferences[0].UID == "u1"; owned != (rb.Namespace == "c1") {
			t.Errorf("%s owner references %+v", rb.Name, rb.OwnerReferences)
		}
	}
	want := []string{"c1/open-cluster-management:hello:clusterrole:agent", "c1/open-cluster-management:hello:clusterrole:r2:agent",
		"shared/open-cluster-management:hello:c1:role:agent"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if rbs[2].RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef apiGroup not defaulted: %+v", rbs[2].RoleRef)
	}
	for _, bad := range []addonv1alpha1.HubPermissionConfig{
		{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster},
		{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace},
		{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
			Namespace: "shared", RoleRef: rbacv1.RoleRef{Kind: "User", Name: "x"}}},
		{Type: "Everywhere"},
	} {
		if _, err := DesiredBindings(mca, []addonv1alpha1.HubPermissionConfig{bad}); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
