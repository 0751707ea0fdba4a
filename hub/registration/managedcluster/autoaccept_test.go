package managedcluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func cluster(accepts bool, annotations map[string]string, conds ...metav1.Condition) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Annotations: annotations},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: accepts},
		Status:     clusterv1.ManagedClusterStatus{Conditions: conds},
	}
}

func hubAccepted(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: status, Reason: reason, Message: msg}
}

var byPlugin = map[string]string{AutoAcceptedOnAnnotation: "2025-01-01T00:00:00Z", AutoAcceptedByAnnotation: "csr-autoapprove"}

func TestAutoAcceptable(t *testing.T) {
	deleting := cluster(false, nil)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name    string
		mc      *clusterv1.ManagedCluster
		wantWhy string // empty: acceptable
	}{
		{"first join", cluster(false, nil), ""},
		{"accepted already", cluster(true, nil), "accepted already"},
		{"auto-accepted once, then denied", cluster(false, byPlugin,
			hubAccepted(metav1.ConditionFalse, clusterv1.ConditionReasonHubClusterAdminDenied, "")), AutoAcceptedOnAnnotation},
		{"accepted by the admin, then denied", cluster(false, nil,
			hubAccepted(metav1.ConditionFalse, clusterv1.ConditionReasonHubClusterAdminDenied, "")), "accepted before"},
		{"being deleted", deleting, "deleted"},
	} {
		ok, why := AutoAcceptable(tc.mc)
		if ok != (tc.wantWhy == "") || !strings.Contains(why, tc.wantWhy) {
			t.Errorf("%s: got %v %q, want acceptable=%v with %q", tc.name, ok, why, tc.wantWhy == "", tc.wantWhy)
		}
	}
}

func TestAcceptedCondition(t *testing.T) {
	const admin, auto = "Accepted by hub cluster admin", "CSRApproval plugin csr-autoapprove approved its first registration CSR"
	for _, tc := range []struct {
		name string
		mc   *clusterv1.ManagedCluster
		want string
	}{
		{"accepted by the admin", cluster(true, nil), admin},
		{"accepted automatically", cluster(true, byPlugin), auto},
		{"auto acceptance stays credited", cluster(true, byPlugin,
			hubAccepted(metav1.ConditionTrue, clusterv1.ConditionReasonHubClusterAdminAccepted, "Accepted automatically (ManagedClusterAutoApproval): "+auto)), auto},
		{"accepted again by the admin after a denial", cluster(true, byPlugin,
			hubAccepted(metav1.ConditionFalse, clusterv1.ConditionReasonHubClusterAdminDenied, "Denied by hub cluster admin")), admin},
		{"re-acceptance keeps the admin's message", cluster(true, byPlugin,
			hubAccepted(metav1.ConditionTrue, clusterv1.ConditionReasonHubClusterAdminAccepted, admin)), admin},
		{"auto acceptance after a failed first try", cluster(true, byPlugin,
			hubAccepted(metav1.ConditionFalse, "Error", "applying ClusterRole: boom")), auto},
	} {
		c := acceptedCondition(tc.mc)
		if c.Status != metav1.ConditionTrue || c.Reason != clusterv1.ConditionReasonHubClusterAdminAccepted || !strings.Contains(c.Message, tc.want) {
			t.Errorf("%s: got %+v, want True %s with %q", tc.name, c, clusterv1.ConditionReasonHubClusterAdminAccepted, tc.want)
		}
	}
}
